/**
 * trace.dat from a raw-pages directory: its metadata files and `cpuN.raw` pages handed to trace-format's
 * `writeTraceDatPages`, which copies the pages verbatim (no decoding).
 */
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type TraceDatCpuPages, writeTraceDatPages } from '@evtrace/trace-format';
import { copyFileRange } from './copy-range.ts';
import { ioError, outputError } from './errors.ts';

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
 * A `cpuN.raw` file's whole pages: copied by the kernel where it can (copy_file_range), else read in 1 MiB chunks
 * (one buffer reused: each chunk is written before the next).
 */
function filePages(file: string, size: number, chunk: Buffer, out: string): TraceDatCpuPages {
  return {
    size,
    copyTo(fd) {
      const input = openSync(file, 'r');
      try {
        return copyFileRange(input, fd, size);
      } catch (error) {
        // A failed write (ENOSPC) is the output's; an input that ends early is the raw file's.
        throw Object.assign(error as Error, {
          path: (error as NodeJS.ErrnoException).code === 'ERR_SHORT_INPUT' ? file : out,
        });
      } finally {
        closeSync(input);
      }
    },
    *chunks() {
      const fd = openSync(file, 'r');
      try {
        for (let left = size; left > 0; ) {
          const n = readSync(fd, chunk, 0, Math.min(chunk.length, left), null);
          if (n === 0) break;
          yield chunk.subarray(0, n);
          left -= n;
        }
      } finally {
        closeSync(fd);
      }
    },
  };
}

/**
 * Writes `out` as trace.dat v6 from the raw-pages directory `dir`. Trailing partial pages (a writer killed
 * mid-page) are left out. Returns the bytes written.
 *
 * @throws TracefsError `ERR_TRACEFS_IO` or `_PERMISSION` naming a file that could not be read, `ERR_TRACEFS_OUTPUT`
 * when `out` could not be written.
 */
export function writeTraceDatFromRawDir(dir: string, out: string): number {
  const { pageSize, cpuFiles } = rawDirInfo(dir);
  const cpuCount = cpuFiles.size === 0 ? 1 : Math.max(...cpuFiles.keys()) + 1;
  const chunk = Buffer.allocUnsafe(Math.max(pageSize, 1 << 20));
  const cpus: TraceDatCpuPages[] = [];
  for (let cpu = 0; cpu < cpuCount; cpu++) {
    const file = cpuFiles.get(cpu);
    const size = file === undefined ? 0 : statSync(file).size;
    cpus.push(
      file === undefined ? { size: 0, chunks: () => [] } : filePages(file, size - (size % pageSize), chunk, out),
    );
  }
  const kallsymsFile = join(dir, 'kallsyms');
  const demo = readOptional(join(dir, 'DEMO')).trim();
  try {
    return writeTraceDatPages(out, {
      pageSize,
      headerPage: readFileSync(join(dir, 'events', 'header_page'), 'utf8'),
      headerEvent: readFileSync(join(dir, 'events', 'header_event'), 'utf8'),
      formats: formatsBySystem(join(dir, 'events')),
      // Bytes as recorded: ~5 MB of symbols are never decoded to text.
      kallsyms: existsSync(kallsymsFile) ? readFileSync(kallsymsFile) : '',
      cmdlines: readOptional(join(dir, 'saved_cmdlines')),
      clock: /\[(\w+)\]/.exec(readOptional(join(dir, 'trace_clock')))?.[1] ?? 'local',
      // A demo recording says so where trace-cmd shows the system it came from.
      ...(demo !== '' ? { uname: demo } : {}),
      cpus,
    });
  } catch (error) {
    const path = (error as NodeJS.ErrnoException)?.path;
    if (path === out) throw outputError(out, error);
    if (typeof path === 'string') throw ioError(path, error, 'cannot read');
    throw error;
  }
}
