/** The pieces both trace.dat versions share: the file's start, the header and format blocks, the options. */
import { OPTION, TRACEDAT_MAGIC } from './ids.ts';
import { type Out, type Part, u32 } from './parts.ts';

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

/** Options every version stores: the clock, the uname text when known, the CPU count. */
export function commonOptions(o: Out, meta: Meta, cpuCount: number): void {
  option(o, OPTION.traceClock, Buffer.from(`[${meta.clock}]\0`));
  if (meta.uname !== undefined) option(o, OPTION.uname, Buffer.from(`${meta.uname}\0`));
  option(o, OPTION.cpuCount, u32(cpuCount));
}
