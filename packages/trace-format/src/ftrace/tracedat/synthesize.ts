/** ftrace formats for event classes that have none (CTF's), so that trace.dat can hold their events. */
import type { EventClass, FieldClass, FtraceFieldInfo } from '../../model/types.ts';
import { FTRACE_COMMON_FIELDS } from '../common-fields.ts';

const C_INTS: Record<number, string> = { 8: 'char', 16: 'short', 32: 'int', 64: 'long long' };

/** A plain C type for an integer class (libtraceevent prints `s32` and friends as unsigned). */
function cInt(bits: number, signed: boolean): string {
  const base = C_INTS[bits]!;
  return signed ? (bits === 8 ? 'signed char' : base) : `unsigned ${base}`;
}

function intBits(size: number): number {
  return size <= 8 ? 8 : size <= 16 ? 16 : size <= 32 ? 32 : 64;
}

/**
 * Builds ftrace field info for a class that has none (from CTF): integers and enums keep their width (rounded up to
 * a byte multiple), fixed arrays of integers become C arrays, strings and sequences `__data_loc` arrays. Nested
 * structures, variants and floats have no ftrace form and are left out of the record.
 */
export function synthesizeFtraceClass(ec: EventClass, id: number): EventClass {
  const fields: FtraceFieldInfo[] = [...FTRACE_COMMON_FIELDS];
  let offset = 8;
  const add = (name: string, cType: string, size: number, signed: boolean, align: number) => {
    offset = Math.ceil(offset / align) * align;
    fields.push({ name, cType, offset, size, signed, common: false });
    offset += size;
  };
  const intOf = (t: FieldClass): { bits: number; signed: boolean } | undefined =>
    t.kind === 'int'
      ? { bits: intBits(t.size), signed: t.signed }
      : t.kind === 'enum'
        ? { bits: intBits(t.container.size), signed: t.container.signed }
        : undefined;
  for (const m of ec.payload.members) {
    const t = m.type;
    const scalar = intOf(t);
    if (scalar !== undefined) {
      add(m.name, cInt(scalar.bits, scalar.signed), scalar.bits / 8, scalar.signed, scalar.bits / 8);
    } else if (t.kind === 'string' || t.kind === 'dynamic') {
      add(m.name, '__data_loc char[]', 4, false, 4);
    } else if ((t.kind === 'array' || t.kind === 'sequence') && intOf(t.element) !== undefined) {
      const e = intOf(t.element)!;
      const isText = t.element.kind === 'int' && t.element.encoding !== 'none' && e.bits === 8;
      const base = isText ? 'char' : cInt(e.bits, e.signed);
      if (t.kind === 'array') add(`${m.name}`, `${base}[${t.length}]`, (t.length * e.bits) / 8, e.signed, e.bits / 8);
      else add(m.name, `__data_loc ${base}[]`, 4, false, 4);
    }
  }
  const colon = ec.name.indexOf(':');
  const system = colon > 0 ? ec.name.slice(0, colon) : 'ctf';
  const event = (colon > 0 ? ec.name.slice(colon + 1) : ec.name).replace(/[^\w]/g, '_');
  const own = fields.filter((f) => !f.common);
  const conversion = (f: FtraceFieldInfo) =>
    /char\[|__data_loc char/.test(f.cType) ? '%s' : `%${f.size === 8 ? 'll' : ''}${f.signed ? 'd' : 'u'}`;
  const argument = (f: FtraceFieldInfo) => (/__data_loc/.test(f.cType) ? `__get_str(${f.name})` : `REC->${f.name}`);
  const printFormat = `"${own.map((f) => `${f.name}=${conversion(f)}`).join(' ')}"${own.map((f) => `, ${argument(f)}`).join('')}`;
  return {
    id,
    name: `${system}:${event}`,
    streamId: 0,
    payload: ec.payload,
    printFormat,
    ftrace: { system, event, fields },
  };
}
