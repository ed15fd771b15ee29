/**
 * The C declarations of ftrace `field:` lines, split into the parts decoders need. The kernel prints each field as
 * `TYPE NAME`, `TYPE NAME[N]`, `TYPE NAME[]` (data to the end of the record) or `__data_loc TYPE[] NAME` /
 * `__rel_loc TYPE[] NAME` (a 32-bit offset/length word pointing into the record's dynamic area).
 */

/** How a field's bytes are laid out in a record. */
export type FieldShape =
  | { readonly kind: 'scalar' }
  /** `TYPE NAME[N]`: N elements of size/N bytes each. */
  | { readonly kind: 'array'; readonly length: number }
  /** `TYPE NAME[]` with size 0: the elements fill the rest of the record. */
  | { readonly kind: 'tail' }
  /** `__data_loc TYPE[]` (offset from the record start) or `__rel_loc TYPE[]` (offset from the field's end). */
  | { readonly kind: 'dynamic'; readonly relative: boolean };

export interface ParsedDeclaration {
  readonly name: string;
  /** The type as written, with any array suffix: `char[16]`, `__data_loc char[]`, `const void *`. */
  readonly cType: string;
  /** The element's base type with qualifiers removed: `char`, `unsigned long`, `void *`. */
  readonly baseType: string;
  readonly pointer: boolean;
  readonly shape: FieldShape;
}

const DECLARATION = /^(.*?)\s*([A-Za-z_$][A-Za-z0-9_$]*)\s*(?:\[\s*([^\]]*?)\s*\])?$/;
const DYNAMIC = /^(__data_loc|__rel_loc)\s+(.*?)\s*\[\s*\]$/;
const QUALIFIERS = /\b(?:const|volatile|struct|enum|union|__user|__percpu)\s+/g;

/** Splits a declaration such as `__data_loc char[] name`; returns undefined when it has no name. */
export function parseDeclaration(text: string): ParsedDeclaration | undefined {
  const m = DECLARATION.exec(text.trim());
  if (m === null || m[1] === '') return undefined;
  const [, typePart, name, arrayLength] = m as unknown as [string, string, string, string | undefined];
  const dyn = DYNAMIC.exec(typePart);
  if (dyn !== null) {
    const elem = dyn[2]!;
    return {
      name,
      cType: `${dyn[1]} ${elem}[]`,
      baseType: normalizeType(elem),
      pointer: elem.includes('*'),
      shape: { kind: 'dynamic', relative: dyn[1] === '__rel_loc' },
    };
  }
  const pointer = typePart.includes('*');
  const base = normalizeType(typePart);
  if (arrayLength === undefined) {
    return { name, cType: typePart, baseType: base, pointer, shape: { kind: 'scalar' } };
  }
  const cType = `${typePart}[${arrayLength}]`;
  if (arrayLength === '') return { name, cType, baseType: base, pointer, shape: { kind: 'tail' } };
  // Lengths are normally decimal; anything else (a macro) is resolved from the field size by the caller.
  const length = /^\d+$/.test(arrayLength) ? Number(arrayLength) : -1;
  return { name, cType, baseType: base, pointer, shape: { kind: 'array', length } };
}

function normalizeType(t: string): string {
  return t
    .replace(QUALIFIERS, '')
    .replace(/\s*\*\s*/g, ' *')
    .replace(/\s+/g, ' ')
    .trim();
}

const SIZES: ReadonlyMap<string, number> = new Map([
  ...['char', 'signed char', 'unsigned char', 'u8', 's8', '__u8', '__s8', 'int8_t', 'uint8_t', 'bool', '_Bool'].map(
    (t) => [t, 1] as const,
  ),
  ...['short', 'unsigned short', 'u16', 's16', '__u16', '__s16', 'int16_t', 'uint16_t', 'umode_t'].map(
    (t) => [t, 2] as const,
  ),
  ...[
    'int',
    'unsigned int',
    'unsigned',
    'signed',
    'u32',
    's32',
    '__u32',
    '__s32',
    'int32_t',
    'uint32_t',
    'pid_t',
    'uid_t',
    'gid_t',
    'dev_t',
  ].map((t) => [t, 4] as const),
  ...[
    'long long',
    'unsigned long long',
    'u64',
    's64',
    '__u64',
    '__s64',
    'int64_t',
    'uint64_t',
    'loff_t',
    'sector_t',
  ].map((t) => [t, 8] as const),
]);

/**
 * Size in bytes of a base type when the format file does not say it (elements of `__data_loc`, `__rel_loc` and
 * tail arrays); undefined when unknown. `long`, `size_t` and pointers follow the recording machine's word size.
 */
export function sizeOfType(baseType: string, longSize: number): number | undefined {
  if (baseType.endsWith('*')) return longSize;
  const known = SIZES.get(baseType);
  if (known !== undefined) return known;
  if (/^(unsigned )?long( int)?$|^(s)?size_t$|^ptrdiff_t$/.test(baseType)) return longSize;
  return undefined;
}

/** True for the element types that form text: `char` and its signed variants (not `unsigned char`, `u8`). */
export function isCharType(baseType: string): boolean {
  return baseType === 'char' || baseType === 'signed char';
}
