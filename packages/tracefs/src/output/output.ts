/**
 * Turning a recorded raw-pages directory into the requested output: trace.dat with the pages copied verbatim, or
 * CTF through @evtrace/trace-format. When part of the filter is left to user space, events are decoded, filtered and
 * re-encoded (trace.dat through trace-format's event writer).
 */
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { EventPredicate } from '@evtrace/filters';
import {
  openRawPagesDir,
  type TraceEvent,
  TraceFormatError,
  type TraceReader,
  writeCtfTrace,
  writeTraceDat,
} from '@evtrace/trace-format';
import { outputError, TracefsError } from '../errors.ts';
import type { EventFilterPlan } from '../filter/filter.ts';
import { filtersModule } from '../filter/filters-module.ts';
import { writeTraceDatFromRawDir } from './tracedat.ts';

/** Output formats of a recording. */
export type OutputFormat = 'tracedat' | 'ctf';

/** What {@link finalizeRecording} wrote. */
export interface FinalizeResult {
  /** Events in the output. */
  readonly events: number;
  /** Events in the output by `system:event`, when they were decoded (CTF or a user-space filter). */
  readonly byEvent: ReadonlyMap<string, number> | undefined;
  /** Bytes written (file size for trace.dat; every stream and metadata file for CTF). */
  readonly bytes: number;
}

/** Options of {@link finalizeRecording}. */
export interface FinalizeOptions {
  /** User-space filter remainders by `system:event`. */
  readonly userSpaceFilters?: ReadonlyMap<string, EventFilterPlan>;
  /** Remove the raw-pages directory afterwards. Default true. */
  readonly removeRaw?: boolean;
  /** Events recorded (from the recorder's count), used as the trace.dat count when nothing is decoded. */
  readonly recorded?: number;
  /**
   * The output is readable by every user (0644 or 0755 less the umask). Default false: by its owner only (0600 or
   * 0700), since recordings hold kernel addresses; a trace.dat replacing a file keeps that file's mode.
   */
  readonly share?: boolean;
  /** Replace a non-empty output directory (CTF). Default false: it is refused. */
  readonly force?: boolean;
  /**
   * Write a trace.dat through a symbolic link at `output` (see trace-format's `writeFileAtomically`). Default true;
   * false where another user may plant one: whatever is at `output` is then replaced, nothing written through.
   */
  readonly followLinks?: boolean;
}

function dirBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += statSync(`${e.parentPath}/${e.name}`).size;
  }
  return n;
}

/**
 * Writes the recording in `rawDir` to `output` as `format`, then removes `rawDir` (unless `removeRaw` is false).
 * When the output cannot be written (a full disk), the partial output is removed and `rawDir` kept, so the
 * recording can be converted later (`evtrace convert RAWDIR --to tracedat -o OUTPUT`).
 *
 * @throws TracefsError `ERR_TRACEFS_OUTPUT` naming the file and the errno (ENOSPC...) when the output cannot be
 * written; the errors of the readers for a damaged `rawDir`.
 */
export function finalizeRecording(
  rawDir: string,
  output: string,
  format: OutputFormat,
  options: FinalizeOptions = {},
): FinalizeResult {
  const existed = existsSync(output);
  let result: FinalizeResult;
  try {
    result = writeOutput(rawDir, output, format, options);
  } catch (error) {
    // A half-written output would read as a shorter trace: only what we created is removed.
    if (!existed) rmSync(output, { recursive: true, force: true });
    if (error instanceof TraceFormatError && error.code === 'ERR_TRACE_OUTPUT') throw outputError(output, error);
    const errno = (error as NodeJS.ErrnoException)?.code;
    if (error instanceof TracefsError || typeof errno !== 'string' || !/^E[A-Z0-9]+$/.test(errno)) throw error;
    // The CTF writer's system calls on stream descriptors carry no path: the output directory names the place.
    const path = (error as NodeJS.ErrnoException).path;
    throw outputError(typeof path === 'string' ? path : output, error);
  }
  if (options.removeRaw !== false) rmSync(rawDir, { recursive: true, force: true });
  return result;
}

function writeOutput(rawDir: string, output: string, format: OutputFormat, options: FinalizeOptions): FinalizeResult {
  const filters = options.userSpaceFilters ?? new Map<string, EventFilterPlan>();
  let result: FinalizeResult;
  if (format === 'tracedat' && filters.size === 0) {
    // The directory goes afterwards: the trace.dat may take over its largest page file instead of copying it.
    const bytes = writeTraceDatFromRawDir(rawDir, output, {
      consume: options.removeRaw !== false,
      share: options.share === true,
      followLinks: options.followLinks !== false,
    });
    result = { events: options.recorded ?? 0, byEvent: undefined, bytes };
  } else {
    const reader = openRawPagesDir(rawDir);
    const predicates = new Map<string, EventPredicate>();
    for (const [name, plan] of filters) {
      const ec = reader.eventClasses.find((c) => c.name === name);
      if (ec !== undefined && plan.userSpace !== undefined) {
        predicates.set(name, filtersModule().compileFilter(plan.userSpace, ec));
      }
    }
    const byEvent = new Map<string, number>(reader.eventClasses.map((c) => [c.name, 0]));
    function* kept(): Iterable<TraceEvent> {
      for (const e of reader.events()) {
        const keep = predicates.get(e.eventClass.name);
        if (keep !== undefined && !keep(e)) continue;
        byEvent.set(e.eventClass.name, (byEvent.get(e.eventClass.name) ?? 0) + 1);
        yield e;
      }
    }
    let events: number;
    if (format === 'ctf') {
      const filtered: TraceReader = { ...reader, events: kept };
      const demo = existsSync(join(rawDir, 'DEMO')) ? readFileSync(join(rawDir, 'DEMO'), 'utf8').trim() : undefined;
      events = writeCtfTrace(filtered, output, {
        ...(demo !== undefined ? { env: { evtrace_demo: demo } } : {}),
        share: options.share === true,
        force: options.force === true,
      });
      result = { events, byEvent, bytes: dirBytes(output) };
    } else {
      const m = reader.metadata;
      events = writeTraceDat(output, reader.eventClasses, kept(), {
        version: 6,
        pageSize: m.page.pageSize,
        cmdlines: m.cmdlines,
        ...(m.kallsymsText !== undefined ? { kallsyms: m.kallsymsText } : {}),
        ...(m.printkText !== undefined ? { printk: m.printkText } : {}),
        ...(m.clock !== undefined ? { clock: m.clock } : {}),
        share: options.share === true,
        followLinks: options.followLinks !== false,
      }).events;
      result = { events, byEvent, bytes: statSync(output).size };
    }
  }
  return result;
}
