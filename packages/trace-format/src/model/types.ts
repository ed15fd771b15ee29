/**
 * The event model shared by every format evtrace reads and writes. It follows CTF 1.8's field classes because CTF is
 * the most expressive of the formats (ftrace's format files, trace.dat and raw pages map onto it), with two additions
 * ftrace needs and CTF lacks: `__data_loc`/`__rel_loc` dynamic fields.
 *
 * Sizes and alignments are in bits, as in TSDL. Integers wider than 53 bits decode to `bigint`; narrower ones to
 * `number`.
 */

export type ByteOrder = 'le' | 'be';

/** Display base of an integer (TSDL `base`). */
export type IntegerBase = 2 | 8 | 10 | 16;

/** Text encoding of a string or of integer elements that form text (TSDL `encoding`). */
export type TextEncoding = 'none' | 'utf8' | 'ascii';

export interface IntegerClass {
  readonly kind: 'int';
  /** Width in bits, 1..64. */
  readonly size: number;
  readonly signed: boolean;
  /** Alignment in bits (1 for bit-fields, 8 for byte-aligned). */
  readonly align: number;
  readonly byteOrder: ByteOrder;
  readonly base: IntegerBase;
  readonly encoding: TextEncoding;
  /** Name of the clock class this integer's values are cycles of (TSDL `map = clock.NAME.value`). */
  readonly mappedClock?: string;
  /**
   * What the field means to a reader, when the format says so apart from its name (CTF 2 roles such as
   * `packet-content-length`, `default-clock-timestamp`, `event-record-class-id`). `''` means no role whatever the name;
   * absent means CTF 1.8 rules (the meaning follows from the name).
   */
  readonly role?: string;
  /**
   * True for a CTF 2 variable-length integer (unsigned or signed LEB128, byte-aligned): `size` is then 64, the widest
   * value it may hold, and values are bigints. Writers that cannot express it store a fixed 64-bit integer.
   */
  readonly varint?: boolean;
}

export interface FloatClass {
  readonly kind: 'float';
  /** Exponent digits (8 for binary32, 11 for binary64). */
  readonly expDig: number;
  /** Mantissa digits including the implicit bit (24 for binary32, 53 for binary64). */
  readonly mantDig: number;
  readonly align: number;
  readonly byteOrder: ByteOrder;
}

export interface EnumMapping {
  readonly label: string;
  /** Inclusive [low, high] ranges; values beyond 2^53 as bigint. */
  readonly ranges: readonly (readonly [number | bigint, number | bigint])[];
}

export interface EnumClass {
  readonly kind: 'enum';
  readonly container: IntegerClass;
  readonly mappings: readonly EnumMapping[];
}

export interface StringClass {
  readonly kind: 'string';
  readonly encoding: TextEncoding;
}

/** Fixed-length array (TSDL `type name[N]`). An array of 8-bit integers with an encoding is text. */
export interface ArrayClass {
  readonly kind: 'array';
  readonly element: FieldClass;
  readonly length: number;
}

/** Variable-length array whose length is another field, found by a TSDL path (e.g. `_msg_length` or `event.fields.len`). */
export interface SequenceClass {
  readonly kind: 'sequence';
  readonly element: FieldClass;
  readonly lengthRef: string;
}

export interface StructMember {
  readonly name: string;
  readonly type: FieldClass;
}

export interface StructClass {
  readonly kind: 'struct';
  readonly members: readonly StructMember[];
  /** Minimum alignment in bits (TSDL `align(N)` on the struct); the effective one is the max with the members'. */
  readonly minAlign: number;
}

export interface VariantClass {
  readonly kind: 'variant';
  /** TSDL path of the enum field that selects the option. */
  readonly tagRef: string;
  readonly options: readonly StructMember[];
  /**
   * Integer ranges of the selector that choose each option, parallel to `options` (CTF 2, where the selector may be a
   * plain integer). Absent: the option named like the selector's enumeration label is chosen (CTF 1.8).
   */
  readonly optionRanges?: readonly (readonly (readonly [number | bigint, number | bigint])[])[];
}

/**
 * ftrace dynamic field: a 32-bit word whose low 16 bits are an offset and high 16 bits a length. The offset is from
 * the start of the record's payload (`__data_loc`) or from the end of this field (`__rel_loc`).
 */
export interface DynamicClass {
  readonly kind: 'dynamic';
  readonly relative: boolean;
  /** The element: an 8-bit integer with encoding for `char[]` strings, or any integer class for arrays. */
  readonly element: FieldClass;
  /** True for `char[]` (decoded as a NUL-terminated string). */
  readonly isString: boolean;
}

export type FieldClass =
  | IntegerClass
  | FloatClass
  | EnumClass
  | StringClass
  | ArrayClass
  | SequenceClass
  | StructClass
  | VariantClass
  | DynamicClass;

/** A clock whose cycles timestamp events (TSDL `clock { ... }`). */
export interface ClockClass {
  readonly name: string;
  readonly uuid?: string;
  readonly description?: string;
  /** Cycles per second. */
  readonly freq: bigint;
  readonly precision?: bigint;
  /** Offset from the origin in seconds plus cycles. */
  readonly offsetSeconds: bigint;
  readonly offsetCycles: bigint;
  /** True when the origin is the Unix epoch. */
  readonly absolute: boolean;
}

export interface EventClass {
  /** Numeric id within its stream (ftrace event id, CTF event id). */
  readonly id: number;
  /** Fully qualified name, `system:event` for ftrace events, the CTF name otherwise. */
  readonly name: string;
  readonly streamId: number;
  /** Payload fields (CTF `event.fields`; ftrace fields after the `common_*` ones are included here too). */
  readonly payload: StructClass;
  /** CTF `event.context`. */
  readonly context?: StructClass;
  readonly logLevel?: number;
  readonly modelEmfUri?: string;
  /** ftrace `print fmt`, kept for display. */
  readonly printFormat?: string;
  /** ftrace's view of the fields, from the event's `format` file (filters need the C types). */
  readonly ftrace?: FtraceEventInfo;
}

/** One `field:` line of an ftrace `format` file. */
export interface FtraceFieldInfo {
  readonly name: string;
  /** The C declaration's type as written, e.g. `unsigned long`, `char[16]`, `__data_loc char[]`, `const char *`. */
  readonly cType: string;
  /** Byte offset and size in the record, as the format file states them. */
  readonly offset: number;
  readonly size: number;
  readonly signed: boolean;
  /** True for the `common_*` fields shared by every event. */
  readonly common: boolean;
}

export interface FtraceEventInfo {
  readonly system: string;
  readonly event: string;
  readonly fields: readonly FtraceFieldInfo[];
}

export interface StreamClass {
  readonly id: number;
  readonly packetContext?: StructClass;
  readonly eventHeader?: StructClass;
  readonly eventContext?: StructClass;
  readonly eventClasses: ReadonlyMap<number, EventClass>;
}

export interface TraceClass {
  readonly major: number;
  readonly minor: number;
  readonly uuid?: string;
  readonly byteOrder: ByteOrder;
  readonly packetHeader?: StructClass;
  readonly clocks: ReadonlyMap<string, ClockClass>;
  readonly streams: ReadonlyMap<number, StreamClass>;
  /** TSDL `env { ... }` entries. */
  readonly env: ReadonlyMap<string, string | number | bigint>;
}

/** A decoded field value. Integers wider than 53 bits are bigint; enums decode to their integer value. */
export type FieldValue =
  | number
  | bigint
  | string
  | boolean
  | null
  | readonly FieldValue[]
  | { readonly [name: string]: FieldValue };

/** One decoded event, as every reader yields it. */
export interface TraceEvent {
  /** Timestamp in nanoseconds from the clock's origin (the epoch when the clock is absolute). */
  readonly tsNs: bigint;
  /** CPU that recorded the event, when known. */
  readonly cpu: number | null;
  readonly eventClass: EventClass;
  readonly fields: { readonly [name: string]: FieldValue };
  /** Stream context, packet context and other per-event metadata a format carries, by scope name. */
  readonly scopes?: { readonly [scope: string]: { readonly [name: string]: FieldValue } };
}

/** Where a reader's events came from. */
export type TraceKind = 'ctf' | 'tracedat' | 'raw-pages';

/**
 * A test over one encoded ftrace record of a known event class: `view` holds it at `start` (where `common_type` is),
 * `length` bytes long, recorded on `cpu` at `tsNs` (the page's clock, before a file's offset option). True decodes
 * the record into an event; false skips it unread.
 */
export type RecordTest = (view: DataView, start: number, length: number, cpu: number, tsNs: bigint) => boolean;

/** Options of {@link TraceReader.events}. */
export interface EventReadOptions {
  /**
   * Called once per event class, when its first record is met: the test that decides which of the class's records
   * are decoded, or undefined to decode them all. A way to leave out what a filter rejects before paying for its
   * decoding. Readers of ftrace data (trace.dat, raw pages) apply it; others decode every event, so callers still
   * judge each event they get.
   */
  readonly select?: (eventClass: EventClass) => RecordTest | undefined;
}

/**
 * What every trace reader offers, whatever the format: the event classes it knows and its events in timestamp order
 * (merged across CPUs and streams). Problems that do not stop reading (a skipped corrupt packet in lenient mode,
 * discarded events) are reported through `warnings` as they are met.
 */
export interface TraceReader {
  readonly kind: TraceKind;
  readonly eventClasses: readonly EventClass[];
  events(options?: EventReadOptions): Iterable<TraceEvent>;
  readonly warnings: readonly string[];
}
