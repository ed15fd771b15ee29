/**
 * A small ELF reader: just enough to list the function symbols of `.symtab` and `.dynsym` (ELF64 and ELF32, either
 * byte order). Layouts from the System V gABI: the ELF header, section headers, `Elf64_Sym`/`Elf32_Sym`.
 */
import { BtsError } from './errors.ts';

/** One function symbol. `value` is its link-time address. */
export interface ElfSymbol {
  readonly name: string;
  readonly value: bigint;
  readonly size: bigint;
  /** `.symtab` or `.dynsym`. */
  readonly table: '.symtab' | '.dynsym';
  /** STB_LOCAL 0, STB_GLOBAL 1, STB_WEAK 2. */
  readonly bind: number;
}

/** What {@link readElfSymbols} found. */
export interface ElfSymbols {
  /** ET_EXEC 2 (fixed addresses) or ET_DYN 3 (PIE or shared object: add the load bias). */
  readonly type: number;
  readonly class: 32 | 64;
  readonly symbols: ElfSymbol[];
}

const SHT_SYMTAB = 2;
const SHT_DYNSYM = 11;
const STT_FUNC = 2;
const STT_GNU_IFUNC = 10;

/** Reads the function symbols (STT_FUNC, STT_GNU_IFUNC, defined, non-zero address) of an ELF image. */
export function readElfSymbols(bytes: Uint8Array, source = 'ELF'): ElfSymbols {
  const fail = (message: string, offset: number) => new BtsError('ERR_BTS_ELF', message, { file: source, offset });
  if (bytes.length < 52 || bytes[0] !== 0x7f || bytes[1] !== 0x45 || bytes[2] !== 0x4c || bytes[3] !== 0x46)
    throw fail('not an ELF file (no \\x7fELF magic)', 0);
  const cls = bytes[4];
  if (cls !== 1 && cls !== 2) throw fail(`unknown ELF class ${cls}`, 4);
  const is64 = cls === 2;
  const data = bytes[5];
  if (data !== 1 && data !== 2) throw fail(`unknown ELF data encoding ${data}`, 5);
  const le = data === 1;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (off: number, n: number, what: string) => {
    if (off < 0 || off + n > bytes.length)
      throw fail(`${what} at ${off} runs past the end (${bytes.length} bytes)`, off);
  };
  const u16 = (o: number) => view.getUint16(o, le);
  const u32 = (o: number) => view.getUint32(o, le);
  const addr = (o: number) => (is64 ? view.getBigUint64(o, le) : BigInt(view.getUint32(o, le)));
  const off = (o: number) => Number(addr(o));
  if (is64) need(0, 64, 'ELF header');
  const type = u16(16);
  const shoff = is64 ? off(40) : u32(32);
  const shentsize = u16(is64 ? 58 : 46);
  const shnum = u16(is64 ? 60 : 48);
  if (shoff === 0 || shnum === 0) return { type, class: is64 ? 64 : 32, symbols: [] };
  if (shentsize < (is64 ? 64 : 40)) throw fail(`section header size ${shentsize} too small`, is64 ? 58 : 46);
  need(shoff, shnum * shentsize, 'section header table');
  const section = (i: number) => {
    const o = shoff + i * shentsize;
    return is64
      ? { type: u32(o + 4), offset: off(o + 24), size: off(o + 32), link: u32(o + 40), entsize: off(o + 56), at: o }
      : { type: u32(o + 4), offset: u32(o + 16), size: u32(o + 20), link: u32(o + 24), entsize: u32(o + 36), at: o };
  };
  const symbols: ElfSymbol[] = [];
  const decoder = new TextDecoder();
  for (let s = 0; s < shnum; s++) {
    const sh = section(s);
    if (sh.type !== SHT_SYMTAB && sh.type !== SHT_DYNSYM) continue;
    const table = sh.type === SHT_SYMTAB ? '.symtab' : '.dynsym';
    const entsize = sh.entsize || (is64 ? 24 : 16);
    if (entsize < (is64 ? 24 : 16)) throw fail(`${table} entry size ${entsize} too small`, sh.at);
    need(sh.offset, sh.size, table);
    if (sh.link >= shnum) throw fail(`${table} links to section ${sh.link} of ${shnum}`, sh.at);
    const str = section(sh.link);
    need(str.offset, str.size, `${table} string table`);
    const strEnd = str.offset + str.size;
    for (let o = sh.offset + entsize; o + entsize <= sh.offset + sh.size; o += entsize) {
      const nameOff = u32(o);
      const info = bytes[o + (is64 ? 4 : 12)]!;
      const shndx = u16(o + (is64 ? 6 : 14));
      const value = is64 ? view.getBigUint64(o + 8, le) : BigInt(u32(o + 4));
      const size = is64 ? view.getBigUint64(o + 16, le) : BigInt(u32(o + 8));
      const kind = info & 0xf;
      if ((kind !== STT_FUNC && kind !== STT_GNU_IFUNC) || shndx === 0 || value === 0n) continue;
      const start = str.offset + nameOff;
      if (nameOff >= str.size) throw fail(`symbol name offset ${nameOff} beyond ${table}'s string table`, o);
      let end = start;
      while (end < strEnd && bytes[end] !== 0) end++;
      symbols.push({ name: decoder.decode(bytes.subarray(start, end)), value, size, table, bind: info >> 4 });
    }
  }
  return { type, class: is64 ? 64 : 32, symbols };
}
