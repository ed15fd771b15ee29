import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { checkOutputDir } from '@evtrace/trace-format';
import {
  DEMO_EVENTS,
  DEMO_LABEL,
  type EventFilterPlan,
  type FinalizeResult,
  finalizeRecording,
  type OutputFormat,
  planEventFilters,
  type RecordResult,
  record,
  recordDemo,
  type ScopedFilter,
  TracefsError,
} from '@evtrace/tracefs';
import type { Command } from 'commander';
import { addCommand, type CliIO } from '../command.ts';
import { autoSource } from '../daemon/sources.ts';
import { CliCode, CliExit, usageError } from '../exit-codes.ts';
import { setExamples } from '../help.ts';
import { onStopSignals } from '../signals.ts';
import { durationOption } from '../units.ts';

interface RecordCliOptions {
  event: string[];
  output?: string;
  bufferKb?: string;
  subbufKb?: string;
  clock?: string;
  format: string;
  duration?: string;
  readerThreads: string;
  demo?: boolean;
  source?: string;
  share?: boolean;
  force?: boolean;
  json?: boolean;
}

/** Where `evtrace record` takes its events from. */
export type RecordSource = 'kernel' | 'demo';

const SOURCES = ['kernel', 'demo', 'auto'] as const;

const FORMATS: readonly OutputFormat[] = ['tracedat', 'ctf'];

function positiveInt(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) === 0) throw usageError(`${name} must be a positive integer, not '${text}'`);
  return Number(text);
}

/** The demo source has no kernel: a filter is applied entirely while writing. */
function demoFilters(result: RecordResult, filters: EventFiltersCli): Map<string, EventFilterPlan> {
  const plans = new Map<string, EventFilterPlan>();
  for (const [name, plan] of planEventFilters(result.eventClasses, filters)) {
    plans.set(name, { ...plan, kernel: undefined, userSpace: plan.parsed.expression });
  }
  return plans;
}

/** The filters of the command line: one for every event, and those scoped to the -e options before them. */
interface EventFiltersCli {
  filter?: string;
  filters: ScopedFilter[];
}

/**
 * Reads -e and --filter in command-line order (commander calls their parsers in that order). A --filter applies to
 * the -e options given since the previous --filter, as trace-cmd's -f applies to the -e before it; one given before
 * any -e applies to every event. Events after the last --filter are not filtered.
 */
function filterOrder() {
  const state = { pending: [] as string[], sawFilter: false, all: undefined as string | undefined };
  const filters: ScopedFilter[] = [];
  const event = (value: string, previous: string[] = []) => {
    state.pending.push(value);
    return [...previous, value];
  };
  const filter = (value: string) => {
    if (state.pending.length === 0) {
      if (state.sawFilter || state.all !== undefined)
        throw usageError(
          `--filter '${value}' has no -e before it since the previous --filter (a --filter applies to the -e options before it)`,
        );
      state.all = value;
    } else filters.push({ events: state.pending.splice(0), filter: value });
    state.sawFilter = true;
    return value;
  };
  return {
    event,
    filter,
    result: (): EventFiltersCli => ({ ...(state.all !== undefined ? { filter: state.all } : {}), filters }),
  };
}

/**
 * What a failed recording kept: the raw-pages directory, readable up to its last whole page, and the command that
 * turns it into the output once there is room (the failure is usually a full disk).
 */
export function keptPagesText(rawDir: string, output: string, format: OutputFormat): string {
  return `the pages recorded so far are kept in ${rawDir} (evtrace cat ${rawDir} reads them); free some space or move it, then: evtrace convert ${rawDir} --to ${format} -o ${output}`;
}

/** The summary printed on stderr after a recording. */
export function summaryText(
  result: RecordResult,
  written: FinalizeResult,
  output: string,
  format: OutputFormat,
): string {
  const counts = written.byEvent ?? result.events;
  const total = written.byEvent === undefined ? result.total : written.events;
  const lines = [
    ...(result.demo ? [`evtrace: DEMO - ${DEMO_LABEL}`] : []),
    `evtrace: recorded ${total} events in ${(result.durationMs / 1000).toFixed(2)} s into ${output} (${format})`,
  ];
  const width = Math.max(...[...counts.keys()].map((k) => k.length), 5);
  for (const [name, n] of counts) lines.push(`  ${name.padEnd(width)}  ${n}`);
  lines.push(`  ${'total'.padEnd(width)}  ${total}`);
  const lost = result.lost.map((l) => {
    const n = l.overrun + l.dropped + l.commitOverrun;
    return `cpu${l.cpu} ${n}${n > 0 ? ` (overrun ${l.overrun}, dropped ${l.dropped}, commit overrun ${l.commitOverrun})` : ''}`;
  });
  lines.push(`  lost: ${lost.join(', ')}`);
  const perEvent = total > 0 ? (written.bytes / total).toFixed(1) : '-';
  const dataPerEvent = result.total > 0 ? (result.dataBytes / result.total).toFixed(1) : '-';
  lines.push(
    `  bytes written: ${written.bytes} (${perEvent} bytes/event; ring-buffer data ${dataPerEvent} bytes/event in ${result.pages} pages)`,
  );
  for (const [name, plan] of result.userSpaceFilters) {
    lines.push(`  ${name}: filter part applied in user space: ${plan.userSpace}`);
  }
  return `${lines.join('\n')}\n`;
}

/** The summary as `--json` prints it (schemas/record.json): what the text summary says, as one object. */
export function summaryJson(
  result: RecordResult,
  written: FinalizeResult,
  output: string,
  format: OutputFormat,
  childStatus: number | null,
): string {
  const counts = written.byEvent ?? result.events;
  return `${JSON.stringify({
    output,
    format,
    source: result.demo ? 'demo' : 'kernel',
    durationMs: Math.round(result.durationMs),
    events: written.byEvent === undefined ? result.total : written.events,
    byEvent: Object.fromEntries(counts),
    lost: result.lost.map((l) => ({
      cpu: l.cpu,
      lost: l.overrun + l.dropped + l.commitOverrun,
      overrun: l.overrun,
      dropped: l.dropped,
      commitOverrun: l.commitOverrun,
    })),
    bytes: written.bytes,
    pages: result.pages,
    userSpaceFilters: Object.fromEntries([...result.userSpaceFilters].map(([name, plan]) => [name, plan.userSpace])),
    childStatus,
  })}\n`;
}

/** `evtrace record -e SYSTEM:EVENT ... -o OUTPUT [--duration D | -- COMMAND ARGS...]`. */
export function registerRecord(program: Command, io: CliIO): void {
  const order = filterOrder();
  const cmd = addCommand(program, 'record')
    .summary('record kernel trace events to trace.dat or CTF')
    .description(
      `Records tracepoints through a private tracefs instance (instances/evtrace-PID-N), so the top-level buffer and
other users' tracing are never touched; the instance is removed afterwards, also after a crash (instances of
recordings killed outright are removed at the next start). Filters are checked first and pushed down to the
kernel; a part the kernel cannot evaluate is applied while writing. A --filter applies to the -e options given since
the previous --filter (trace-cmd's -f applies to the -e before it); one given before every -e applies to all events,
and events after the last --filter are not filtered. Recording stops after --duration, when COMMAND exits, or on
SIGINT, SIGTERM, SIGHUP (the terminal closed) or SIGQUIT: each ends it cleanly, as Ctrl-C ends trace-cmd record (the
instance removed, OUTPUT finished, exit status 0); another signal while it finishes is ignored. A summary (events
per type, lost events per CPU, bytes written) goes to stderr.
OUTPUT (-o) defaults to trace.dat, or trace.ctf with --format ctf; it cannot be standard output (-o -).
Pages are first written to OUTPUT.part/ (a raw-pages directory) and turned into OUTPUT at the end; if the recorder
is killed, or the disk fills up (exit status 1, the error names the file), OUTPUT.part/ stays readable up to its last
complete page (evtrace cat reads it, evtrace convert OUTPUT.part --to tracedat -o OUTPUT converts it later).
OUTPUT replaces an existing file only once complete; a non-empty OUTPUT directory (--format ctf) is refused before
recording unless --force. OUTPUT.part/ and OUTPUT are readable by their owner only (0700, 0600), as perf keeps
perf.data, since they hold kernel addresses; --share makes them readable by everyone (0755, 0644, less the umask).`,
    )
    .argument('[command...]', 'a command to run while recording (after --); recording stops when it exits')
    .requiredOption('-e, --event <system:event>', 'event to record, globs allowed (sched:*); repeatable', order.event)
    .option('-o, --output <path>', 'output file (a directory for --format ctf; default trace.dat, trace.ctf for ctf)')
    .option(
      '--filter <expr>',
      'ftrace filter for the -e options since the previous --filter (before every -e: all events); repeatable',
      order.filter,
    )
    .option('-b, --buffer-kb <kb>', 'per-CPU buffer size in KiB (default: the kernel default)')
    .option('--subbuf-kb <kb>', 'sub-buffer (page) size in KiB (default: the kernel default)')
    .option('--clock <name>', 'trace clock (default: local)')
    .option('--format <kind>', `output format: ${FORMATS.join(' or ')}`, 'tracedat')
    .option('--duration <time>', 'stop after this long (10s, 500ms, 2m)')
    .option(
      '--source <kind>',
      `kernel (tracefs, needs root), demo (synthetic events: ${DEMO_EVENTS.join(', ')}) or auto (the kernel when root and tracefs is reachable, else demo; says which)`,
      'kernel',
    )
    .option('--demo', 'same as --source demo')
    .option('--reader-threads <mode>', 'single (one loop over all CPUs) or per-cpu (a thread per CPU)', 'single')
    .option('--share', 'make OUTPUT readable by every user (default: its owner only, as it holds kernel addresses)')
    .option(
      '--force',
      'replace a non-empty OUTPUT directory (--format ctf), all it holds, once the recording is complete',
    )
    .option('--json', 'print the summary as one JSON object on stdout (schemas/record.json) instead of text on stderr')
    .action(async (command: string[], options: RecordCliOptions) => {
      if (!(FORMATS as readonly string[]).includes(options.format)) {
        throw usageError(`--format must be one of ${FORMATS.join(', ')}, not '${options.format}'`);
      }
      const format = options.format as OutputFormat;
      // trace-cmd's default name; a CTF trace is a directory of its own.
      const output = options.output ?? (format === 'ctf' ? 'trace.ctf' : 'trace.dat');
      if (output === '-') {
        throw usageError(
          '-o -: record cannot write to standard output (pages go to OUTPUT.part/ first and become OUTPUT at the end); give a path, then evtrace cat OUTPUT',
        );
      }
      if (options.readerThreads !== 'per-cpu' && options.readerThreads !== 'single') {
        throw usageError(`--reader-threads must be single or per-cpu, not '${options.readerThreads}'`);
      }
      const threads = options.readerThreads;
      if (!(SOURCES as readonly string[]).includes(options.source ?? 'kernel'))
        throw usageError(`--source must be one of ${SOURCES.join(', ')}, not '${options.source}'`);
      if (options.demo && options.source !== undefined && options.source !== 'kernel' && options.source !== 'demo')
        throw usageError(`--demo and --source ${options.source} contradict each other`);
      let source: RecordSource = options.demo || options.source === 'demo' ? 'demo' : 'kernel';
      if (!options.demo && options.source === 'auto') {
        const chosen = autoSource();
        source = chosen.source;
        io.stderr(`evtrace: source: ${chosen.source} (${chosen.reason})\n`);
      }
      const durationMs = options.duration === undefined ? undefined : durationOption('--duration', options.duration);
      const share = options.share === true;
      const force = options.force === true;
      // Refused now rather than after the recording, which would then stay in OUTPUT.part.
      if (format === 'ctf') checkOutputDir(output, { force });
      const bufferKb = positiveInt('--buffer-kb', options.bufferKb);
      const subbufKb = positiveInt('--subbuf-kb', options.subbufKb);
      const controller = new AbortController();
      const stop = () => controller.abort();
      let child: ChildProcess | undefined;
      let childStatus: number | null = null;
      // Held until the output is finished (or the recording failed): a second signal must not interrupt that.
      const signals = onStopSignals(stop, (signal) =>
        io.stderr(`evtrace: ${signal}: already stopping, finishing ${output}\n`),
      );
      const rawDir = `${output}.part`;
      let result: RecordResult;
      try {
        const onStart = () => {
          if (command.length === 0) return;
          child = spawn(command[0]!, command.slice(1), { stdio: 'inherit' });
          child.on('error', (error) => {
            io.stderr(`evtrace: ${CliCode.Child}: cannot run ${command[0]}: ${error.message}\n`);
            stop();
          });
          child.on('exit', (code) => {
            childStatus = code;
            stop();
          });
        };
        if (source === 'demo') {
          io.stderr(`evtrace: ${DEMO_LABEL}\n`);
          onStart();
          result = await recordDemo({
            events: options.event,
            dir: rawDir,
            share,
            durationMs: durationMs ?? (command.length > 0 ? Number.POSITIVE_INFINITY : 1000),
            signal: controller.signal,
          });
          try {
            result = { ...result, userSpaceFilters: demoFilters(result, order.result()) };
          } catch (error) {
            rmSync(rawDir, { recursive: true, force: true });
            throw error;
          }
        } else
          result = await record({
            events: options.event,
            dir: rawDir,
            share,
            ...order.result(),
            ...(bufferKb !== undefined ? { bufferKb } : {}),
            ...(subbufKb !== undefined ? { subbufKb } : {}),
            ...(options.clock !== undefined ? { clock: options.clock } : {}),
            ...(durationMs !== undefined ? { durationMs } : {}),
            signal: controller.signal,
            threads,
            // Nothing else runs on this thread while it records: futex naps, cheaper than timers.
            sleep: 'blocking',
            // Room for the trace.dat head before the pages: the file is then built around them, not copied.
            headRoom: format === 'tracedat',
            onStart,
          });
      } catch (error) {
        signals.dispose();
        if (error instanceof TracefsError) {
          const hint =
            error.code === 'ERR_TRACEFS_NOT_FOUND' || error.code === 'ERR_TRACEFS_PERMISSION'
              ? ' (--demo records synthetic events without tracefs)'
              : '';
          // A recording that failed after it started (a full disk) keeps its pages: say where and what next.
          const kept = existsSync(rawDir) ? `; ${keptPagesText(rawDir, output, format)}` : '';
          throw CliExit.around(error, '', `${hint}${kept}`);
        }
        throw error;
      } finally {
        (child as ChildProcess | undefined)?.kill('SIGTERM');
      }
      let written: FinalizeResult;
      try {
        written = finalizeRecording(rawDir, output, format, {
          userSpaceFilters: result.userSpaceFilters,
          recorded: result.total,
          share,
          force,
        });
      } catch (error) {
        throw CliExit.around(error, '', `; ${keptPagesText(rawDir, output, format)}`);
      } finally {
        signals.dispose();
      }
      if (options.json === true) io.stdout(summaryJson(result, written, output, format, childStatus));
      else io.stderr(summaryText(result, written, output, format));
      if (childStatus !== null && childStatus !== 0)
        io.stderr(`evtrace: ${command[0]} exited with status ${childStatus}\n`);
    });
  setExamples(
    cmd,
    `evtrace record -e 'kmem:*' -o kmem.dat -- perf bench sched messaging      then: trace-cmd report kmem.dat
evtrace record -e sched:sched_switch --duration 10s -o sw.dat
evtrace record --source auto -e kmem:kmalloc --duration 2s -o k.dat   the kernel when root, else the demo source
evtrace record -e kmem:kmalloc --filter 'bytes_req > 4096' --format ctf -o ctf -- make   then: babeltrace2 ctf
evtrace record -e kmem:kmalloc --filter 'bytes_req > 4096' -e sched:sched_switch -o k.dat   kmalloc filtered only`,
  );
}
