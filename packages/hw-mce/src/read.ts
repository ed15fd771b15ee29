/**
 * One entry point for every input: detects what a file (or stdin's bytes) holds, or takes the kind it is told, and
 * returns the records with the notes of what was skipped.
 */
import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { inputFileKind, inputLabel, readInput } from '@evtrace/trace-format';
import { type EdacControllerCounters, type EdacEvent, readEdacSysfs } from './edac.ts';
import { type InputNote, MceError, type MceLocation } from './errors.ts';
import { readMceTrace } from './inputs/ftrace.ts';
import { readJournalExport, readJournalJson } from './inputs/journal.ts';
import { readRasdaemonDb } from './inputs/rasdaemon.ts';
import { readStructMce } from './inputs/struct-mce.ts';
import { readMceText } from './inputs/text.ts';
import { readTraceText } from './inputs/trace-text.ts';
import { MCELOG_DEVICE, readMcelogDevice } from './mcelog-device.ts';
import type { InputKind, MceRecord } from './record.ts';

/** Kinds a byte buffer can hold (directories and databases are opened by path, see {@link readMceFile}). */
export type BufferKind =
  | 'mcelog-ascii'
  | 'kernel-log'
  | 'journal-json'
  | 'journal-export'
  | 'trace-text'
  | 'struct-mce';

export interface ReadResult {
  readonly kind: InputKind;
  readonly records: MceRecord[];
  readonly notes: InputNote[];
  /** EDAC events (ras:mc_event, rasdaemon's mc_event table). */
  readonly edac?: EdacEvent[];
  /** EDAC sysfs counters, for an EDAC tree. */
  readonly counters?: EdacControllerCounters[];
}

export interface ReadOptions {
  readonly kind?: InputKind;
  readonly file?: string;
  /** struct mce record length (MCE_GET_RECORD_LEN); probed when absent. */
  readonly recordLength?: number;
}

/** The first field of a `journalctl -o export` entry. */
const JOURNAL_EXPORT = /^(?:__CURSOR|__REALTIME_TIMESTAMP|__MONOTONIC_TIMESTAMP|_BOOT_ID|MESSAGE|PRIORITY)=/;
/** journalctl prints an entry's fields in no fixed order: a first object of upper-case keys with a MESSAGE or cursor. */
const JOURNAL_JSON = /^\s*\{"[A-Z_][A-Z0-9_]*":[^\n]*"(?:MESSAGE|__CURSOR)":/;

/** Guesses the kind of a buffer: binary (NUL bytes in the first KiB) is struct mce; text by its markers. */
export function detectBufferKind(bytes: Uint8Array): BufferKind {
  const head = bytes.subarray(0, 4096);
  // journalctl -o export may hold binary fields (NUL bytes): its field names come first.
  if (JOURNAL_EXPORT.test(Buffer.from(head.subarray(0, 64)).toString('latin1'))) return 'journal-export';
  if (head.includes(0)) return 'struct-mce';
  const text = Buffer.from(head).toString('latin1');
  if (JOURNAL_JSON.test(text)) return 'journal-json';
  if (/mce_record:|^\s*CPU: \d+, MCGc\/s:/m.test(text)) return 'trace-text';
  if (/\[Hardware Error\]|\bmce: |Machine Check(?: Exception)?: /.test(text)) return 'kernel-log';
  return 'mcelog-ascii';
}

/** Reads records from bytes of a known or detected kind. */
export function readMceBuffer(bytes: Uint8Array, options: ReadOptions = {}): ReadResult {
  const kind = options.kind ?? detectBufferKind(bytes);
  const file = options.file;
  switch (kind) {
    case 'struct-mce': {
      const r = readStructMce(bytes, {
        ...(options.recordLength ? { recordLength: options.recordLength } : {}),
        ...(file ? { file } : {}),
      });
      return { kind, records: r.records, notes: r.notes };
    }
    case 'journal-json':
      return { kind, ...readJournalJson(Buffer.from(bytes).toString('utf8'), { ...(file ? { file } : {}) }) };
    case 'journal-export':
      return { kind, ...readJournalExport(bytes, { ...(file ? { file } : {}) }) };
    case 'trace-text':
      return { kind, ...readTraceText(Buffer.from(bytes).toString('utf8'), { ...(file ? { file } : {}) }) };
    case 'mcelog-ascii':
    case 'kernel-log': {
      const text = Buffer.from(bytes).toString('utf8');
      return { kind, ...readMceText(text, { kind, ...(file ? { file } : {}) }) };
    }
    default:
      throw new MceError('ERR_MCE_INPUT', `input kind '${kind}' is read from a path, not from bytes`, {
        location: { file },
      });
  }
}

const SQLITE_MAGIC = 'SQLite format 3\0';
const TRACE_DAT_MAGIC = Buffer.from([0x17, 0x08, 0x44, 0x74, 0x72, 0x61, 0x63, 0x69, 0x6e, 0x67]);

function exists(p: string): boolean {
  try {
    statSync(p);
    return true;
  } catch {
    return false;
  }
}

/** Guesses the kind of a path: EDAC tree, recording directory or trace.dat, sqlite database, else by its bytes. */
export function detectPathKind(path: string): InputKind {
  const st = statSync(path);
  if (st.isDirectory()) {
    if (exists(join(path, 'mc')) || /^mc\d+$/.test(readdirNames(path).find((n) => /^mc\d+$/.test(n)) ?? ''))
      return 'edac-sysfs';
    return 'trace';
  }
  const head = Buffer.alloc(4096);
  const fd = openSync(path, 'r');
  let n: number;
  try {
    n = readSync(fd, head, 0, head.length, 0);
  } finally {
    closeSync(fd);
  }
  if (head.subarray(0, 16).toString('latin1') === SQLITE_MAGIC) return 'rasdaemon-db';
  if (head.subarray(0, TRACE_DAT_MAGIC.length).equals(TRACE_DAT_MAGIC)) return 'trace';
  return detectBufferKind(head.subarray(0, n));
}

function readdirNames(p: string): string[] {
  try {
    return readdirSync(p);
  } catch {
    return [];
  }
}

/** The shared input reader's errors in this package's shape. */
function inputError(message: string, at: MceLocation): MceError {
  return new MceError('ERR_MCE_INPUT', message, { location: at });
}

/** Whether `path` is read as a stream: a FIFO, a socket or a block device (a character device is the mcelog device). */
function isStream(path: string): boolean {
  if (path === '-') return true;
  let kind: string;
  try {
    kind = inputFileKind(path);
  } catch {
    return false; // a missing path: the kind detection says so in its own words
  }
  return kind !== 'file' && kind !== 'directory' && kind !== 'character device';
}

function isCharDevice(path: string): boolean {
  try {
    return statSync(path).isCharacterDevice();
  } catch {
    return false;
  }
}

/**
 * Reads a path (file or directory), `-` (stdin) or bytes of a known or detected kind. stdin, a FIFO or a pipe is read
 * up to trace-format's `STREAM_INPUT_LIMIT` (128 MiB) and refused beyond it; a FIFO no writer opens within 2 s is
 * refused.
 * @throws MceError `ERR_MCE_INPUT` when the file cannot be read or is not of the forced kind; `ERR_MCE_SOURCE` when
 * a character device (/dev/mcelog) is absent or answers no mcelog ioctl.
 */
export function readMceFile(input: string | Uint8Array, options: ReadOptions = {}): ReadResult {
  if (typeof input !== 'string') return readMceBuffer(input, options);
  // A character device (or the mcelog device's path) is read as the device: its ABI asked through its ioctls.
  if (options.kind === undefined && (input === MCELOG_DEVICE || isCharDevice(input))) {
    const r = readMcelogDevice({ path: input });
    return { kind: 'struct-mce', records: r.records, notes: r.notes };
  }
  // stdin, a FIFO or a pipe: read once, with the shared bound, and detected from its bytes.
  if (isStream(input))
    return readMceBuffer(readInput(input, { error: inputError }), { ...options, file: inputLabel(input) });
  let kind: InputKind;
  try {
    kind = options.kind ?? detectPathKind(input);
  } catch (error) {
    throw new MceError('ERR_MCE_INPUT', `cannot read: ${(error as NodeJS.ErrnoException).code ?? error}`, {
      location: { file: input },
      cause: error,
    });
  }
  switch (kind) {
    case 'edac-sysfs': {
      const r = readEdacSysfs(input);
      return { kind, records: [], notes: r.notes, counters: r.controllers };
    }
    case 'rasdaemon-db':
      return { kind, ...readRasdaemonDb(input) };
    case 'trace':
      try {
        return { kind, ...readMceTrace(input) };
      } catch (error) {
        if (error instanceof MceError) throw error;
        const code = (error as { code?: string }).code;
        throw new MceError(
          'ERR_MCE_INPUT',
          `not a readable recording${code ? ` (${code})` : ''}: ${(error as Error).message}`,
          {
            location: { file: input },
            cause: error,
          },
        );
      }
    default: {
      return readMceBuffer(readInput(input, { error: inputError }), { ...options, kind, file: input });
    }
  }
}
