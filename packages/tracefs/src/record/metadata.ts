/**
 * The instance's metadata in the raw-pages directory: copied before tracing starts (header_page, header_event,
 * formats, sub-buffer size, clock, saved_cmdlines, printk_formats, kallsyms), so a recorder killed at any moment
 * leaves a directory readable up to its last complete page; the saved_cmdlines replaced by the final table at the end.
 */
import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { ioError, type TracefsError } from '../errors.ts';
import type { EventName } from '../instance/catalog.ts';
import { output } from './raw-dir.ts';

/** Reads a tracefs file whole (they report size 0, so they are read, never copied with copy_file_range). */
function readTracefs(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw ioError(file, error, 'cannot read');
  }
}

/**
 * Copies a file whose size is unknown (procfs, tracefs) as bytes, gathering reads into `chunk` before each write:
 * procfs hands out /proc/kallsyms a page per read, and writing each page out cost a write call per page, a large
 * share of a short recording's system time. A failed read is an `ERR_TRACEFS_IO`, a failed write an
 * `ERR_TRACEFS_OUTPUT`.
 */
function copyUnsized(from: string, to: string, chunk: Buffer): void {
  let input: number;
  try {
    input = openSync(from, 'r');
  } catch (error) {
    throw ioError(from, error, 'cannot read');
  }
  try {
    const out = output(to, () => openSync(to, 'w'));
    const flush = (n: number) =>
      output(to, () => {
        for (let done = 0; done < n; ) done += writeSync(out, chunk, done, n - done);
      });
    try {
      let filled = 0;
      for (;;) {
        let n: number;
        try {
          n = readSync(input, chunk, filled, chunk.length - filled, null);
        } catch (error) {
          throw ioError(from, error, 'cannot read');
        }
        filled += n;
        if (n === 0 || filled === chunk.length) {
          flush(filled);
          if (n === 0) break;
          filled = 0;
        }
      }
    } finally {
      closeSync(out);
    }
  } finally {
    closeSync(input);
  }
}

/** Copies the instance's metadata into the raw-pages directory. */
export function writeMetadata(tracefs: string, inst: string, dir: string, selected: readonly EventName[]): void {
  const put = (file: string, data: Buffer) => output(file, () => writeFileSync(file, data));
  output(join(dir, 'events'), () => mkdirSync(join(dir, 'events')));
  for (const f of ['header_page', 'header_event']) put(join(dir, 'events', f), readTracefs(join(inst, 'events', f)));
  for (const e of selected) {
    const to = join(dir, 'events', e.system, e.event);
    output(to, () => mkdirSync(to, { recursive: true }));
    put(join(to, 'format'), readTracefs(join(inst, 'events', e.system, e.event, 'format')));
  }
  put(join(dir, 'buffer_subbuf_size_kb'), readTracefs(join(inst, 'buffer_subbuf_size_kb')));
  put(join(dir, 'trace_clock'), readTracefs(join(inst, 'trace_clock')));
  // Not larger: each new page of the buffer costs a page fault on first use, more than fewer writes save
  // (figures: the README's benchmark section).
  const chunk = Buffer.allocUnsafe(256 << 10);
  copyUnsized(join(tracefs, 'saved_cmdlines'), join(dir, 'saved_cmdlines'), chunk);
  // The kernel's printk strings, which some fields point into (rcu_utilization's): readers print them as trace-cmd.
  copyUnsized(join(tracefs, 'printk_formats'), join(dir, 'printk_formats'), chunk);
  try {
    copyUnsized('/proc/kallsyms', join(dir, 'kallsyms'), chunk);
  } catch (error) {
    rmSync(join(dir, 'kallsyms'), { force: true });
    // Symbols are optional when they cannot be read (readers print addresses); a full disk fails the recording
    // now, before tracing starts, rather than after its first pages.
    if ((error as TracefsError).code === 'ERR_TRACEFS_OUTPUT') throw error;
  }
}

/**
 * Replaces the saved_cmdlines copied at the start with the final table (commands seen while recording) through a
 * temporary file, so a full disk keeps the first table instead of truncating it.
 */
export function updateCmdlines(tracefs: string, dir: string): void {
  const file = join(dir, 'saved_cmdlines');
  const next = `${file}.next`;
  try {
    output(file, () => writeFileSync(next, readTracefs(join(tracefs, 'saved_cmdlines'))));
    renameSync(next, file);
  } catch (error) {
    rmSync(next, { force: true });
    throw error;
  }
}
