/**
 * The files of a session: its metadata directory (a raw-pages directory without pages), trace-shots, and the
 * rotating output written while recording. Pages are appended whole; a failed write cuts the file back to its last
 * whole page, so every `.part` directory stays readable (`evtrace cat`) up to its last complete page, also after
 * kill -9, and is turned into trace.dat or CTF when it is complete.
 *
 * Everything under a directory a client named is created with the client's rights ({@link asCaller}), new files
 * with `O_EXCL|O_NOFOLLOW`, and a finished file is built in a private directory and renamed into place without
 * replacing anything: a symbolic link or file planted at its name makes the request fail, it is never followed.
 */
import {
  closeSync,
  constants,
  fstatSync,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { OutputFormat } from '@evtrace/agent-protocol';
import { type EventFilterPlan, type FinalizeOptions, type FinalizeResult, finalizeRecording } from '@evtrace/tracefs';
import { asCaller, type Caller } from './caller.ts';
import { AgentError, asAgentError } from './errors.ts';
import { libcErrno, libcFunction } from './libc.ts';

/** A new file, never an existing one nor through a symbolic link; its mode is 0666 less the umask. */
export function createFile(path: string): number {
  return openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o666);
}

/** A metadata directory's files (everything but `cpuN.raw`), read with the agent's rights: the state is its own. */
export type Metadata = readonly { readonly rel: string; readonly bytes?: Buffer }[];

export function readMetadata(from: string): Metadata {
  const entries: { rel: string; bytes?: Buffer }[] = [];
  for (const e of readdirSync(from, { withFileTypes: true, recursive: true })) {
    const rel = join(e.parentPath, e.name).slice(from.length + 1);
    if (/^cpu\d+\.raw$/.test(rel)) continue;
    if (e.isDirectory()) entries.push({ rel });
    else entries.push({ rel, bytes: readFileSync(join(from, rel)) });
  }
  // Parents first.
  return entries.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
}

/** Writes metadata read by {@link readMetadata} into `to`, which exists. */
export function writeMetadata(meta: Metadata, to: string): void {
  for (const { rel, bytes } of meta) {
    if (bytes === undefined) mkdirSync(join(to, rel), 0o777);
    else {
      const fd = createFile(join(to, rel));
      try {
        for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
      } finally {
        closeSync(fd);
      }
    }
  }
}

/** Fails unless the caller (the identity in force) may create files in `dir`, which exists. */
export function checkWritable(dir: string): void {
  rmdirSync(mkdtempSync(join(dir, '.evtrace-')));
}

type RenameAt2 = (olddirfd: number, oldpath: string, newdirfd: number, newpath: string, flags: number) => number;
let renameat2: RenameAt2 | undefined;
const AT_FDCWD = -100;
const RENAME_NOREPLACE = 1;
const EEXIST = 17;

/** Renames `from` to `to` only when nothing (not even a dangling symbolic link) is at `to` (renameat2, koffi). */
function renameNoReplace(from: string, to: string): void {
  renameat2 ??= libcFunction<RenameAt2>(
    'int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags)',
  );
  if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) === 0) return;
  const errno = libcErrno();
  const code = errno === EEXIST ? 'EEXIST' : `errno ${errno}`;
  throw Object.assign(new Error(`${code}: rename ${from} -> ${to}`), { code, syscall: 'rename', path: to });
}

/**
 * Turns the raw-pages directory `raw` into `out`, built inside a fresh private directory beside `out` and renamed
 * into place only if `out` does not exist. When it does (something was planted there), the finished file is kept
 * in that directory and the error says where.
 */
export function finishInto(
  raw: string,
  out: string,
  format: OutputFormat,
  options: FinalizeOptions = {},
): FinalizeResult {
  const tmp = mkdtempSync(join(dirname(out), `.${basename(out)}.`));
  const built = join(tmp, basename(out));
  let result: FinalizeResult;
  try {
    result = finalizeRecording(raw, built, format, options);
  } catch (error) {
    rmSync(tmp, { recursive: true, force: true });
    throw asAgentError(error);
  }
  try {
    renameNoReplace(built, out);
  } catch (error) {
    let what = 'something';
    try {
      what = lstatSync(out).isSymbolicLink() ? 'a symbolic link' : 'a file';
    } catch {}
    throw new AgentError(
      'ERR_AGENT_OUTPUT',
      `cannot write ${out}: ${what} appeared at that name while recording (it is left alone); the recording is kept as ${built}`,
      { cause: error },
    );
  }
  rmSync(tmp, { recursive: true, force: true });
  return result;
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
      'ERR_AGENT_OUTPUT',
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
    // lstat: a dangling symbolic link takes a name too.
    if (!['.dat', '.ctf', '.part'].some((ext) => lstatSync(path + ext, { throwIfNoEntry: false }) !== undefined))
      return { seq, path };
  }
}

/** What {@link writeTraceShot} writes. */
export interface TraceShot {
  readonly metaDir: string;
  readonly cpus: readonly number[];
  readonly pages: readonly Uint8Array[];
  /** Where the trace-shot goes (created when missing) and the name of its files. */
  readonly dir: string;
  readonly prefix: string;
  readonly format: OutputFormat;
  readonly filters: ReadonlyMap<string, EventFilterPlan>;
  readonly recorded: number;
  /** Whose rights `dir` is written with. */
  readonly caller?: Caller;
}

/** Writes a raw-pages directory of the pages (per CPU) in `dir` and turns it into the next `PREFIX-NNNN` file. */
export function writeTraceShot(shot: TraceShot): FinalizeResult & { path: string } {
  const meta = readMetadata(shot.metaDir);
  return asCaller(shot.caller, () => {
    let raw: string | undefined;
    try {
      mkdirSync(shot.dir, { recursive: true });
      const { path } = nextName(shot.dir, shot.prefix);
      const out = path + extension(shot.format);
      // Only a directory made here is removed on failure: mkdir is exclusive.
      mkdirSync(`${out}.part`, 0o755);
      raw = `${out}.part`;
      writeMetadata(meta, raw);
      for (const [i, cpu] of shot.cpus.entries()) {
        const fd = createFile(join(raw, `cpu${cpu}.raw`));
        try {
          appendWhole(fd, join(raw, `cpu${cpu}.raw`), shot.pages[i]!, 4096);
        } finally {
          closeSync(fd);
        }
      }
      const result = finishInto(raw, out, shot.format, { userSpaceFilters: shot.filters, recorded: shot.recorded });
      return { ...result, path: out };
    } catch (error) {
      // A trace-shot is all or nothing: a partial one would read as a shorter past.
      if (raw !== undefined) rmSync(raw, { recursive: true, force: true });
      throw asAgentError(error);
    }
  });
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
  /** Whose rights `dir` and everything in it are written with. */
  readonly caller?: Caller;
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
      // Checked now, with the rights every later write has, rather than at the first page.
      asCaller(options.caller, () => {
        mkdirSync(options.dir, { recursive: true });
        checkWritable(options.dir);
      });
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
    try {
      const meta = readMetadata(this.#o.metaDir);
      this.#part = asCaller(this.#o.caller, () => {
        const { seq, path } = nextName(this.#o.dir, this.#o.prefix, this.#seq + 1);
        this.#seq = seq;
        const dir = `${path}.part`;
        // Not writable by others, whatever the umask: only the agent adds to it.
        mkdirSync(dir, 0o755);
        const fds: number[] = [];
        try {
          writeMetadata(meta, dir);
          for (const cpu of this.#o.cpus) fds.push(createFile(join(dir, `cpu${cpu}.raw`)));
        } catch (error) {
          for (const fd of fds) closeSync(fd);
          rmSync(dir, { recursive: true, force: true });
          throw error;
        }
        return { path, dir, fds, bytes: 0, started: Date.now() };
      });
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
    asCaller(this.#o.caller, () => finishInto(part.dir, out, this.#o.format, { userSpaceFilters: this.#o.filters }));
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
