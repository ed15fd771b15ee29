/**
 * trace.dat version 6 written from a raw-pages directory with the recorded pages copied verbatim (no decoding):
 * the kernel's own header_page, header_event and format files, kallsyms, saved cmdlines and the trace clock go in
 * front, then each CPU's pages, page-aligned. Layout per trace-cmd.dat.v6(5); `trace-cmd report` and KernelShark
 * read it.
 */
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { ioError } from './errors.ts';

const MAGIC = Buffer.from([0x17, 0x08, 0x44, ...Buffer.from('tracing')]);
const OPTION_DONE = 0;
const OPTION_TRACECLOCK = 4;
const OPTION_UNAME = 5;
const OPTION_CPUCOUNT = 8;

/** Facts of a raw-pages directory the trace.dat writer needs. */
export interface RawDirInfo {
  readonly pageSize: number;
  /** `cpuN.raw` files by CPU number. */
  readonly cpuFiles: ReadonlyMap<number, string>;
}

/** Lists the `cpuN.raw` files and the sub-buffer size of a raw-pages directory. */
export function rawDirInfo(dir: string): RawDirInfo {
  const cpuFiles = new Map<number, string>();
  for (const name of readdirSync(dir)) {
    const m = /^cpu(\d+)\.raw$/.exec(name);
    if (m !== null) cpuFiles.set(Number(m[1]), join(dir, name));
  }
  const kb = Number(readFileSync(join(dir, 'buffer_subbuf_size_kb'), 'utf8').trim());
  return { pageSize: kb * 1024, cpuFiles };
}

class Parts {
  readonly list: Buffer[] = [];
  length = 0;
  put(b: Buffer): void {
    this.list.push(b);
    this.length += b.length;
  }
  str(s: string): void {
    this.put(Buffer.from(s, 'utf8'));
  }
  int(bytes: 2 | 4 | 8, v: number): void {
    const b = Buffer.alloc(bytes);
    if (bytes === 2) b.writeUInt16LE(v);
    else if (bytes === 4) b.writeUInt32LE(v);
    else b.writeBigUInt64LE(BigInt(v));
    this.put(b);
  }
  /** A length-prefixed text block. */
  text(lenBytes: 4 | 8, s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.int(lenBytes, b.length);
    this.put(b);
  }
}

const readOptional = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : '');

/** Every `events/SYSTEM/EVENT/format` text of a raw-pages directory, grouped by system. */
function formatsBySystem(eventsDir: string): [string, string[]][] {
  const out: [string, string[]][] = [];
  for (const system of readdirSync(eventsDir, { withFileTypes: true })) {
    if (!system.isDirectory()) continue;
    const texts: string[] = [];
    for (const event of readdirSync(join(eventsDir, system.name)).sort()) {
      const file = join(eventsDir, system.name, event, 'format');
      if (existsSync(file)) texts.push(readFileSync(file, 'utf8'));
    }
    if (texts.length > 0) out.push([system.name, texts]);
  }
  return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/**
 * Writes `out` as trace.dat v6 from the raw-pages directory `dir`. Trailing partial pages (a writer killed
 * mid-page) are left out. Returns the bytes written.
 *
 * @throws TracefsError `ERR_TRACEFS_OUTPUT`-class I/O errors naming the file.
 */
export function writeTraceDatFromRawDir(dir: string, out: string): number {
  const { pageSize, cpuFiles } = rawDirInfo(dir);
  const cpuCount = cpuFiles.size === 0 ? 1 : Math.max(...cpuFiles.keys()) + 1;
  const sizes: number[] = [];
  for (let cpu = 0; cpu < cpuCount; cpu++) {
    const file = cpuFiles.get(cpu);
    const size = file === undefined ? 0 : statSync(file).size;
    sizes.push(size - (size % pageSize));
  }
  const h = new Parts();
  h.put(MAGIC);
  h.str('6\0');
  h.put(Buffer.from([0, 8]));
  h.int(4, pageSize);
  h.str('header_page\0');
  h.text(8, readFileSync(join(dir, 'events', 'header_page'), 'utf8'));
  h.str('header_event\0');
  h.text(8, readFileSync(join(dir, 'events', 'header_event'), 'utf8'));
  h.int(4, 0); // ftrace (function tracer) formats
  const systems = formatsBySystem(join(dir, 'events'));
  h.int(4, systems.length);
  for (const [system, texts] of systems) {
    h.str(`${system}\0`);
    h.int(4, texts.length);
    for (const t of texts) h.text(8, t);
  }
  h.text(4, readOptional(join(dir, 'kallsyms')));
  h.int(4, 0); // printk formats
  h.text(8, readOptional(join(dir, 'saved_cmdlines')));
  h.int(4, cpuCount);
  h.str('options  \0');
  const clock = /\[(\w+)\]/.exec(readOptional(join(dir, 'trace_clock')))?.[1] ?? 'local';
  const clockData = Buffer.from(`[${clock}]\0`);
  h.int(2, OPTION_TRACECLOCK);
  h.int(4, clockData.length);
  h.put(clockData);
  // A demo recording says so where trace-cmd shows the system it came from.
  const demo = readOptional(join(dir, 'DEMO')).trim();
  if (demo !== '') {
    const text = Buffer.from(`${demo}\0`);
    h.int(2, OPTION_UNAME);
    h.int(4, text.length);
    h.put(text);
  }
  h.int(2, OPTION_CPUCOUNT);
  h.int(4, 4);
  h.int(4, cpuCount);
  h.int(2, OPTION_DONE);
  h.str('flyrecord\0');
  let at = Math.ceil((h.length + 16 * cpuCount) / pageSize) * pageSize;
  for (const size of sizes) {
    h.int(8, size === 0 ? 0 : at);
    h.int(8, size);
    at += size;
  }
  let fd: number;
  try {
    fd = openSync(out, 'w');
  } catch (error) {
    throw ioError(out, error, 'cannot write the output');
  }
  let written = 0;
  const put = (b: Buffer, length = b.length) => {
    let done = 0;
    while (done < length) done += writeSync(fd, b, done, length - done);
    written += length;
  };
  try {
    const head = Buffer.concat(h.list, h.length);
    put(head);
    put(Buffer.alloc(Math.ceil(written / pageSize) * pageSize - written));
    const chunk = Buffer.allocUnsafe(Math.max(pageSize, 1 << 20));
    for (let cpu = 0; cpu < cpuCount; cpu++) {
      const file = cpuFiles.get(cpu);
      if (file === undefined || sizes[cpu] === 0) continue;
      const inFd = openSync(file, 'r');
      try {
        let left = sizes[cpu]!;
        while (left > 0) {
          const n = readSync(inFd, chunk, 0, Math.min(chunk.length, left), null);
          if (n === 0) break;
          put(chunk, n);
          left -= n;
        }
      } finally {
        closeSync(inFd);
      }
    }
  } finally {
    closeSync(fd);
  }
  return written;
}
