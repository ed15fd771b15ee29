/**
 * Opening what the analysis reads, detected by content: an evtrace trace (trace.dat, CTF directory, raw-pages
 * directory), `perf script` text, a kmemtrace v1 relay file or a directory of them (`cpuN` files, optional
 * `abi_version`).
 */
import { closeSync, existsSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  type InputLocation,
  isRawPagesDir,
  isTraceDat,
  type Kallsyms,
  openTrace,
  readInput,
  requireSeekableInput,
} from '@evtrace/trace-format';
import { AddressKeys } from './address.ts';
import { EXPECTED_INPUT, KmemError, noKmemEvents } from './errors.ts';
import { KmemColumns, type KmemEvent, KmemEventStream, type KmemSource } from './event.ts';
import { gfpNamer } from './gfp.ts';
import { decodeKmemtrace, type KmemtraceLayout } from './kmemtrace-abi.ts';
import { perfDataSource } from './perf-data.ts';
import { BATCH, type PerfScriptInput, PerfScriptReader } from './perf-script.ts';
import { addressNamer } from './symbols.ts';
import { kmemKind, traceSource } from './tracepoints.ts';

export type KmemInputKind = 'trace' | 'perf-script' | 'kmemtrace' | 'perf-data';

export interface OpenKmemOptions {
  /** Keep going past corrupt records or malformed lines, reporting them in `diagnostics`. */
  readonly lenient?: boolean;
  /** Symbols for call sites when the input carries none (e.g. parsed from /proc/kallsyms). */
  readonly kallsyms?: Kallsyms;
  /** kmemtrace: the record layout, when detection is not wanted. */
  readonly layout?: KmemtraceLayout;
}

/**
 * What `path` holds.
 * @throws KmemError `ERR_KMEM_INPUT` when it cannot be read or is none of the known kinds.
 */
export function detectKmemInput(path: string): KmemInputKind {
  if (requireSeekableInput(path, 'a kmem recording', { error: inputError }) === 'directory') {
    if (existsSync(join(path, 'metadata')) || isRawPagesDir(path)) return 'trace';
    if (relayFiles(path).length > 0) return 'kmemtrace';
    throw new KmemError(
      'ERR_KMEM_INPUT',
      'directory is neither a trace (CTF, raw pages) nor kmemtrace relay files (cpuN)',
      { file: path },
    );
  }
  const head = Buffer.alloc(4096);
  const fd = openSync(path, 'r');
  let n: number;
  try {
    n = readSync(fd, head, 0, head.length, 0);
  } finally {
    closeSync(fd);
  }
  const bytes = head.subarray(0, n);
  if (n === 0) throw new KmemError('ERR_KMEM_INPUT', `empty: expected ${EXPECTED_INPUT}`, { file: path, offset: 0 });
  if (isTraceDat(bytes)) return 'trace';
  if (bytes.subarray(0, 8).toString('latin1') === 'PERFILE2') return 'perf-data';
  if (looksLikeText(bytes)) return 'perf-script';
  return 'kmemtrace';
}

/** The shared input reader's errors in this package's shape. */
function inputError(message: string, at: InputLocation): KmemError {
  return new KmemError('ERR_KMEM_INPUT', message, at);
}

/**
 * Refuses a source that holds no kmem event: a report from it would say nothing, and hide a wrong input.
 * @throws KmemError `ERR_KMEM_INPUT` naming `file`.
 */
export function requireKmemEvents<S extends KmemSource & { readonly events: readonly KmemEvent[] }>(
  source: S,
  file: string,
): S {
  if (source.events.length === 0) throw noKmemEvents(file, source.diagnostics.length);
  return source;
}

/**
 * perf script text as a kmem source whose events are read as they are iterated (once), so a text of any length is
 * analysed in the memory of its names and the analysis' tables. A text with no kmem event at all is refused as such
 * (`ERR_KMEM_INPUT`: what was expected, how many lines were not), not by the syntax error of its first line; one with
 * kmem events fails at its first malformed line (`ERR_KMEM_PERF_SCRIPT`) unless `lenient`: here when that line comes
 * before the first kmem event, else while the events are iterated (`diagnostics` fill as they are).
 */
export function perfScriptSource(input: PerfScriptInput, file: string, lenient = false): KmemSource {
  const reader = new PerfScriptReader(input, { file, lenient, requireKmem: true });
  const batch = new KmemColumns(BATCH);
  reader.read(batch);
  let first = true;
  return {
    events: new KmemEventStream(() => ({
      next(): IteratorResult<KmemColumns> {
        if (!first && reader.read(batch) === 0) return { done: true, value: undefined };
        first = false;
        return { done: batch.length === 0, value: batch };
      },
    })),
    diagnostics: reader.diagnostics,
    ...reader.names(),
  };
}

/** How much of a text file is read at a time: a chunk that stays in the processor's cache while it is parsed. */
const CHUNK_BYTES = 1 << 18;

/**
 * A regular file's bytes, a chunk at a time into one buffer (each read when the previous is done with), the file
 * open only while a chunk is read.
 */
function* fileChunks(path: string): Generator<Uint8Array> {
  const buffer = Buffer.allocUnsafeSlow(CHUNK_BYTES);
  for (let offset = 0; ; ) {
    let n: number;
    try {
      const fd = openSync(path, 'r');
      try {
        n = readSync(fd, buffer, 0, buffer.length, offset);
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      throw new KmemError('ERR_KMEM_INPUT', `cannot read: ${(error as Error).message}`, { file: path, offset });
    }
    if (n === 0) return;
    yield new Uint8Array(buffer.buffer, buffer.byteOffset, n);
    offset += n;
  }
}

function looksLikeText(bytes: Buffer): boolean {
  for (const c of bytes) if (c === 0 || (c < 32 && c !== 9 && c !== 10 && c !== 13)) return false;
  return true;
}

function relayFiles(dir: string): { cpu: number; file: string }[] {
  return readdirSync(dir)
    .map((name) => /^cpu(\d+)$/.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ cpu: Number(m[1]), file: join(dir, m[0]) }))
    .sort((a, b) => a.cpu - b.cpu);
}

/**
 * Reads a kmemtrace v1 recording: one relay file, or a directory of `cpuN` files (their CPU from the name) with an
 * optional `abi_version` file as debugfs had it; events of all CPUs merged by timestamp (sequence number for the
 * `mainline` layout).
 */
export function readKmemtrace(
  path: string,
  options: OpenKmemOptions = {},
): KmemSource & { readonly events: KmemEvent[] } {
  const keys = new AddressKeys();
  const diagnostics: string[] = [];
  const files = statSync(path).isDirectory() ? relayFiles(path) : [{ cpu: -1, file: path }];
  let abiVersion: number | undefined;
  const abiFile = statSync(path).isDirectory() ? join(path, 'abi_version') : undefined;
  if (abiFile !== undefined && existsSync(abiFile)) {
    const text = readInput(abiFile, { error: inputError }).toString('utf8').trim();
    if (!/^\d+$/.test(text))
      throw new KmemError('ERR_KMEM_RELAY_ABI', `abi_version holds '${text}', not a number`, { file: abiFile });
    abiVersion = Number(text);
  }
  const perCpu: KmemEvent[][] = [];
  for (const { cpu, file } of files) {
    const decoded = decodeKmemtrace(readInput(file, { error: inputError }), {
      cpu,
      file,
      keys,
      ...(abiVersion !== undefined ? { abiVersion } : {}),
      ...(options.layout !== undefined ? { layout: options.layout } : {}),
      ...(options.lenient ? { lenient: true } : {}),
    });
    diagnostics.push(...decoded.diagnostics);
    if (decoded.skipped > 0)
      diagnostics.push(`${file}: ${decoded.skipped} records of unknown event or type ids skipped`);
    perCpu.push(decoded.events);
  }
  const events = perCpu.length === 1 ? perCpu[0]! : perCpu.flat().sort((a, b) => a.tsNs - b.tsNs);
  return { events, ...addressNamer(keys, options.kallsyms), gfpNames: gfpNamer(), diagnostics };
}

/**
 * Opens any input the analysis reads; a `perf.data` file of kmem tracepoints is read directly (perf is not needed).
 * @throws KmemError `ERR_KMEM_INPUT`; the decoders' errors for corrupt content.
 */
export function openKmemInput(path: string, options: OpenKmemOptions = {}): KmemSource {
  switch (detectKmemInput(path)) {
    case 'trace': {
      const reader = openTrace(path, { lenient: options.lenient === true });
      if (!reader.eventClasses.some((c) => kmemKind(c) !== undefined))
        throw new KmemError('ERR_KMEM_INPUT', `a trace without kmem event classes: expected ${EXPECTED_INPUT}`, {
          file: path,
        });
      const source = traceSource(reader, options.kallsyms !== undefined ? { kallsyms: options.kallsyms } : {});
      return { ...source, diagnostics: reader.warnings as string[] };
    }
    case 'perf-script':
      return perfScriptSource(fileChunks(path), path, options.lenient === true);
    case 'kmemtrace':
      return requireKmemEvents(readKmemtrace(path, options), path);
    case 'perf-data':
      return perfDataSource(path, {
        lenient: options.lenient === true,
        ...(options.kallsyms !== undefined ? { kallsyms: options.kallsyms } : {}),
      });
  }
}
