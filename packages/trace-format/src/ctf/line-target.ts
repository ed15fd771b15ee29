/**
 * What a stream file's reader and the line writers (lines.ts, copy.ts) know of each other: the reader decodes an
 * event's header, asks the plan for its class's writer and hands it the packet's state; neither imports the other.
 */
import type { ByteOut } from '../codec/byte-out.ts';
import type { DecodeContext } from '../codec/decoder.ts';
import type { CyclesToNs } from './clock.ts';
import type { CtfEvent } from './event.ts';
import type { CompiledEvent, CompiledStream, Struct } from './stream-class.ts';

/** The state of the packet an event is read from, as a line writer sees it. */
export interface LinePacket {
  /** The clock, in cycles, of the event last read; 0 for streams without timestamps. */
  readonly cycles: number | bigint;
  /** The clock conversion of the event's stream. */
  readonly toNs: CyclesToNs;
  /** The packet's context, as decoded (a new object per packet), or undefined. */
  readonly packetContext: Struct | undefined;
  /** The packet's CPU (its `cpu_id`), or null. */
  readonly packetCpu: number | null;
}

/** What starts a line (its time), written once the event's header is read; `undo` takes it back to the last `mark`. */
export interface LineStart {
  write(out: ByteOut, cycles: number | bigint, toNs: CyclesToNs): void;
  mark(): void;
  undo(): void;
}

/**
 * Writes one event's line as its scopes are decoded, after its start (`head`); false, having written nothing, when a
 * filter leaves the event out.
 */
export type EventLineWriter = (
  s: DecodeContext,
  out: ByteOut,
  packet: LinePacket,
  head: LineStart | undefined,
) => boolean;

/** The writers of one kind of line, per event class (undefined: the event is decoded whole instead). */
export interface LineWriters {
  writer(stream: CompiledStream, event: CompiledEvent): EventLineWriter | undefined;
}

/** What a stream file's reader writes lines through: the buffer, the writers, and what starts each line. */
export interface LineTarget {
  out: ByteOut;
  readonly plan: LineWriters;
  /** Writes each line's start (without it, the lines are the events' bodies). */
  readonly head?: LineStart;
  /**
   * The writers put each line where it goes and leave `out` empty (the CTF records of one stream): the reader then
   * goes on to the next event itself, and `nextLine` returns only events without a writer, or the end.
   */
  readonly placed?: boolean;
}

/** A stream file's reader as the line writers drive it. */
export interface LineSource extends LinePacket {
  /**
   * The next event: `true` when `lines` wrote its line (never for `placed` lines), the event when its class has no
   * writer, undefined at the end.
   */
  nextLine(lines: LineTarget): CtfEvent | true | undefined;
  /** Called with a packet's bytes once all its events were read (see the reader). */
  onPacket: ((bytes: Uint8Array) => void) | undefined;
}
