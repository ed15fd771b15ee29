/**
 * The files of a session: its metadata directory (a raw-pages directory without pages), trace-shots, and the
 * rotating output written while recording. Pages are appended whole; a failed write cuts the file back to its last
 * whole page, so every `.part` directory stays readable (`evtrace cat`) up to its last complete page, also after
 * kill -9, and is turned into trace.dat or CTF when it is complete.
 */
import {
  closeSync,
  copyFileSync,
  existsSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { OutputFormat } from '@evtrace/agent-protocol';
import { type EventFilterPlan, type FinalizeResult, finalizeRecording } from '@evtrace/tracefs';
import { AgentError, asAgentError } from './errors.ts';

/** Copies a metadata directory (everything but `cpuN.raw`) into `to`, which exists. */
export function copyMetadata(from: string, to: string): void {
  for (const e of readdirSync(from, { withFileTypes: true, recursive: true })) {
    const rel = join(e.parentPath, e.name).slice(from.length + 1);
    if (/^cpu\d+\.raw$/.test(rel)) continue;
    if (e.isDirectory()) mkdirSync(join(to, rel), { recursive: true });
    else copyFileSync(join(from, rel), join(to, rel));
  }
}

/** Appends bytes whole or not at all (a failure cuts the file back to a multiple of `pageSize`). */
export function appendWhole(fd: number, file: string, bytes: Uint8Array, pageSize: number): void {
  try {
    for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
  } catch (error) {
    try {
      const size = fstatSync(fd).size;
      ftruncateSync(fd, size - (size % pageSize));
    } catch {}
    const errno = (error as NodeJS.ErrnoException).code ?? 'EIO';
    throw new AgentError(
      'ERR_OUTPUT',
      `cannot write ${file}: ${errno}${errno === 'ENOSPC' ? ' (no space left on device)' : ''}`,
      {
        cause: error,
      },
    );
  }
}

/** Pages gathered per CPU before one write. */
const BATCH_PAGES = 64;

/** The extension of a finished file. */
export const extension = (format: OutputFormat) => (format === 'ctf' ? '.ctf' : '.dat');

/** The first `PREFIX-NNNN` with no file of any format (nor `.part`) in `dir`: one sequence for every format. */
export function nextName(dir: string, prefix: string, from = 1): { seq: number; path: string } {
  for (let seq = from; ; seq++) {
    const path = join(dir, `${prefix}-${String(seq).padStart(4, '0')}`);
    if (!['.dat', '.ctf', '.part'].some((ext) => existsSync(path + ext))) return { seq, path };
  }
}

/** Writes a raw-pages directory of `pages` (per CPU) beside `out` and turns it into `out`. */
export function writeTraceShot(
  metaDir: string,
  cpus: readonly number[],
  pages: readonly Uint8Array[],
  out: string,
  format: OutputFormat,
  filters: ReadonlyMap<string, EventFilterPlan>,
  recorded: number,
): FinalizeResult {
  const raw = `${out}.part`;
  try {
    mkdirSync(raw);
    copyMetadata(metaDir, raw);
    cpus.forEach((cpu, i) => {
      const fd = openSync(join(raw, `cpu${cpu}.raw`), 'w');
      try {
        appendWhole(fd, join(raw, `cpu${cpu}.raw`), pages[i]!, 4096);
      } finally {
        closeSync(fd);
      }
    });
    return finalizeRecording(raw, out, format, { userSpaceFilters: filters, recorded });
  } catch (error) {
    // A trace-shot is all or nothing: a partial one would read as a shorter past.
    rmSync(raw, { recursive: true, force: true });
    throw asAgentError(error);
  }
}

/** Options of {@link RotatingOutput}. */
export interface RotatingOutputOptions {
  readonly dir: string;
  readonly format: OutputFormat;
  readonly prefix: string;
  readonly metaDir: string;
  readonly cpus: readonly number[];
  readonly pageSize: number;
  readonly rotate?: { readonly bytes?: number; readonly seconds?: number };
  readonly filters: ReadonlyMap<string, EventFilterPlan>;
  /** Called when a `.part` begins or is finished (the agent records it in the state file). */
  readonly onChange?: () => void;
}

/** The files written while a session records: a `.part` raw-pages directory, finished at rotation and stop. */
export class RotatingOutput {
  /** Finished files. */
  readonly files: string[] = [];
  readonly #o: RotatingOutputOptions;
  #seq = 0;
  #part: { path: string; dir: string; fds: number[]; bytes: number; started: number } | undefined;
  /** Pages appended and not written yet, per CPU index. */
  readonly #batches: ({ buf: Buffer; used: number } | undefined)[] = [];

  constructor(options: RotatingOutputOptions) {
    this.#o = options;
    try {
      mkdirSync(options.dir, { recursive: true });
    } catch (error) {
      throw asAgentError(error);
    }
  }

  /** The `.part` directory being written, if any. */
  get part(): string | undefined {
    return this.#part?.dir;
  }

  /**
   * Adds a page of CPU `index`. Pages are gathered per CPU and written by {@link flush} (or when a batch is full):
   * one write per batch rather than per page, which matters when several sessions write the same pages.
   */
  append(index: number, page: Uint8Array): void {
    const part = this.#part ?? this.#begin();
    let batch = this.#batches[index];
    if (batch === undefined) {
      batch = { buf: Buffer.allocUnsafe(Math.max(page.length, this.#o.pageSize) * BATCH_PAGES), used: 0 };
      this.#batches[index] = batch;
    }
    if (batch.used + page.length > batch.buf.length) this.#write(part, index);
    batch.buf.set(page, batch.used);
    batch.used += page.length;
    part.bytes += page.length;
    const r = this.#o.rotate;
    if (r?.bytes !== undefined && part.bytes >= r.bytes) this.rotate();
  }

  /** Writes every gathered page. */
  flush(): void {
    const part = this.#part;
    if (part === undefined) return;
    for (let i = 0; i < this.#batches.length; i++) this.#write(part, i);
  }

  #write(part: { dir: string; fds: number[] }, index: number): void {
    const batch = this.#batches[index];
    if (batch === undefined || batch.used === 0) return;
    const used = batch.used;
    batch.used = 0;
    const cpu = this.#o.cpus[index]!;
    appendWhole(part.fds[index]!, join(part.dir, `cpu${cpu}.raw`), batch.buf.subarray(0, used), this.#o.pageSize);
  }

  /** Rotates by time (called from the agent's loop). */
  tick(now: number): void {
    const r = this.#o.rotate;
    if (r?.seconds !== undefined && this.#part !== undefined && now - this.#part.started >= r.seconds * 1000)
      this.rotate();
  }

  #begin() {
    const { seq, path } = nextName(this.#o.dir, this.#o.prefix, this.#seq + 1);
    this.#seq = seq;
    const dir = `${path}.part`;
    try {
      mkdirSync(dir);
      copyMetadata(this.#o.metaDir, dir);
      const fds = this.#o.cpus.map((cpu) => openSync(join(dir, `cpu${cpu}.raw`), 'w'));
      this.#part = { path, dir, fds, bytes: 0, started: Date.now() };
      this.#o.onChange?.();
      return this.#part;
    } catch (error) {
      throw asAgentError(error);
    }
  }

  /** Finishes the current file; the next page starts another. */
  rotate(): string | undefined {
    const part = this.#part;
    if (part === undefined) return undefined;
    try {
      this.flush();
    } finally {
      this.#part = undefined;
      for (const fd of part.fds) closeSync(fd);
    }
    const out = part.path + extension(this.#o.format);
    try {
      finalizeRecording(part.dir, out, this.#o.format, { userSpaceFilters: this.#o.filters });
    } catch (error) {
      throw asAgentError(error);
    }
    this.files.push(out);
    this.#o.onChange?.();
    return out;
  }

  /** Closes without finishing (a failure): the `.part` directory stays readable. */
  abandon(): void {
    for (const b of this.#batches) if (b !== undefined) b.used = 0;
    for (const fd of this.#part?.fds ?? []) {
      try {
        closeSync(fd);
      } catch {}
    }
    this.#part = undefined;
  }
}
