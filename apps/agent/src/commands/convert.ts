import { writeSync } from 'node:fs';
import {
  checkOutputDir,
  createTextFormatter,
  type OutputAccess,
  type TraceDatReader,
  TraceFormatError,
  writeCtfTrace,
  writeFileAtomically,
  writePerfettoJson,
  writePerfettoTrace,
  writeTraceDat,
  writeTraceDatPages,
} from '@evtrace/trace-format';
import type { Command } from 'commander';
import { ExitCode } from '../exit-codes.ts';
import { setExamples } from '../help.ts';
import { addCommand, CliExit, type CliIO } from '../program.ts';
import { bufferedWriter, jsonLines, openInput, reportNotes } from './cat.ts';

const TARGETS = ['ctf', 'tracedat', 'text', 'jsonl', 'perfetto', 'perfetto-json'] as const;
type Target = (typeof TARGETS)[number];

interface ConvertOptions {
  output: string;
  to: string;
  filter?: string;
  lenient?: boolean;
  fileVersion?: string;
  compression?: string;
  buffer?: string;
  share?: boolean;
  force?: boolean;
}

/** Runs `fn` with functions writing text or bytes to `file`, which is replaced only once `fn` returns (see writeFileAtomically). */
/** The outputs `-o -` can write to standard output: text, written as events arrive. */
const STREAMED: readonly Target[] = ['text', 'jsonl', 'perfetto-json'];

/** Why `-o -` cannot take `to`. */
const NOT_STREAMED: Partial<Record<Target, string>> = {
  ctf: 'a CTF trace is a directory of files',
  tracedat: 'a trace.dat file is written with its section offsets filled in afterwards',
  perfetto: 'the Perfetto trace is binary; write it to a file',
};

function withFile(
  file: string,
  access: OutputAccess,
  fn: (write: (text: string) => void, writeBytes: (bytes: Uint8Array) => void) => number,
  io?: CliIO,
): number {
  if (file === '-' && io !== undefined) {
    // Standard output: written as it goes, there is nothing to rename.
    const out = bufferedWriter(io.stdout);
    const n = fn(
      (text) => out.put(text),
      () => {
        throw new Error('binary output to standard output');
      },
    );
    out.flush();
    return n;
  }
  return writeFileAtomically(
    file,
    (fd) => {
      const out = bufferedWriter((text) => writeSync(fd, text));
      const n = fn(
        (text) => out.put(text),
        (bytes) => {
          out.flush();
          for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
        },
      );
      out.flush();
      return n;
    },
    access,
  );
}

function checkOptions(options: ConvertOptions): { to: Target; version: 6 | 7; compression: 'none' | 'zstd' | 'zlib' } {
  if (!(TARGETS as readonly string[]).includes(options.to)) {
    throw new CliExit(ExitCode.Usage, `--to must be one of ${TARGETS.join(', ')}, not '${options.to}'`);
  }
  const version = Number(options.fileVersion ?? 7);
  if (version !== 6 && version !== 7) throw new CliExit(ExitCode.Usage, '--file-version must be 6 or 7');
  const compression = options.compression ?? (version === 7 ? 'zstd' : 'none');
  if (compression !== 'none' && compression !== 'zstd' && compression !== 'zlib') {
    throw new CliExit(ExitCode.Usage, '--compression must be none, zstd or zlib');
  }
  if (version === 6 && compression !== 'none')
    throw new CliExit(ExitCode.Usage, 'trace.dat version 6 is never compressed');
  return { to: options.to as Target, version, compression };
}

/** `evtrace convert INPUT -o OUTPUT --to KIND`. */
export function registerConvert(program: Command, io: CliIO): void {
  const cmd = addCommand(program, 'convert')
    .summary('convert a trace to CTF, trace.dat, text, JSON lines or Perfetto')
    .description(
      `Reads INPUT (CTF directory, trace.dat file, or raw per-CPU pages directory; the kind is detected) and writes
OUTPUT as: ctf (a CTF 1.8 directory babeltrace2 reads), tracedat (a trace-cmd trace.dat, version 7 with zstd by
default, that trace-cmd report reads), text (trace-cmd report or babeltrace2 style), jsonl (one JSON object per
event), perfetto (Perfetto's protobuf trace: per-CPU ftrace bundles with sched_switch, sched_waking, sched_wakeup,
task_rename and print in Perfetto's own fields, so that ui.perfetto.dev shows CPU and thread views, other events as
generic ftrace events, processes and threads described where the trace shows their thread group: execs and
task_newtask), perfetto-json (the Chrome trace-event JSON that ui.perfetto.dev and chrome://tracing open, events as
instants). Events from CTF written as
trace.dat get a synthesized ftrace format. A trace.dat written as trace.dat without --filter keeps its pages as
they are, as trace-cmd convert does (no event is decoded), with the file's own formats, kallsyms and cmdlines;
files evtrace cannot copy that way (big-endian, with 4-byte longs, with a timestamp offset) are decoded and
encoded again, with a note saying why. Each copied page is checked as a reader walks it: a corrupt one fails the
conversion with its file and byte offset, or with --lenient is left out and counted.
OUTPUT is written under a temporary name beside it and renamed over it once complete (a CTF directory is built
beside it and swapped in), so a failed conversion leaves an existing OUTPUT as it was; a non-empty CTF directory is
replaced only with --force. OUTPUT is readable by its owner only (0600, a directory 0700), as perf keeps perf.data,
since traces hold kernel addresses; --share makes it readable by everyone (0644, 0755, less the umask). -o - writes
text, jsonl and perfetto-json to standard output as the events are read; the other kinds need a path.`,
    )
    .argument('<input>', 'CTF trace directory, trace.dat file, or raw-pages directory')
    .requiredOption(
      '-o, --output <path>',
      "output file (a directory for --to ctf); '-' for stdout (text, jsonl, perfetto-json)",
    )
    .requiredOption('--to <kind>', `output kind: ${TARGETS.join(', ')}`)
    .option('--filter <expr>', 'keep events matching an ftrace filter expression')
    .option('--lenient', 'report corrupt pages or packets on stderr and continue (a cut file: its whole pages)')
    .option('--buffer <name>', 'trace.dat input: read the instance buffer NAME instead of the top one')
    .option('--file-version <n>', 'trace.dat version, 6 or 7 (default 7)')
    .option('--compression <alg>', 'trace.dat v7 compression: zstd (default), zlib or none')
    .option('--share', 'make OUTPUT readable by every user (default: its owner only, as it holds kernel addresses)')
    .option('--force', 'replace a non-empty OUTPUT directory (--to ctf), all it holds, once the new trace is complete')
    .action((input: string, options: ConvertOptions) => {
      const { to, version, compression } = checkOptions(options);
      if (options.output === '-' && !STREAMED.includes(to)) {
        throw new CliExit(
          ExitCode.Usage,
          `-o -: --to ${to} cannot go to standard output (${NOT_STREAMED[to]}); give a path (standard output takes ${STREAMED.join(', ')})`,
        );
      }
      const access: OutputAccess = options.share === true ? { share: true } : {};
      try {
        // Refused before any input is read, as it would be after.
        if (to === 'ctf') checkOutputDir(options.output, { force: options.force === true });
      } catch (error) {
        throw new CliExit(ExitCode.Failure, `${(error as TraceFormatError).code}: ${(error as Error).message}`);
      }
      const opened = openInput(input, options);
      const { reader } = opened;
      let n = 0;
      try {
        switch (to) {
          case 'ctf':
            // Spread, not rebuilt: a CTF reader's `trace` carries the env and stream event context the writer keeps.
            n = writeCtfTrace({ ...reader, events: opened.events }, options.output, {
              ...access,
              force: options.force === true,
            });
            break;
          case 'tracedat': {
            // trace.dat to trace.dat with every event kept: the pages are copied as they are, as trace-cmd convert
            // does, instead of decoded and encoded again (3-4x faster in the ftrace bench, and nothing is lost that
            // the decoder skips, such as the kernel's lost-event marks).
            const copy =
              reader.kind === 'tracedat' && options.filter === undefined
                ? (reader as TraceDatReader).pagesInput()
                : undefined;
            if (copy !== undefined && 'input' in copy) {
              const bytes = writeTraceDatPages(options.output, copy.input, { version, compression, ...access });
              const cpus = copy.input.cpus.filter((c) => c.size > 0).length;
              const skipped = copy.skipped > 0 ? `; ${copy.skipped} corrupt pages left out` : '';
              io.stderr(
                `evtrace: pages of ${cpus} CPUs copied to ${options.output} (tracedat v${version}, ${bytes} bytes${skipped})\n`,
              );
              return;
            }
            if (copy !== undefined)
              opened.notes.push(`pages not copied as they are (${copy.reason}): events re-encoded`);
            const meta = reader.metadata;
            n = writeTraceDat(options.output, reader.eventClasses, opened.events(), {
              version,
              compression,
              ...access,
              ...(meta !== undefined
                ? {
                    cmdlines: meta.cmdlines,
                    ...(meta.kallsymsText !== undefined ? { kallsyms: meta.kallsymsText } : {}),
                    ...(meta.printkText !== undefined ? { printk: meta.printkText } : {}),
                    ...(meta.clock !== undefined ? { clock: meta.clock } : {}),
                    pageSize: meta.page.pageSize,
                  }
                : {}),
            }).events;
            break;
          }
          case 'text': {
            const line = createTextFormatter(reader);
            n = withFile(
              options.output,
              access,
              (write) => {
                let k = 0;
                for (const e of opened.events()) {
                  write(`${line(e)}\n`);
                  k++;
                }
                return k;
              },
              io,
            );
            break;
          }
          case 'jsonl':
            n = withFile(
              options.output,
              access,
              (write) => {
                const line = jsonLines(opened);
                let k = 0;
                for (const e of opened.events()) {
                  write(line(e));
                  k++;
                }
                return k;
              },
              io,
            );
            break;
          case 'perfetto': {
            const cmdlines = reader.metadata?.cmdlines;
            n = withFile(options.output, access, (_, writeBytes) =>
              writePerfettoTrace(opened.events(), writeBytes, cmdlines !== undefined ? { cmdlines } : {}),
            );
            break;
          }
          case 'perfetto-json':
            n = withFile(
              options.output,
              access,
              (write) =>
                writePerfettoJson(
                  opened.events(),
                  write,
                  reader.metadata ? { cmdlines: reader.metadata.cmdlines } : {},
                ),
              io,
            );
            break;
        }
      } catch (error) {
        if (error instanceof TraceFormatError) {
          // A write error is about an event of the input: name the input, as the readers' own errors do.
          const where = error.code === 'ERR_TRACE_CTF_WRITE' ? `${input}: ` : '';
          throw new CliExit(ExitCode.Failure, `${error.code}: ${where}${error.message}`);
        }
        throw error;
      } finally {
        reportNotes(io, opened);
      }
      io.stderr(
        `evtrace: ${n} events written to ${options.output === '-' ? 'standard output' : options.output} (${to})\n`,
      );
    });
  setExamples(
    cmd,
    `evtrace convert trace.dat -o trace.pftrace --to perfetto   open trace.pftrace in ui.perfetto.dev
evtrace convert ./raw -o trace.dat --to tracedat            then: trace-cmd report trace.dat
evtrace convert trace.dat -o ctf --to ctf                   then: babeltrace2 ctf
evtrace convert ./ctf -o out.dat --to tracedat --file-version 6`,
  );
}
