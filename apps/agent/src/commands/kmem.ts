import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentClient } from '@evtrace/agent-protocol';
import {
  analysePerfData,
  analyze,
  buildReport,
  detectKmemInput,
  diffReports,
  formatDiffText,
  formatReportText,
  type GfpTable,
  type KmemAnalysis,
  type KmemReport,
  type KmemSource,
  LiveKmemAnalysis,
  openKmemInput,
  parseGfpTable,
  parseSortKeys,
  type ReportOptions,
  writeReportText,
} from '@evtrace/kmemtrace';
import { Kallsyms, readInput } from '@evtrace/trace-format';
import { Command } from 'commander';
import { addCommand, type CliIO } from '../command.ts';
import { CliExit, usageError } from '../exit-codes.ts';
import { setExamples } from '../help.ts';
import { stdoutBytes } from '../output/buffered-writer.ts';
import { durationOption } from '../units.ts';

interface KmemReportOptions {
  caller?: boolean;
  alloc?: boolean;
  page?: boolean;
  leaks?: boolean;
  errors?: boolean;
  timeseries?: boolean;
  sort?: string;
  lines?: string;
  json?: boolean;
  lenient?: boolean;
  kallsyms?: string;
  interval?: string;
  live?: string;
  socket?: string;
  duration?: string;
  window?: boolean;
}

/**
 * The kmem tracepoints `evtrace kmem record` asks for, as globs that fit every kernel: today's kmalloc, kfree,
 * kmem_cache_alloc, kmem_cache_free and the page allocator's pair, and the `_node` variants of kernels before 6.1.
 */
export const KMEM_RECORD_EVENTS = [
  'kmem:kmalloc*',
  'kmem:kfree',
  'kmem:kmem_cache_*',
  'kmem:mm_page_alloc',
  'kmem:mm_page_free',
] as const;

/**
 * The per-CPU buffer `evtrace kmem record` asks for unless told: allocator events come in bursts of hundreds of
 * thousands a second (measured: the kernel's default 1.4 MiB dropped events under perf bench sched messaging).
 */
export const KMEM_BUFFER_KB = 8192;

/** `evtrace kmem report|record|diff`: kernel memory allocations. */
export function registerKmem(program: Command, io: CliIO): void {
  const kmem = addCommand(program, 'kmem')
    .summary('kernel memory allocations: perf kmem style reports, leaks and misuse; record the kmem events')
    .description(
      `Kernel memory allocation analysis. "report" reads an evtrace trace (trace.dat, CTF, raw pages) of kmem
tracepoints, perf script text of kmem events, a perf.data file of "perf kmem record" (read directly), or
kmemtrace v1 relay files, and prints the call site and pointer tables of perf kmem, a summary, the page allocator,
outstanding allocations and classified misuse. "record" records the kmem events. "diff" compares two recordings.`,
    );
  registerReport(addCommand(kmem, 'report'), io);
  registerKmemRecord(addCommand(kmem, 'record'), io);
  registerDiff(addCommand(kmem, 'diff'), io);
  setExamples(
    kmem,
    `evtrace kmem record -o kmem.dat -- perf bench sched messaging
evtrace kmem report kmem.dat --caller --sort hit --lines 20
evtrace kmem diff before.dat after.dat`,
  );
}

function reportOptions(options: KmemReportOptions): ReportOptions {
  let sort: ReportOptions['sort'];
  try {
    sort = options.sort === undefined ? undefined : parseSortKeys(options.sort);
  } catch (error) {
    throw usageError(`--sort: ${(error as Error).message}`);
  }
  if (options.lines !== undefined && !/^\d+$/.test(options.lines))
    throw usageError(`--lines must be a non-negative integer, not '${options.lines}'`);
  return {
    ...(options.caller ? { caller: true } : {}),
    ...(options.alloc ? { alloc: true } : {}),
    ...(options.page ? { page: true } : {}),
    ...(options.leaks ? { leaks: true } : {}),
    ...(options.errors ? { errors: true } : {}),
    ...(options.timeseries ? { timeseries: true } : {}),
    ...(sort !== undefined ? { sort } : {}),
    ...(options.lines !== undefined ? { lines: Number(options.lines) } : {}),
  };
}

/** The symbols --kallsyms names, if given. */
function kallsymsOption(options: { kallsyms?: string }): { kallsyms?: Kallsyms } {
  return options.kallsyms === undefined ? {} : { kallsyms: Kallsyms.parse(readInput(options.kallsyms)) };
}

/**
 * Analyses INPUT (a perf.data file is read directly: perf is not needed). Where there is a second core, a perf.data
 * file's samples are read and decoded on a second thread while this one analyses them.
 */
async function analyseInput(
  input: string,
  options: KmemReportOptions,
  report: ReportOptions,
  io: CliIO,
): Promise<KmemReport> {
  const intervalNs = options.interval === undefined ? undefined : durationOption('--interval', options.interval) * 1e6;
  const opened = { lenient: options.lenient === true, ...kallsymsOption(options) };
  const analyseOptions = intervalNs !== undefined ? { intervalNs } : {};
  let analysis: KmemAnalysis;
  let source: KmemSource;
  if (input !== '-' && detectKmemInput(input) === 'perf-data')
    ({ analysis, source } = await analysePerfData(input, { ...opened, ...analyseOptions }));
  else {
    source = openKmemInput(input, opened);
    analysis = analyze(source.events, analyseOptions);
  }
  const result = buildReport(analysis, source, report);
  for (const d of source.diagnostics) io.stderr(`evtrace: warning: ${d}\n`);
  return result;
}

/** This machine's symbols, when readable with addresses (a local agent's kernel is this kernel). */
function runningKallsyms(): Kallsyms | undefined {
  try {
    const k = Kallsyms.parse(readFileSync('/proc/kallsyms'));
    return k.size > 0 ? k : undefined;
  } catch {
    return undefined;
  }
}

/** The running kernel's gfp flag table, from a kmem format file of the mounted tracefs. */
async function runningGfpTable(): Promise<GfpTable | undefined> {
  // Imported here, as the agent's client below: a report of a file needs neither.
  const { tracefsInMounts } = await import('@evtrace/tracefs');
  try {
    const mount = tracefsInMounts(readFileSync('/proc/mounts', 'utf8'));
    if (mount === undefined) return undefined;
    const format = readFileSync(join(mount, 'events', 'kmem', 'mm_page_alloc', 'format'), 'utf8');
    const fmt = /^print fmt: (.*)$/m.exec(format)?.[1];
    return fmt === undefined ? undefined : parseGfpTable(fmt);
  } catch {
    return undefined;
  }
}

/**
 * `kmem report --live SESSION`: the session's events analysed as they arrive (merged across CPUs by
 * {@link LiveKmemAnalysis}), the report printed every interval and once more at the end.
 */
async function reportLive(
  name: string,
  options: KmemReportOptions & { report: ReportOptions },
  io: CliIO,
): Promise<void> {
  const intervalMs = options.interval === undefined ? 1000 : durationOption('--interval', options.interval);
  const durationMs = options.duration === undefined ? undefined : durationOption('--duration', options.duration);
  let kallsyms: Kallsyms | undefined;
  try {
    kallsyms = options.kallsyms === undefined ? runningKallsyms() : Kallsyms.parse(readInput(options.kallsyms));
  } catch (error) {
    throw CliExit.around(error, '--kallsyms: ');
  }
  const gfpTable = await runningGfpTable();
  const { connectAgent, defaultSocketPath } = await import('@evtrace/agent-protocol');
  const socket = options.socket ?? defaultSocketPath();
  let agent: AgentClient | undefined;
  try {
    agent = await connectAgent(socket, { client: 'evtrace kmem' });
    const status = await agent.status(name);
    const live = new LiveKmemAnalysis({
      intervalNs: intervalMs * 1e6,
      cpus: status.cpus.map((c) => c.cpu),
      ...(kallsyms !== undefined ? { kallsyms } : {}),
      ...(gfpTable !== undefined ? { gfpTable } : {}),
    });
    const view = await agent.subscribe(name, { queue: 100_000, window: options.window !== false });
    io.stderr(`evtrace: following session ${name}${status.demo ? ' (DEMO source: synthetic events)' : ''}\n`);
    const started = performance.now();
    const tty = !options.json && process.stdout.isTTY === true;
    const refresh = setInterval(() => {
      live.release();
      if (options.json) return;
      const s = live.stats();
      const head = `-- session ${name}, ${((performance.now() - started) / 1000).toFixed(1)}s: ${s.analysed} kmem events${s.lost > 0 ? `, ${s.lost} lost by this reader` : ''} --\n`;
      io.stdout(`${tty ? '\x1b[H\x1b[2J' : ''}${head}${formatReportText(live.report(options.report))}`);
    }, intervalMs);
    const stop = () => void view.close();
    const timer = durationMs === undefined ? undefined : setTimeout(stop, durationMs);
    process.once('SIGINT', stop);
    try {
      for await (const item of view) {
        if (item.kind === 'event') live.push(item.event);
        else if (item.kind === 'loss') {
          live.noteLost(item.lost);
          io.stderr(`evtrace: this reader lost ${item.lost} events (${item.total} in all): the report misses them\n`);
        }
      }
    } finally {
      clearInterval(refresh);
      if (timer !== undefined) clearTimeout(timer);
      process.removeListener('SIGINT', stop);
    }
    live.release(true);
    if (view.endReason !== undefined && view.endReason !== 'unsubscribed') io.stderr(`evtrace: ${view.endReason}\n`);
    const report = live.report(options.report);
    if (options.json) io.stdout(`${JSON.stringify(report)}\n`);
    else {
      const s = live.stats();
      io.stdout(
        `${tty ? '\x1b[H\x1b[2J' : ''}-- session ${name}, final: ${s.analysed} kmem events${s.lost > 0 ? `, ${s.lost} lost by this reader` : ''} --\n${formatReportText(report)}`,
      );
    }
  } finally {
    agent?.close();
  }
}

function registerReport(cmd: Command, io: CliIO): void {
  cmd
    .summary('perf kmem style tables, summary, pages, outstanding allocations and misuse of a recording')
    .description(
      `Reads INPUT, detected from its content: an evtrace trace (trace.dat, CTF directory, raw-pages directory) of
kmem tracepoints, perf script text of kmem events, a perf.data file of "perf kmem record" (read directly, in
perf script's time order; call sites named through the kallsyms perf saved in its build-id cache, else
/proc/kallsyms when this machine runs the recording kernel, or --kallsyms), or kmemtrace v1 relay files (a cpuN file or a directory of them with abi_version). INPUT is a
regular file (read at its size) or a directory: a FIFO or device is refused, and so is an input holding no kmem
event (an empty file, text of other events, a trace without kmem events), naming the file and what was expected.
--caller and --alloc print perf kmem's tables per call site and per pointer: total and per-hit allocated and
requested bytes, hits, ping-pong (frees on another CPU than the allocation's) and fragmentation, sorted by --sort
(perf's keys frag, hit, bytes, ptr, callsite, pingpong; each descending; default frag,hit,bytes). --page prints the
page allocator (orders, migrate types, gfp flags, alloc-only and free-only counts), --leaks the allocations still
outstanding at the end by call site and age, --errors classified misuse (wrong free function or cache, double
frees, frees of unknown pointers, allocations smaller than requested, missed frees), --timeseries the allocation
rate and live bytes per --interval. Without any of these, all of them. The summary is always printed.
--live SESSION analyses a running agent session's kmem events as they arrive (its recent window first, unless
--no-window): the report is printed every --interval (default 1s; on a terminal in place), and once more, final,
at SIGINT, after --duration, or when the session stops. With --json only the final report is printed. Events this
reader lost (it read too slowly for the agent) are counted on stderr.
With --json one object: {"summary": {...}, "callers": [{"site": "symbol+0xoff", "total_alloc": N, "total_req": N,
"hit": N, "ping_pong": N, "frag_pct": X}, ...], "allocs": [...], "pages", "leaks", "errors", "timeseries"}
(@evtrace/kmemtrace/schemas/report.json): figures as numbers, timestamps (first_ns, ts_ns...) as decimal strings.`,
    )
    .argument('[input]', 'trace.dat, CTF or raw-pages directory, perf script text, perf.data, or kmemtrace files')
    .option('--caller', 'per call site table')
    .option('--alloc', 'per pointer table')
    .option('--page', 'page allocator statistics')
    .option('--leaks', 'allocations outstanding at the end of the recording, by call site and age')
    .option('--errors', 'classified allocator misuse')
    .option('--timeseries', 'allocation rate and live bytes over time')
    .option(
      '--sort <keys>',
      'sort keys of the tables: frag, hit, bytes, ptr, callsite, pingpong (default frag,hit,bytes)',
    )
    .option('--lines <n>', 'print only the first N rows of each table')
    .option('--interval <time>', 'time series interval; with --live also the refresh period (default 100ms, live 1s)')
    .option('--live <session>', "a running agent session's kmem events as they arrive (no INPUT)")
    .option('--socket <path>', "with --live: the agent's control socket")
    .option('--duration <time>', 'with --live: stop after this long (else at SIGINT or when the session stops)')
    .option('--no-window', "with --live: leave out the session's recent window (only events from now on)")
    .option('--kallsyms <file>', 'symbols for call sites when the input carries none (e.g. /proc/kallsyms)')
    .option('--lenient', 'report corrupt records or malformed lines on stderr and continue')
    .option('--json', 'one JSON object, figures as numbers')
    .action(async (input: string | undefined, options: KmemReportOptions) => {
      const sections = reportOptions(options);
      if (options.live !== undefined) {
        if (input !== undefined) throw usageError('--live takes no INPUT');
        return reportLive(options.live, { ...options, report: sections }, io);
      }
      for (const flag of ['socket', 'duration'] as const)
        if (options[flag] !== undefined) throw usageError(`--${flag} goes with --live`);
      if (options.window === false) throw usageError('--no-window goes with --live');
      if (input === undefined) throw usageError('kmem report needs INPUT (or --live SESSION)');
      const report = await analyseInput(input, options, sections, io);
      // The text as bytes, a piece at a time: a pointer table runs to megabytes, never one string.
      if (options.json) io.stdout(`${JSON.stringify(report)}\n`);
      else writeReportText(report, stdoutBytes(io));
    });
  setExamples(
    cmd,
    `evtrace kmem report kmem.dat                          every section
evtrace kmem report perf.data --caller --alloc         perf kmem --caller --alloc stat, from perf kmem record
evtrace kmem report k.txt --caller --sort hit,bytes --lines 10
evtrace kmem report kmem.dat --leaks --errors --json
evtrace kmem report --live flight --caller --lines 15   refreshed every second; the final report at SIGINT
evtrace kmem report --live flight --json --duration 10s`,
  );
}

interface KmemRecordOptions {
  output: string;
  duration?: string;
  bufferKb?: string;
  format?: string;
  page?: boolean;
  demo?: boolean;
  share?: boolean;
  force?: boolean;
}

function registerKmemRecord(cmd: Command, io: CliIO): void {
  cmd
    .summary('record the kmem allocator events (a shortcut for evtrace record -e ...)')
    .description(
      `Records the kernel's allocator tracepoints with evtrace record: ${KMEM_RECORD_EVENTS.join(', ')}
(globs, so the _node variants of kernels before 6.1 are included); --no-page leaves the page allocator out (its
events are many). Stops after --duration, when COMMAND exits, or cleanly on SIGINT, SIGTERM, SIGHUP or SIGQUIT (as
evtrace record); then "evtrace kmem report OUTPUT".`,
    )
    .argument('[command...]', 'a command to run while recording (after --); recording stops when it exits')
    .option('-o, --output <path>', 'output file (a directory for --format ctf)', 'kmem.dat')
    .option('--duration <time>', 'stop after this long (10s, 500ms, 2m)')
    .option(
      '-b, --buffer-kb <kb>',
      `per-CPU buffer size in KiB (default ${KMEM_BUFFER_KB}: allocator events come fast)`,
    )
    .option('--format <kind>', 'output format: tracedat or ctf', 'tracedat')
    .option('--no-page', 'leave out mm_page_alloc and mm_page_free')
    .option('--demo', 'synthetic kmalloc and kfree events instead of the kernel (no root needed)')
    .option('--share', 'make OUTPUT readable by every user (default: its owner only, as it holds kernel addresses)')
    .option(
      '--force',
      'replace a non-empty OUTPUT directory (--format ctf), all it holds, once the recording is complete',
    )
    .action(async (command: string[], options: KmemRecordOptions) => {
      // The demo source knows kmalloc and kfree only.
      const events = options.demo
        ? ['kmem:kmalloc', 'kmem:kfree']
        : KMEM_RECORD_EVENTS.filter((e) => options.page !== false || !e.startsWith('kmem:mm_page'));
      const argv = [
        'record',
        ...events.flatMap((e) => ['-e', e]),
        '-o',
        options.output,
        '--format',
        options.format ?? 'tracedat',
        ...(options.duration !== undefined ? ['--duration', options.duration] : []),
        '--buffer-kb',
        options.bufferKb ?? String(KMEM_BUFFER_KB),
        ...(options.demo ? ['--demo'] : []),
        ...(options.share ? ['--share'] : []),
        ...(options.force ? ['--force'] : []),
        ...(command.length > 0 ? ['--', ...command] : []),
      ];
      // `evtrace record` itself, on a program of its own: its errors end this command as they end `evtrace record`.
      const { registerRecord } = await import('./record.ts');
      const record = new Command('evtrace').exitOverride().configureOutput(cmd.configureOutput());
      registerRecord(record, io);
      await record.parseAsync(argv, { from: 'user' });
    });
  setExamples(
    cmd,
    `evtrace kmem record -o kmem.dat -- perf bench sched messaging -g 2 -l 50
evtrace kmem record --duration 10s --no-page -o k.dat`,
  );
}

interface KmemDiffOptions {
  json?: boolean;
  lines?: string;
  lenient?: boolean;
  kallsyms?: string;
}

function registerDiff(cmd: Command, io: CliIO): void {
  cmd
    .summary('compare two recordings: summary figures and call sites')
    .description(
      `Analyses A and B (any input "report" reads) and prints the change of the summary figures from A to B and
every call site of either, matched by name (symbol+0xoff survives a reboot, addresses do not), largest change in
allocated bytes first. With --json: {"summary": {"allocs": {"a": N, "b": N, "delta": N}, ...}, "callers":
[{"site", "hit_a", "hit_b", "hit_delta", "total_alloc_a", "total_alloc_b", "total_alloc_delta", "frag_pct_a",
"frag_pct_b"}, ...]}.`,
    )
    .argument('<a>', 'the first recording')
    .argument('<b>', 'the second recording')
    .option('--lines <n>', 'print only the first N call sites')
    .option('--kallsyms <file>', 'symbols for call sites when an input carries none')
    .option('--lenient', 'report corrupt records or malformed lines on stderr and continue')
    .option('--json', 'one JSON object')
    .action(async (a: string, b: string, options: KmemDiffOptions) => {
      const report = reportOptions({ caller: true, ...(options.lines !== undefined ? { lines: options.lines } : {}) });
      const all = { ...report, lines: undefined } as ReportOptions;
      delete (all as { lines?: number }).lines;
      const diff = diffReports(await analyseInput(a, options, all, io), await analyseInput(b, options, all, io));
      const lines = report.lines;
      if (options.json)
        io.stdout(
          `${JSON.stringify(lines === undefined ? diff : { ...diff, callers: diff.callers.slice(0, lines) })}\n`,
        );
      else io.stdout(formatDiffText(diff, lines));
    });
  setExamples(cmd, `evtrace kmem diff before.dat after.dat --lines 20`);
}
