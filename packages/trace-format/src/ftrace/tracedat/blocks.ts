/** The pieces both trace.dat versions share: the file's start, the header and format blocks, the options. */
import type { Cursor } from './cursor.ts';
import { OPTION, TRACEDAT_MAGIC } from './ids.ts';
import { Out, type Part, u32 } from './parts.ts';

/** Bytes of a C `long` in the files written (x86-64's). */
export const LONG = 8;

/** What a file says besides its pages: the kernel's texts and the options. */
export interface Meta {
  headerPage: string;
  headerEvent: string;
  ftrace: string[];
  systems: [string, string[]][];
  kallsyms: Part;
  cmdlines: string;
  printk: string;
  clock: string;
  uname?: string;
}

/** The file's start: magic, version, byte order (little-endian) and size of a long, page size. */
export function start(out: Out, version: number, pageSize: number): void {
  out.put(TRACEDAT_MAGIC);
  out.str(`${version}\0`);
  out.put(Buffer.from([0, LONG]));
  out.u32(pageSize);
}

/** The kernel's `header_page` and `header_event` texts. */
export function headersBlock(o: Out, meta: Meta): void {
  o.str('header_page\0');
  o.u64(Buffer.byteLength(meta.headerPage));
  o.str(meta.headerPage);
  o.str('header_event\0');
  o.u64(Buffer.byteLength(meta.headerEvent));
  o.str(meta.headerEvent);
}

/** The format files of the `ftrace` system. */
export function ftraceBlock(o: Out, meta: Meta): void {
  o.u32(meta.ftrace.length);
  for (const t of meta.ftrace) {
    o.u64(Buffer.byteLength(t));
    o.str(t);
  }
}

/** The format files of every other system, by system. */
export function eventsBlock(o: Out, meta: Meta): void {
  o.u32(meta.systems.length);
  for (const [system, formats] of meta.systems) {
    o.str(`${system}\0`);
    o.u32(formats.length);
    for (const t of formats) {
      o.u64(Buffer.byteLength(t));
      o.str(t);
    }
  }
}

/** One option: its id, its size, its data. */
export function option(o: Out, id: number, data: Buffer): void {
  o.u16(id);
  o.u32(data.length);
  o.put(data);
}

/** A v7 buffer option: where its flyrecord section is, its name (`` for the top one), clock, page size and CPUs' data. */
export interface BufferOption {
  readonly at: number;
  readonly name: string;
  readonly clock: string;
  readonly pageSize: number;
  readonly cpus: readonly { readonly cpu: number; readonly offset: number; readonly size: number }[];
}

/** Appends a {@link BufferOption} to the options. */
export function bufferOption(o: Out, b: BufferOption): void {
  const data = new Out();
  data.u64(b.at);
  data.str(`${b.name}\0${b.clock}\0`);
  data.u32(b.pageSize);
  data.u32(b.cpus.length);
  for (const c of b.cpus) {
    data.u32(c.cpu);
    data.u64(c.offset);
    data.u64(c.size);
  }
  option(o, OPTION.buffer, data.bytes());
}

/** Reads a {@link BufferOption} from its option's `size` bytes of data. */
export function readBufferOption(d: Cursor, size: number): BufferOption {
  const at = d.u64('buffer section offset');
  const name = d.cstring('buffer name');
  const clock = d.cstring('buffer clock');
  const pageSize = d.u32('buffer page size');
  const n = d.u32('buffer CPU count');
  if (n > size / 20) d.fail(`${n} CPUs cannot fit`, d.pos - 4);
  const cpus = [];
  for (let i = 0; i < n; i++)
    cpus.push({ cpu: d.u32('CPU id'), offset: d.u64('CPU data offset'), size: d.u64('CPU data size') });
  return { at, name, clock, pageSize, cpus };
}

/** Options every version stores: the clock, the uname text when known, the CPU count. */
export function commonOptions(o: Out, meta: Meta, cpuCount: number): void {
  option(o, OPTION.traceClock, Buffer.from(`[${meta.clock}]\0`));
  if (meta.uname !== undefined) option(o, OPTION.uname, Buffer.from(`${meta.uname}\0`));
  option(o, OPTION.cpuCount, u32(cpuCount));
}
