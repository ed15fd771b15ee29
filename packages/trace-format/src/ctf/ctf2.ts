import { TraceFormatError } from '../errors.ts';
import type {
  ByteOrder,
  ClockClass,
  EventClass,
  FieldClass,
  IntegerBase,
  IntegerClass,
  StreamClass,
  StructClass,
  TraceClass,
} from '../model/types.ts';

/** CTF 2 field location origins and the CTF 1.8 scope each one is. */
const ORIGINS: Readonly<Record<string, string>> = {
  'packet-header': 'trace.packet.header',
  'packet-context': 'stream.packet.context',
  'event-record-header': 'stream.event.header',
  'event-record-common-context': 'stream.event.context',
  'event-record-specific-context': 'event.context',
  'event-record-payload': 'event.fields',
};

/** CTF 2 roles and the CTF 1.8 member names with the same meaning for the reader. */
const ROLES: Readonly<Record<string, string>> = {
  'packet-magic-number': 'magic',
  'data-stream-class-id': 'stream_id',
  'packet-total-length': 'packet_size',
  'packet-content-length': 'content_size',
  'packet-end-default-clock-timestamp': 'timestamp_end',
  'discarded-event-record-counter-snapshot': 'events_discarded',
  'packet-sequence-number': 'packet_seq_num',
  'event-record-class-id': 'id',
};

type Json = { readonly [key: string]: unknown };

/** True when metadata bytes are CTF 2 (JSON text sequence: fragments each preceded by RS, 0x1e). */
export function isCtf2Metadata(data: Uint8Array): boolean {
  let i = 0;
  while (i < data.length && (data[i] === 0x20 || data[i] === 0x0a || data[i] === 0x0d || data[i] === 0x09)) i++;
  return data[i] === 0x1e;
}

/**
 * Translates CTF 2 metadata (a JSON text sequence: preamble, trace class, clock classes, data stream classes, event
 * record classes) into the trace model, roles becoming `IntegerClass.role` and variable-length integers
 * `IntegerClass.varint`. Optional fields are not supported yet and are rejected with `ERR_TRACE_TSDL`.
 */
export function parseCtf2Metadata(text: string, file?: string): TraceClass {
  const fail = (message: string, offset?: number): never => {
    throw new TraceFormatError('ERR_TRACE_TSDL', `CTF 2 metadata: ${message}`, { file, offset });
  };
  const fragments: Json[] = [];
  let at = 0;
  for (const part of text.split('\x1e')) {
    if (part.trim() !== '') {
      let value: unknown;
      try {
        value = JSON.parse(part);
      } catch (error) {
        fail(`fragment is not JSON (${(error as Error).message})`, at);
      }
      if (value === null || typeof value !== 'object' || Array.isArray(value)) fail('fragment is not an object', at);
      fragments.push(value as Json);
    }
    at += part.length + 1;
  }
  if (fragments[0]?.type !== 'preamble' || fragments[0].version !== 2)
    fail('the first fragment must be a version 2 preamble', 0);

  const str = (o: Json, key: string): string | undefined => {
    const v = o[key];
    if (v !== undefined && typeof v !== 'string') fail(`${key} must be a string`);
    return v as string | undefined;
  };
  const int = (o: Json, key: string, fallback?: number): number => {
    const v = o[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) fail(`${key} must be a non-negative integer`);
    return v as number;
  };
  const alignment = (o: Json, key: string): number => {
    const a = int(o, key, 1);
    if (a < 1 || a > 1 << 20 || (a & (a - 1)) !== 0) fail(`${key} ${a} is not a power of two`);
    return a;
  };
  const location = (v: unknown): string => {
    // CTF 2.0 writes `{ origin, path }`; drafts wrote `[origin, ...path]`.
    const parts = Array.isArray(v)
      ? v
      : v && typeof v === 'object'
        ? [(v as Json).origin, ...((v as Json).path as unknown[])]
        : [];
    const scope = ORIGINS[String(parts[0])];
    if (!scope || parts.length < 2 || !parts.slice(1).every((p) => typeof p === 'string')) {
      fail(`unsupported field location ${JSON.stringify(v)}`);
    }
    return [scope, ...parts.slice(1)].join('.');
  };
  const ranges = (v: unknown): [number | bigint, number | bigint][] => {
    if (!Array.isArray(v)) fail('integer ranges must be an array');
    return (v as unknown[]).map((r) => {
      if (!Array.isArray(r) || r.length !== 2 || !r.every((x) => typeof x === 'number')) fail('bad integer range');
      const [low, high] = r as [number, number];
      return [low, high];
    });
  };

  // `field-class-alias` fragments name field classes that later ones use by name.
  const aliases = new Map<string, unknown>();
  let depth = 0;
  const fieldClass = (fc: unknown, clock: string | undefined): FieldClass => {
    if (typeof fc === 'string') {
      if (!aliases.has(fc)) fail(`unknown field class alias ${JSON.stringify(fc)}`);
      fc = aliases.get(fc);
    }
    if (fc === null || typeof fc !== 'object') fail('field class must be an object');
    if (++depth > 64) fail('field classes nested deeper than 64 levels');
    try {
      return translate(fc as Json, clock);
    } finally {
      depth--;
    }
  };
  const translate = (fc: Json, clock: string | undefined): FieldClass => {
    const type = str(fc, 'type');
    const order: ByteOrder = fc['byte-order'] === 'big-endian' ? 'be' : 'le';
    const roles = Array.isArray(fc.roles) ? (fc.roles as string[]) : [];
    const integer = (signed: boolean, fixed?: number): IntegerClass => {
      const size = fixed ?? int(fc, 'length');
      if (size < 1 || size > 64) fail(`integer length ${size} is outside 1..64`);
      const base = (fc['preferred-display-base'] ?? 10) as IntegerBase;
      const role = roles.map((r) => (r === 'default-clock-timestamp' ? 'timestamp' : ROLES[r])).find(Boolean) ?? '';
      return {
        kind: 'int',
        size,
        signed,
        align: alignment(fc, 'alignment'),
        byteOrder: order,
        base: [2, 8, 10, 16].includes(base) ? base : 10,
        encoding: 'none',
        mappedClock: role === 'timestamp' || role === 'timestamp_end' ? clock : undefined,
        role,
      };
    };
    const variable = (signed: boolean): IntegerClass => ({
      ...integer(signed, 64),
      align: 8,
      byteOrder: 'le',
      varint: true,
    });
    const u8 = (encoding: 'none' | 'utf8'): IntegerClass => ({
      kind: 'int',
      size: 8,
      signed: false,
      align: 8,
      byteOrder: 'le',
      base: 10,
      encoding,
      role: '',
    });
    switch (type) {
      case 'fixed-length-unsigned-integer':
      case 'fixed-length-bit-array':
      case 'fixed-length-boolean':
        return integer(false);
      case 'fixed-length-signed-integer':
        return integer(true);
      case 'variable-length-unsigned-integer':
      case 'variable-length-signed-integer':
        return variable(type === 'variable-length-signed-integer');
      case 'variable-length-unsigned-enumeration':
      case 'variable-length-signed-enumeration':
        return {
          kind: 'enum',
          container: variable(type === 'variable-length-signed-enumeration'),
          mappings: Object.entries((fc.mappings ?? {}) as Json).map(([label, r]) => ({ label, ranges: ranges(r) })),
        };
      case 'fixed-length-unsigned-enumeration':
      case 'fixed-length-signed-enumeration': {
        const mappings = fc.mappings;
        if (!mappings || typeof mappings !== 'object') fail('enumeration has no mappings');
        return {
          kind: 'enum',
          container: integer(type === 'fixed-length-signed-enumeration'),
          mappings: Object.entries(mappings as Json).map(([label, r]) => ({ label, ranges: ranges(r) })),
        };
      }
      case 'fixed-length-floating-point-number': {
        const size = int(fc, 'length');
        if (size !== 32 && size !== 64) fail(`floating point length ${size} (32 or 64 only)`);
        return {
          kind: 'float',
          expDig: size === 32 ? 8 : 11,
          mantDig: size === 32 ? 24 : 53,
          align: alignment(fc, 'alignment'),
          byteOrder: order,
        };
      }
      case 'null-terminated-string':
        return { kind: 'string', encoding: 'utf8' };
      case 'static-length-string':
        return { kind: 'array', element: u8('utf8'), length: int(fc, 'length') };
      case 'dynamic-length-string':
        return { kind: 'sequence', element: u8('utf8'), lengthRef: location(fc['length-field-location']) };
      case 'static-length-blob':
        return { kind: 'array', element: u8('none'), length: int(fc, 'length') };
      case 'dynamic-length-blob':
        return { kind: 'sequence', element: u8('none'), lengthRef: location(fc['length-field-location']) };
      case 'static-length-array':
        return { kind: 'array', element: fieldClass(fc['element-field-class'], clock), length: int(fc, 'length') };
      case 'dynamic-length-array':
        return {
          kind: 'sequence',
          element: fieldClass(fc['element-field-class'], clock),
          lengthRef: location(fc['length-field-location']),
        };
      case 'structure':
        return structure(fc, clock);
      case 'variant': {
        const options = fc.options;
        if (!Array.isArray(options)) fail('variant has no options');
        const list = options as Json[];
        return {
          kind: 'variant',
          tagRef: location(fc['selector-field-location']),
          options: list.map((o, i) => ({
            name: str(o, 'name') ?? `option${i}`,
            type: fieldClass(o['field-class'], clock),
          })),
          optionRanges: list.map((o) => ranges(o['selector-field-ranges'])),
        };
      }
    }
    return fail(`field class type ${JSON.stringify(type)} is not supported`);
  };
  const structure = (fc: unknown, clock: string | undefined): StructClass => {
    if (fc === undefined) return { kind: 'struct', minAlign: 1, members: [] };
    const o = (typeof fc === 'string' ? aliases.get(fc) : fc) as Json;
    if (o?.type !== 'structure') fail('scope field class must be a structure');
    const members = (o['member-classes'] ?? []) as Json[];
    if (!Array.isArray(members)) fail('member-classes must be an array');
    return {
      kind: 'struct',
      minAlign: alignment(o, 'minimum-alignment'),
      members: members.map((m) => {
        const name = str(m, 'name');
        if (name === undefined) fail('structure member without a name');
        return { name: name!, type: fieldClass(m['field-class'], clock) };
      }),
    };
  };

  let trace: Json | undefined;
  const clocks = new Map<string, ClockClass>();
  const streamFragments: Json[] = [];
  const eventFragments: Json[] = [];
  for (const f of fragments.slice(1)) {
    switch (f.type) {
      case 'trace-class':
        if (trace) fail('two trace classes');
        trace = f;
        break;
      case 'clock-class': {
        const name = str(f, 'name') ?? str(f, 'id');
        if (!name) fail('clock class without a name');
        const offset = (f['offset-from-origin'] ?? {}) as Json;
        const freq = int(f, 'frequency');
        if (freq === 0) fail('clock frequency must be positive');
        clocks.set(name!, {
          name: name!,
          description: str(f, 'description'),
          freq: BigInt(freq),
          precision: f.precision === undefined ? undefined : BigInt(int(f, 'precision')),
          offsetSeconds: BigInt(int(offset, 'seconds', 0)),
          offsetCycles: BigInt(int(offset, 'cycles', 0)),
          absolute: f.origin === 'unix-epoch',
        });
        break;
      }
      case 'data-stream-class':
        streamFragments.push(f);
        break;
      case 'field-class-alias': {
        const name = str(f, 'name');
        if (!name || f['field-class'] === undefined) fail('field class alias without a name or class');
        aliases.set(name!, f['field-class']);
        break;
      }
      case 'event-record-class':
        eventFragments.push(f);
        break;
      default:
        fail(`unknown fragment type ${JSON.stringify(f.type)}`);
    }
  }
  if (!trace) fail('no trace class');
  const streams = new Map<number, StreamClass>();
  for (const s of streamFragments) {
    const id = int(s, 'id', 0);
    if (streams.has(id)) fail(`duplicate data stream class ${id}`);
    const clock = str(s, 'default-clock-class-name') ?? str(s, 'default-clock-class-id');
    if (clock !== undefined && !clocks.has(clock)) fail(`unknown clock class ${clock}`);
    const scope = (key: string) => (s[key] === undefined ? undefined : structure(s[key], clock));
    streams.set(id, {
      id,
      packetContext: scope('packet-context-field-class'),
      eventHeader: scope('event-record-header-field-class'),
      eventContext: scope('event-record-common-context-field-class'),
      eventClasses: new Map<number, EventClass>(),
    });
  }
  for (const e of eventFragments) {
    const streamId = int(e, 'data-stream-class-id', 0);
    const stream = streams.get(streamId);
    if (!stream) fail(`event record class refers to unknown data stream class ${streamId}`);
    const id = int(e, 'id', 0);
    const events = stream!.eventClasses as Map<number, EventClass>;
    if (events.has(id)) fail(`duplicate event record class ${id} in data stream class ${streamId}`);
    events.set(id, {
      id,
      name: str(e, 'name') ?? `event_${id}`,
      streamId,
      payload: structure(e['payload-field-class'], undefined),
      context:
        e['specific-context-field-class'] === undefined
          ? undefined
          : structure(e['specific-context-field-class'], undefined),
    });
  }
  const uuid = Array.isArray(trace!.uuid)
    ? Buffer.from(trace!.uuid as number[])
        .toString('hex')
        .replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5')
    : undefined;
  const env = new Map<string, string | number | bigint>();
  for (const [k, v] of Object.entries((trace!.environment ?? {}) as Json)) {
    if (typeof v === 'string' || typeof v === 'number') env.set(k, v);
  }
  return {
    major: 2,
    minor: 0,
    uuid,
    byteOrder: 'le',
    packetHeader:
      trace!['packet-header-field-class'] === undefined
        ? undefined
        : structure(trace!['packet-header-field-class'], undefined),
    clocks,
    streams,
    env,
  };
}
