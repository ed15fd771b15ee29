/**
 * One entry point for every input evtrace reads: a CTF trace directory, a trace.dat file, or a directory of raw
 * per-CPU pages. The kind is detected from the content, never from the name.
 */
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { ByteOut, utf8 } from './codec/byte-out.ts';
import { type CtfTraceReader, openCtfTrace } from './ctf/reader.ts';
import { createBabeltraceTextFormatter } from './ctf/text.ts';
import { TraceFormatError } from './errors.ts';
import type { FtraceMetadata } from './ftrace/events.ts';
import { isRawPagesDir, openRawPagesDir } from './ftrace/raw-dir.ts';
import { isTraceDat, openTraceDat, type TraceDatReader } from './ftrace/tracedat/read.ts';
import { requireSeekableInput } from './input.ts';
import type { TraceEvent, TraceKind, TraceReader } from './model/types.ts';
import { createFtraceLineWriter } from './output/text.ts';

/** Options of {@link openTrace}. */
export interface OpenTraceOptions {
  /** Report corrupt pages or packets as warnings and continue. Default false. */
  readonly lenient?: boolean;
  /** trace.dat only: the instance buffer to read (`record -B NAME`); default the top-level one. */
  readonly buffer?: string;
  /** trace.dat only: every buffer's events, merged by time (instance events carry `scopes.buffer.name`). */
  readonly allBuffers?: boolean;
}

/**
 * What `path` holds.
 * @throws TraceFormatError `ERR_TRACE_INPUT` when it is none of the known kinds.
 */
export function detectTraceKind(path: string): TraceKind {
  if (requireSeekableInput(path, 'a trace (trace.dat, CTF, raw pages)') === 'directory') {
    if (existsSync(join(path, 'metadata'))) return 'ctf';
    if (isRawPagesDir(path)) return 'raw-pages';
    throw new TraceFormatError(
      'ERR_TRACE_INPUT',
      'directory is neither a CTF trace (no metadata file) nor raw pages (events/header_page and cpuN.raw)',
      { file: path },
    );
  }
  const head = Buffer.alloc(16);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, head, 0, head.length, 0);
  } finally {
    closeSync(fd);
  }
  if (isTraceDat(head)) return 'tracedat';
  throw new TraceFormatError('ERR_TRACE_INPUT', 'not a trace.dat file, CTF trace or raw-pages directory', {
    file: path,
    offset: 0,
  });
}

/** Opens any supported input. ftrace readers also carry `metadata` (cmdlines, kallsyms, page layout). */
export function openTrace(path: string, options: OpenTraceOptions = {}): TraceReader & { metadata?: FtraceMetadata } {
  switch (detectTraceKind(path)) {
    case 'ctf':
      return openCtfTrace(path, { lenient: options.lenient === true });
    case 'tracedat':
      return openTraceDat(path, options);
    case 'raw-pages':
      return openRawPagesDir(path, { lenient: options.lenient === true });
  }
}

/** The natural text form of a reader's events: trace-cmd report style for ftrace, babeltrace2 style for CTF. */
export function createTextFormatter(
  reader: TraceReader & { metadata?: FtraceMetadata },
): (event: TraceEvent) => string {
  if (reader.kind === 'ctf') return babeltraceText(reader);
  const write = createTextLineWriter(reader);
  const out = new ByteOut(512);
  return (event) => {
    out.length = 0;
    write(event, out);
    // Without the newline the writer ends the line with.
    out.length--;
    return out.toString();
  };
}

/**
 * Writes the lines {@link createTextFormatter} gives, each with its newline, after what `out` holds: for ftrace
 * data, as bytes from the events' values and texts kept per class, per task and per value (no string per line).
 */
export function createTextLineWriter(
  reader: TraceReader & { metadata?: FtraceMetadata },
): (event: TraceEvent, out: ByteOut) => void {
  if (reader.kind === 'ctf') {
    const line = babeltraceText(reader);
    return (event, out) => {
      out.text(line(event));
      out.byte(10);
    };
  }
  const meta = reader.metadata;
  const line = createFtraceLineWriter(
    meta !== undefined
      ? {
          cmdlines: meta.cmdlines,
          kallsyms: meta.kallsyms,
          ...(meta.printk !== undefined ? { printk: meta.printk } : {}),
        }
      : {},
  );
  const buffers = (reader as Partial<TraceDatReader>).buffersRead ?? [];
  if (buffers.length < 2)
    return (event, out) => {
      line(event, out);
      out.byte(10);
    };
  // As trace-cmd report prints several buffers: each line after its buffer's name and a colon, padded to the
  // longest (the top-level buffer's lines are padded only).
  const width = Math.max(...buffers.map((b) => (b === '' ? 0 : b.length + 1)));
  const prefixes = new Map<string, Uint8Array>();
  return (event, out) => {
    const name = (event.scopes?.buffer?.name as string | undefined) ?? '';
    let prefix = prefixes.get(name);
    if (prefix === undefined) {
      prefix = utf8(`${(name === '' ? '' : `${name}:`).padEnd(width)} `);
      prefixes.set(name, prefix);
    }
    out.raw(prefix);
    line(event, out);
    out.byte(10);
  };
}

function babeltraceText(reader: TraceReader): (event: TraceEvent) => string {
  const ctf = reader as CtfTraceReader;
  return createBabeltraceTextFormatter({ trace: ctf.trace, timestamps: ctf.timestamped });
}
