import { renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  applyPageAction,
  type BufferKind,
  type CpuKind,
  cpuTypeByName,
  type DecodedMce,
  decodeMce,
  edacCountersText,
  edacJson,
  edacSeverity,
  edacSummary,
  exposition,
  type InputKind,
  LineBatches,
  MceCounters,
  MceError,
  type MceMetric,
  noteText,
  parseMcelogConfig,
  readGrowth,
  readMceFile,
  Tracker,
  type TrackerConfig,
  type TrackerEvent,
  TriggerRunner,
  toJsonLine,
  toText,
} from '@evtrace/hw-mce';
import { readInput, TraceFormatError } from '@evtrace/trace-format';
import type { Command } from 'commander';
import { addCommand, type CliIO } from '../command.ts';
import { CliCode, CliExit, ExitCode, usageError } from '../exit-codes.ts';
import { setExamples } from '../help.ts';
import { bufferedWriter, stdoutBytes } from '../output/buffered-writer.ts';

const KINDS: readonly InputKind[] = [
  'mcelog-ascii',
  'kernel-log',
  'journal-json',
  'journal-export',
  'trace-text',
  'struct-mce',
  'trace',
  'rasdaemon-db',
  'edac-sysfs',
];

interface DecodeOptions {
  cpu?: string;
  json?: boolean;
  inputFormat?: string;
  recordLength?: string;
  follow?: boolean;
}

/** Text kinds a growing input can hold (line by line). */
const FOLLOW_KINDS: readonly InputKind[] = ['mcelog-ascii', 'kernel-log', 'journal-json', 'trace-text'];
/** How long an input stays quiet before its lines are decoded, and how often a followed file is looked at. */
const QUIET_MS = 200;

/** `evtrace mce`: machine checks and memory errors. */
export function registerMce(program: Command, io: CliIO): void {
  const mce = addCommand(program, 'mce')
    .summary('decode x86 machine checks and EDAC memory errors')
    .description(
      `Decodes machine-check records (Intel, including model-specific memory-controller fields, and AMD Zen Scalable
MCA) from the inputs mcelog and rasdaemon read, grades them as the kernel does and says what to do.`,
    );
  const decode = addCommand(mce, 'decode')
    .summary('decode machine-check records from a file or stdin')
    .description(
      `Reads FILE (or stdin with - or no FILE) and prints every machine-check record: what failed, where (socket,
channel, DIMM, page), how bad (corrected, deferred, ucna, srao, srar, fatal, as the kernel grades it) and what to do.
The input kind is detected: mcelog --ascii input and its decoded or --raw output, kernel log text (dmesg, syslog,
journald; journalctl -o json and -o export), mce:mce_record text lines (all three layouts), binary struct mce records saved from /dev/mcelog, the
device itself (a character device: record and log length asked through its ioctls), a trace.dat or raw-pages directory holding mce:mce_record / ras:mc_event, a rasdaemon sqlite database, or an EDAC sysfs tree
(/sys/devices/system/edac). --input-format forces one of: ${KINDS.join(', ')}. Problems in the input (truncated
records, garbage lines, bad values) are reported on stderr with their line and column or byte offset; every good
record around them is decoded. Exit status 1 when the input holds no record at all, or binary input whose first
finished record is not a machine check (MCi_STATUS.VAL clear, reserved MCG_STATUS bits set). stdin, a FIFO or a pipe
is read up to 128 MiB and refused beyond; a FIFO no writer opens within 2 s is refused.
With --json, one object per record per line: cpu, bank, status, addr (hex or null), misc (hex or null), mcgstatus,
severity, class, summary, and the decoded details.`,
    )
    .argument('[file]', "input file or directory; '-' or nothing for stdin")
    .option('--cpu <type>', 'decode as this CPU type (e.g. skylake_server, nehalem, zen) instead of the recorded CPUID')
    .option('--json', 'one JSON object per record per line')
    .option('--input-format <kind>', `force the input kind (${KINDS.join('|')})`)
    .option('--record-length <bytes>', 'struct mce record length (MCE_GET_RECORD_LEN) of a binary dump; default probed')
    .option(
      '--follow',
      'decode the input, then keep decoding what is added to it (a kernel log being written, journalctl -f on stdin) until SIGINT/SIGTERM or its end',
    )
    .action(async (file: string | undefined, options: DecodeOptions) => {
      let cpu: CpuKind | undefined;
      try {
        cpu = options.cpu === undefined ? undefined : cpuTypeByName(options.cpu);
      } catch (error) {
        throw usageError(`--cpu: ${(error as Error).message}`);
      }
      const kind = options.inputFormat as InputKind | undefined;
      if (kind !== undefined && !KINDS.includes(kind)) {
        throw usageError(`--input-format must be one of ${KINDS.join(', ')}, not '${kind}'`);
      }
      let recordLength: number | undefined;
      if (options.recordLength !== undefined) {
        recordLength = Number(options.recordLength);
        if (!/^\d+$/.test(options.recordLength) || recordLength < 88) {
          throw usageError('--record-length must be an integer of at least 88 (bytes)');
        }
      }
      const stdin = file === undefined || file === '-';
      if (options.follow) {
        if (kind !== undefined && !FOLLOW_KINDS.includes(kind)) {
          throw usageError(`--follow reads text inputs (${FOLLOW_KINDS.join(', ')}), not '${kind}'`);
        }
        await follow(stdin ? undefined : file, kind as BufferKind | undefined, options.json === true, cpu, io);
        return;
      }
      const result = readMceFile(file ?? '-', {
        ...(kind ? { kind } : {}),
        ...(recordLength ? { recordLength } : {}),
      });
      const out = bufferedWriter(stdoutBytes(io));
      const format: (d: DecodedMce) => string = options.json ? toJsonLine : toText;
      const edac = result.edac ?? [];
      const counters = result.counters ?? [];
      try {
        for (const r of result.records) out.put(format(decodeMce(r, cpu ? { cpu } : {})));
        for (const e of edac) {
          out.put(
            options.json
              ? `${JSON.stringify(edacJson(e))}\n`
              : `${edacSeverity(e.errorType).toUpperCase()}: ${edacSummary(e)}\n\n`,
          );
        }
        if (counters.length > 0) {
          out.put(
            options.json
              ? counters.map((c) => `${JSON.stringify({ edac_controller: c })}\n`).join('')
              : edacCountersText(counters),
          );
        }
      } finally {
        out.flush();
        for (const n of result.notes) io.stderr(`evtrace: ${noteText(n)}\n`);
      }
      if (result.records.length === 0 && edac.length === 0 && counters.length === 0) {
        throw new CliExit(
          CliCode.NoData,
          `no machine-check record in ${stdin ? 'stdin' : file} (read as ${result.kind}): expected machine-check records or EDAC memory errors`,
        );
      }
    });
  registerTrack(mce, io);
  setExamples(
    decode,
    `evtrace mce decode mcelog.txt                    mcelog --ascii input, detected
dmesg | evtrace mce decode                       kernel log lines from stdin
evtrace mce decode --follow /var/log/kern.log    decode the log, then what the kernel adds to it
journalctl -k -f -o json | evtrace mce decode --follow   the journal as it grows
evtrace mce decode --json /var/log/kern.log      one JSON object per record
evtrace mce decode --cpu skylake_server rec.txt  decode as a given CPU
evtrace mce decode /var/lib/rasdaemon/ras-mc_event.db`,
  );
}

/**
 * `--follow`: decodes a growing file (looked at every QUIET_MS; a rotated or truncated one read again from its
 * start) or stdin, a batch of whole lines at a time once the input has been quiet for QUIET_MS, until SIGINT or
 * SIGTERM (or stdin's end).
 */
async function follow(
  file: string | undefined,
  kind: BufferKind | undefined,
  json: boolean,
  cpu: CpuKind | undefined,
  io: CliIO,
): Promise<void> {
  if (file !== undefined) {
    try {
      if (!statSync(file).isFile()) throw usageError(`--follow reads a file or stdin, not ${file}`);
    } catch (error) {
      if (error instanceof CliExit) throw error;
      throw new CliExit(CliCode.Io, `cannot follow ${file}: ${(error as NodeJS.ErrnoException).code ?? error}`);
    }
  }
  const batches = new LineBatches({ ...(kind ? { kind } : {}), file: file ?? '<stdin>' });
  const format: (d: DecodedMce) => string = json ? toJsonLine : toText;
  const emit = (final = false) => {
    const result = batches.take(final);
    if (result === undefined) return;
    const out = bufferedWriter(stdoutBytes(io));
    try {
      for (const r of result.records) out.put(format(decodeMce(r, cpu ? { cpu } : {})));
    } finally {
      out.flush();
      // A batch's count of unrelated log lines says nothing new each time: only located notes are shown.
      for (const n of result.notes) {
        if (n.location.line !== undefined || n.location.offset !== undefined) io.stderr(`evtrace: ${noteText(n)}\n`);
      }
    }
  };
  await new Promise<void>((resolve, reject) => {
    let offset = 0;
    let timer: NodeJS.Timeout | undefined;
    const stop = () => {
      clearTimeout(timer);
      process.removeListener('SIGINT', stop);
      process.removeListener('SIGTERM', stop);
      if (file === undefined) process.stdin.pause();
      try {
        if (file !== undefined) poll(false);
        emit(true);
        resolve();
      } catch (error) {
        reject(error);
      }
    };
    // Reads what the file gained; decodes when it gained nothing since the last look (or a large batch waits).
    const poll = (again: boolean) => {
      let grew = false;
      for (;;) {
        const g = readGrowth(file!, offset);
        offset = g.offset;
        if (g.bytes.length === 0) break;
        batches.push(g.bytes);
        grew = true;
      }
      if (!grew || batches.pending > 1 << 20) emit();
      if (again) timer = setTimeout(() => guard(() => poll(true)), QUIET_MS);
    };
    const guard = (f: () => void) => {
      try {
        f();
      } catch (error) {
        clearTimeout(timer);
        reject(new CliExit(CliCode.Io, `cannot follow ${file}: ${(error as NodeJS.ErrnoException).code ?? error}`));
      }
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    if (file !== undefined) {
      guard(() => poll(true));
      return;
    }
    process.stdin.on('data', (chunk: Buffer) => {
      batches.push(chunk);
      clearTimeout(timer);
      if (batches.pending > 1 << 20) emit();
      timer = setTimeout(() => emit(), QUIET_MS);
    });
    process.stdin.on('end', stop);
    process.stdin.on('error', (error) => reject(error));
  });
}

interface TrackOptions {
  config?: string;
  json?: boolean;
  inputFormat?: string;
  runTriggers?: boolean;
  offline?: boolean;
  textfile?: string;
}

/** The file `--textfile` writes in its directory; node_exporter's textfile collector reads every `*.prom` there. */
export const TEXTFILE_NAME = 'evtrace_mce.prom';

/**
 * Writes `text` as DIR/evtrace_mce.prom the way node_exporter's textfile collector needs it: into a temporary file of
 * the same directory (not `*.prom`, so never read half-written), then renamed over the old one in one step.
 */
function writeTextfile(dir: string, text: string): void {
  const temporary = join(dir, `.${TEXTFILE_NAME}.${process.pid}.tmp`);
  try {
    writeFileSync(temporary, text);
    renameSync(temporary, join(dir, TEXTFILE_NAME));
  } catch (error) {
    rmSync(temporary, { force: true });
    const e = error as NodeJS.ErrnoException;
    throw new CliExit(CliCode.Io, `--textfile: cannot write ${join(dir, TEXTFILE_NAME)}: ${e.code ?? e.message}`);
  }
}

/** `evtrace mce track`: mcelog's thresholds and triggers over a stream of records. */
function registerTrack(mce: Command, io: CliIO): void {
  const track = addCommand(mce, 'track')
    .summary('count errors against mcelog-style leaky-bucket thresholds and report (or run) triggers')
    .description(
      `Feeds every record of FILE (or stdin) through the tracker: per-DIMM and per-socket memory error buckets, per-page
corrected errors with the page action, yellow cache thresholds, bus, IOMCA and unknown errors, with the semantics of
mcelog's configuration file given with --config (mcelog.conf(5) keys; unknown keys are reported). Prints one line per
threshold crossed (or a JSON object with --json: kind, message, trigger, env, action, address). --run-triggers runs
the configured trigger commands with mcelog's environment; --offline writes the page actions to
/sys/devices/system/memory (soft_offline_page, hard_offline_page). --textfile DIR writes the machine checks per bank
and per DIMM and the thresholds crossed, in Prometheus' text format, to DIR/${TEXTFILE_NAME} for node_exporter's
textfile collector (--collector.textfile.directory DIR), replacing the file in one rename.`,
    )
    .argument('[file]', "input file or directory; '-' or nothing for stdin")
    .requiredOption('-c, --config <file>', 'mcelog configuration file')
    .option('--json', 'one JSON object per event per line')
    .option('--input-format <kind>', `force the input kind (${KINDS.join('|')})`)
    .option('--run-triggers', 'run the trigger commands')
    .option('--offline', 'apply page offline actions through sysfs (root)')
    .option('--textfile <dir>', `write the counts to DIR/${TEXTFILE_NAME} for node_exporter's textfile collector`)
    .action(async (file: string | undefined, options: TrackOptions) => {
      let config: TrackerConfig;
      try {
        const parsed = parseMcelogConfig(readInput(options.config!).toString('utf8'), options.config);
        config = parsed.config;
        for (const n of parsed.notes) io.stderr(`evtrace: ${noteText(n)}\n`);
      } catch (error) {
        // The configuration is the command line's: a usage error, with the package's code when it has one.
        const e = error as NodeJS.ErrnoException;
        if (e instanceof MceError || e instanceof TraceFormatError)
          throw new CliExit(e.code, `--config: ${e.message}`, ExitCode.Usage);
        throw usageError(`--config: ${options.config}: ${e.code ?? e.message}`);
      }
      const kind = options.inputFormat as InputKind | undefined;
      if (kind !== undefined && !KINDS.includes(kind)) {
        throw usageError(`--input-format must be one of ${KINDS.join(', ')}, not '${kind}'`);
      }
      const result = readMceFile(file ?? '-', kind ? { kind } : {});
      if (
        options.textfile !== undefined &&
        statSync(options.textfile, { throwIfNoEntry: false })?.isDirectory() !== true
      ) {
        throw usageError(`--textfile: ${options.textfile} is not a directory`);
      }
      for (const n of result.notes) io.stderr(`evtrace: ${noteText(n)}\n`);
      const tracker = new Tracker(config);
      const counters = new MceCounters();
      const crossings = new Map<string, number>();
      const runner = new TriggerRunner({
        ...(config.trigger.directory ? { directory: config.trigger.directory } : {}),
        childrenMax: config.trigger.childrenMax,
      });
      let failed = 0;
      for (const r of result.records) {
        const decoded = decodeMce(r);
        counters.observe(decoded);
        for (const e of tracker.observe(decoded)) {
          crossings.set(e.kind, (crossings.get(e.kind) ?? 0) + 1);
          if (options.json) {
            io.stdout(`${JSON.stringify(trackJson(e))}\n`);
          } else {
            io.stdout(
              `${e.kind}: ${e.message}${e.trigger ? ` [trigger ${e.trigger}]` : ''}${e.action ? ` [${e.action} 0x${e.address!.toString(16)}]` : ''}\n`,
            );
          }
          try {
            if (options.offline && e.action) applyPageAction(e);
            if (options.runTriggers) {
              const t = await runner.run(e);
              if (t && t.exitCode !== 0) io.stderr(`evtrace: trigger ${t.command} exited ${t.exitCode}\n`);
            }
          } catch (error) {
            if (!(error instanceof MceError)) throw error;
            if (e.action && e.address !== undefined) tracker.pageActionFailed(e.address);
            io.stderr(`evtrace: ${error.code}: ${error.message}\n`);
            failed++;
          }
        }
      }
      if (options.textfile !== undefined) {
        const crossed: MceMetric = {
          name: 'evtrace_mce_track_threshold_crossings_total',
          help: 'Leaky-bucket thresholds crossed (mcelog.conf) by evtrace mce track, by kind of bucket.',
          type: 'counter',
          labelNames: ['kind'],
          collect: () => [...crossings].map(([kind, value]) => ({ labels: { kind }, value })),
        };
        writeTextfile(options.textfile, exposition([...counters.metrics(), crossed]));
      }
      if (failed > 0) throw new CliExit('ERR_MCE_ACTION', `${failed} action(s) failed`);
    });
  setExamples(
    track,
    `evtrace mce track -c /etc/mcelog/mcelog.conf /var/log/kern.log
dmesg | evtrace mce track -c mcelog.conf --json
evtrace mce track -c mcelog.conf --run-triggers --offline saved.mce
evtrace mce track -c mcelog.conf --textfile /var/lib/prometheus/node-exporter /var/log/kern.log`,
  );
}

/** One event of `mce track --json` (hw-mce's `schemas/track-event.json`): every key present, null when unset. */
function trackJson(e: TrackerEvent): Record<string, unknown> {
  return {
    kind: e.kind,
    message: e.message,
    trigger: e.trigger ?? null,
    env: e.env,
    action: e.action ?? null,
    address: e.address === undefined ? null : `0x${e.address.toString(16)}`,
    summary: e.record.summary,
  };
}
