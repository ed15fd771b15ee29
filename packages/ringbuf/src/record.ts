// Record header: one u32 word, a 5-bit tag in the low bits and the low 27 bits of the absolute timestamp above it
// (the layout of a CTF/LTTng compact event header on a little-endian stream), then a u32 payload length.
// Tags 0..29 are compact record types; 30 is padding; 31 is the extended form carrying a u32 type and a full u64
// timestamp. Records are 4-byte aligned.
//
//   compact:  [tag | ts27 << 5] [length]                          payload, pad to 4
//   extended: [31]              [type] [ts lo] [ts hi] [length]   payload, pad to 4
//   padding:  [30]              [length]                          skipped bytes, pad to 4
//
// A reader rebuilds a compact timestamp from the previous full one: ts = prev + ((low27 - prev) mod 2^27). The
// writer uses the compact form only when 0 <= ts - prev < 2^27 (134 ms), so the rebuild is exact.

export const TAG_BITS = 5;
export const TAG_MASK = 31;
export const TS_LOW_BITS = 27;
export const TS_LOW_MASK = 0x7ffffff;
export const TS_LOW_RANGE = 0x8000000;
/** Highest type that fits the compact header. */
export const MAX_COMPACT_TYPE = 29;
export const TAG_PADDING = 30;
export const TAG_EXTENDED = 31;
export const COMPACT_HEADER_SIZE = 8;
export const EXTENDED_HEADER_SIZE = 20;
/** Largest record type (u32). */
export const MAX_TYPE = 0xffffffff;

/** Bytes a record with `length` payload bytes occupies after its header. */
export function padded(length: number): number {
  return (length + 3) & ~3;
}
