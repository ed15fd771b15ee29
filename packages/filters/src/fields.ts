import type { EventClass, FieldClass, FtraceFieldInfo } from '@evtrace/trace-format';

/**
 * How the kernel treats a field in a filter (`filter_type` in kernel/trace): derived from the C type of the format
 * file, plus the pseudo fields every event has.
 */
export type FieldKind =
  /** Integer (or anything else the kernel compares as an integer of the field's size). */
  | 'number'
  /** `char name[N]`: a fixed array. */
  | 'static-string'
  /** `__data_loc char[]`: offset/length word pointing into the record. */
  | 'dynamic-string'
  /** `__rel_loc char[]`: as dynamic, offset relative to the end of the field. */
  | 'rel-string'
  /** `char *` / `const char *`: a pointer the kernel dereferences when the event fires. */
  | 'pointer-string'
  /** `__data_loc cpumask_t`. */
  | 'cpumask'
  /** `CPU`, `cpu`, `common_cpu`: the CPU the event fired on. */
  | 'cpu'
  /** `COMM`, `comm`: the current task's name when the event fired. */
  | 'comm'
  /** `stacktrace`, `STACKTRACE`: accepted as a number of size 0, never matches. */
  | 'stacktrace';

export interface FilterField {
  readonly name: string;
  readonly kind: FieldKind;
  /** Byte offset in the record (0 for pseudo fields, -1 when the class has no fixed layout, as in CTF). */
  readonly offset: number;
  readonly size: number;
  readonly signed: boolean;
  /** Where the kernel found it: the event's own fields first, then the pseudo fields, then `common_*`. */
  readonly origin: 'event' | 'pseudo' | 'common';
  /** The format file's C type, for messages. */
  readonly cType: string;
}

const PSEUDO: readonly FilterField[] = [
  { name: 'CPU', kind: 'cpu', offset: 0, size: 0, signed: true, origin: 'pseudo', cType: 'int' },
  { name: 'cpu', kind: 'cpu', offset: 0, size: 0, signed: true, origin: 'pseudo', cType: 'int' },
  { name: 'common_cpu', kind: 'cpu', offset: 0, size: 0, signed: true, origin: 'pseudo', cType: 'int' },
  { name: 'COMM', kind: 'comm', offset: 0, size: 0, signed: false, origin: 'pseudo', cType: 'char *' },
  { name: 'comm', kind: 'comm', offset: 0, size: 0, signed: false, origin: 'pseudo', cType: 'char *' },
  { name: 'stacktrace', kind: 'stacktrace', offset: 0, size: 0, signed: false, origin: 'pseudo', cType: 'char *' },
  { name: 'STACKTRACE', kind: 'stacktrace', offset: 0, size: 0, signed: false, origin: 'pseudo', cType: 'char *' },
];

/** filter_assign_type(): the kernel's classification of a C type. */
export function kindOfCType(cType: string): FieldKind {
  const t = cType.replace(/\s+/g, ' ').trim();
  if (t.includes('__data_loc')) {
    if (t.includes('char')) return 'dynamic-string';
    if (t.includes('cpumask_t')) return 'cpumask';
  }
  if (t.includes('__rel_loc') && t.includes('char')) return 'rel-string';
  if (t.includes('[') && t.includes('char')) return 'static-string';
  const compact = t.replace(/ ?\* ?/g, ' *').trim();
  if (compact === 'char *' || compact === 'const char *') return 'pointer-string';
  return 'number';
}

function fromFormat(f: FtraceFieldInfo): FilterField {
  return {
    name: f.name,
    kind: kindOfCType(f.cType),
    offset: f.offset,
    size: f.size,
    signed: f.signed,
    origin: f.common ? 'common' : 'event',
    cType: f.cType,
  };
}

/**
 * Fields of an event class without ftrace information (a CTF class): integers and enums compare as numbers of their
 * width; strings and text arrays as NUL-terminated strings. Other members (arrays, structures) are not filterable.
 */
function fromPayload(eventClass: EventClass): FilterField[] {
  const out: FilterField[] = [];
  const textual = (t: FieldClass) =>
    t.kind === 'string' ||
    ((t.kind === 'array' || t.kind === 'sequence') &&
      t.element.kind === 'int' &&
      t.element.size === 8 &&
      t.element.encoding !== 'none');
  for (const m of eventClass.payload.members) {
    const t = m.type;
    const int = t.kind === 'int' ? t : t.kind === 'enum' ? t.container : undefined;
    if (int !== undefined && int.size % 8 === 0 && int.size <= 64) {
      out.push({
        name: m.name,
        kind: 'number',
        offset: -1,
        size: int.size / 8,
        signed: int.signed,
        origin: 'event',
        cType: `${int.signed ? '' : 'u'}int${int.size}`,
      });
    } else if (textual(t)) {
      out.push({
        name: m.name,
        kind: 'dynamic-string',
        offset: -1,
        size: 0,
        signed: false,
        origin: 'event',
        cType: 'string',
      });
    }
  }
  return out;
}

/** The fields a filter on `eventClass` can name, in the kernel's lookup order. */
export class FieldTable {
  readonly event: string;
  readonly #byName = new Map<string, FilterField>();
  readonly #own: FilterField[];

  constructor(eventClass: EventClass) {
    this.event = eventClass.name;
    const fields = eventClass.ftrace?.fields ?? [];
    this.#own = eventClass.ftrace ? fields.map(fromFormat) : fromPayload(eventClass);
    for (const f of this.#own) if (f.origin === 'event' && !this.#byName.has(f.name)) this.#byName.set(f.name, f);
    for (const f of PSEUDO) if (!this.#byName.has(f.name)) this.#byName.set(f.name, f);
    for (const f of this.#own) if (f.origin === 'common' && !this.#byName.has(f.name)) this.#byName.set(f.name, f);
  }

  get(name: string): FilterField | undefined {
    return this.#byName.get(name);
  }

  /** Field names for "did you mean" messages. */
  names(): string[] {
    return [...this.#byName.keys()];
  }

  /** The field name closest to `name` (at most two edits away), for "did you mean". */
  closest(name: string): string | undefined {
    let best: string | undefined;
    let bestDistance = 3;
    for (const candidate of this.#byName.keys()) {
      const d = editDistance(name.toLowerCase(), candidate.toLowerCase());
      if (d < bestDistance) {
        best = candidate;
        bestDistance = d;
      }
    }
    return best;
  }
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row.push(Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    }
    prev = row;
  }
  return prev[b.length]!;
}
