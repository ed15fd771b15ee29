import { readdirSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import {
  type ByteOut,
  checkOutputDir,
  copyTraceDat,
  type OutputAccess,
  type TraceDatReader,
  type TraceEvent,
  TraceFormatError,
  writeCtfTrace,
  writeFileAtomically,
  writePerfettoJson,
  writePerfettoTrace,
  writeTraceDat,
  writeTraceDatPages,
} from '@evtrace/trace-format';
import type { Command } from 'commander';
import { addCommand, type CliIO } from '../command.ts';
import { ctfLineReader, writeCtfInputLines } from '../ctf-lines.ts';
import { CliExit, usageError } from '../exit-codes.ts';
import { setExamples } from '../help.ts';
import { bufferedWriter, byteWriter, stdoutBytes } from '../output/buffered-writer.ts';
import { withProgress } from '../output/progress.ts';
import { jsonLineWriter, openInput, reportNotes, textLines } from '../trace-input.ts';

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
  json?: boolean;
}

/** The bytes a finished output holds: a file's size, a CTF directory's files summed. */
function outputBytes(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.size;
  let total = 0;
  for (const name of readdirSync(path)) total += outputBytes(join(path, name));
  return total;
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

/** Writes each event's line (text or JSON, as bytes) to `write` in large chunks; returns how many. */
function writeLines(
  events: Iterable<TraceEvent>,
  line: (e: TraceEvent, out: ByteOut) => void,
  write: (bytes: Uint8Array) => void,
): number {
  const sink = byteWriter(write);
  let k = 0;
  for (const e of events) {
    line(e, sink.out);
    sink.put();
    k++;
  }
  sink.flush();
  return k;
}

function withFile(
  file: string,
  access: OutputAccess,
  fn: (write: (text: string) => void, writeBytes: (bytes: Uint8Array) => void) => number,
  io?: CliIO,
): number {
  if (file === '-' && io !== undefined) {
    // Standard output: written as it goes, there is nothing to rename.
    const out = bufferedWriter(stdoutBytes(io));
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
      const out = bufferedWriter((bytes) => {
        for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
      });
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

/** Runs `fn` with a writer of bytes to `file` (standard output for `-`), replaced atomically as {@link withFile}. */
function bytesTo(
  file: string,
  access: OutputAccess,
  io: CliIO,
  fn: (write: (bytes: Uint8Array) => void) => number,
): number {
  if (file === '-') return fn(stdoutBytes(io));
  return withFile(file, access, (_, writeBytes) => fn(writeBytes));
}

function checkOptions(options: ConvertOptions): { to: Target; version: 6 | 7; compression: 'none' | 'zstd' | 'zlib' } {
  if (!(TARGETS as readonly string[]).includes(options.to)) {
    throw usageError(`--to must be one of ${TARGETS.join(', ')}, not '${options.to}'`);
  }
  const version = Number(options.fileVersion ?? 7);
  if (version !== 6 && version !== 7) throw usageError('--file-version must be 6 or 7');
  const compression = options.compression ?? (version === 7 ? 'zstd' : 'none');
  if (compression !== 'none' && compression !== 'zstd' && compression !== 'zlib') {
    throw usageError('--compression must be none, zstd or zlib');
  }
  if (version === 6 && compression !== 'none') throw usageError('trace.dat version 6 is never compressed');
  return { to: options.to as Target, version, compression };
}

/**
 * trace.dat to trace.dat of its own version and compression, every event kept: the file's sections and compressed
 * chunks copied as they are, nothing decoded or compressed again (see copyTraceDat). Undefined where that does not
 * apply; the pages are then copied, or the events encoded again.
 */
function copyWhole(
  input: string,
  options: ConvertOptions,
  version: 6 | 7,
  compression: 'none' | 'zstd' | 'zlib',
  access: OutputAccess,
): { bytes: number; cpus: number } | undefined {
  if (options.filter !== undefined || options.lenient === true) return undefined;
  if (statSync(input, { throwIfNoEntry: false })?.isFile() !== true) return undefined;
  const copied = copyTraceDat(input, options.output, {
    version,
    compression,
    ...access,
    ...(options.buffer !== undefined ? { buffer: options.buffer } : {}),
  });
  return 'bytes' in copied ? copied : undefined;
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
trace.dat get a synthesized ftrace format, and are written as they are read, a few pages per CPU held at a time.
A version 7 trace.dat written as trace.dat of its own compression (zstd by default) without --filter or --lenient
is copied as it is: its sections and compressed chunks byte for byte (nothing decoded, decompressed or compressed
again), its options and every buffer kept (only the one --buffer names, as the top one, with --buffer); its
structure is checked (each section where its option says, each chunk inside the file and starting as zstd or zlib
data does), not the pages inside the chunks. Any other trace.dat written as trace.dat without --filter keeps its
pages as they are, as trace-cmd convert does (no event is decoded), with the file's own formats, kallsyms and
cmdlines; files evtrace cannot copy that way (big-endian, with 4-byte longs, with a timestamp offset) are decoded
and encoded again, with a note saying why. Each page so copied is checked as a reader walks it: a corrupt one fails
the conversion with its file and byte offset, or with --lenient is left out and counted.
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
    .option('--json', 'print the summary as one JSON object on stdout (schemas/convert.json) instead of text on stderr')
    .action((input: string, options: ConvertOptions) => {
      const { to, version, compression } = checkOptions(options);
      if (options.output === '-' && options.json === true)
        throw usageError('--json: the summary goes to standard output, which -o - takes for the events; give a path');
      // What --json prints at the end: the text summary's facts.
      const summary = (events: number | null, copied?: { bytes: number; skipped: number }) =>
        `${JSON.stringify({
          input,
          output: options.output,
          to,
          events,
          pagesCopied: copied !== undefined,
          skippedPages: copied?.skipped ?? 0,
          bytes: copied?.bytes ?? (options.output === '-' ? null : outputBytes(options.output)),
        })}\n`;
      if (options.output === '-' && !STREAMED.includes(to)) {
        throw usageError(
          `-o -: --to ${to} cannot go to standard output (${NOT_STREAMED[to]}); give a path (standard output takes ${STREAMED.join(', ')})`,
        );
      }
      const access: OutputAccess = options.share === true ? { share: true } : {};
      // Refused before any input is read, as it would be after.
      if (to === 'ctf') checkOutputDir(options.output, { force: options.force === true });
      const copied = to === 'tracedat' ? copyWhole(input, options, version, compression, access) : undefined;
      if (copied !== undefined) {
        if (options.json === true) io.stdout(summary(null, { bytes: copied.bytes, skipped: 0 }));
        else
          io.stderr(
            `evtrace: pages of ${copied.cpus} CPUs copied to ${options.output} (tracedat v${version}, ${copied.bytes} bytes)\n`,
          );
        return;
      }
      const opened = openInput(input, options);
      const { reader } = opened;
      const events = withProgress(opened.events, io, `convert --to ${to}`);
      // CTF to text or JSON lines: written from the packets (no progress line: it counts events as they are read).
      const ctf = io.progress === true ? undefined : ctfLineReader(opened);
      let n = 0;
      try {
        switch (to) {
          case 'ctf': {
            // A CTF input that has what the writer would add (times, CPUs) is copied packet by packet, each checked
            // as it is read, instead of decoded and encoded again.
            const copied =
              ctf !== undefined && options.filter === undefined
                ? ctf.copy(options.output, { ...access, force: options.force === true })
                : undefined;
            if (copied !== undefined) {
              n = copied;
              break;
            }
            // Spread, not rebuilt: a CTF reader's `trace` carries the env and stream event context the writer keeps.
            n = writeCtfTrace({ ...reader, events }, options.output, {
              ...access,
              force: options.force === true,
            });
            break;
          }
          case 'tracedat': {
            // trace.dat to trace.dat with every event kept: the pages are copied as they are, as trace-cmd convert
            // does, instead of decoded and encoded again: faster (trace-format's ftrace bench prints by how much), and
            // nothing is lost that the decoder skips, such as the kernel's lost-event marks.
            const copy =
              reader.kind === 'tracedat' && options.filter === undefined
                ? (reader as TraceDatReader).pagesInput()
                : undefined;
            if (copy !== undefined && 'input' in copy) {
              const bytes = writeTraceDatPages(options.output, copy.input, { version, compression, ...access });
              const cpus = copy.input.cpus.filter((c) => c.size > 0).length;
              const skipped = copy.skipped > 0 ? `; ${copy.skipped} corrupt pages left out` : '';
              if (options.json === true) io.stdout(summary(null, { bytes, skipped: copy.skipped }));
              else
                io.stderr(
                  `evtrace: pages of ${cpus} CPUs copied to ${options.output} (tracedat v${version}, ${bytes} bytes${skipped})\n`,
                );
              return;
            }
            if (copy !== undefined)
              opened.notes.push(`pages not copied as they are (${copy.reason}): events re-encoded`);
            // CTF: records written from the packets as they are read, the same bytes as of its events.
            if (ctf !== undefined && options.filter === undefined) {
              n = ctf.writeTraceDat(options.output, { version, compression, ...access }).events;
              break;
            }
            const meta = reader.metadata;
            n = writeTraceDat(options.output, reader.eventClasses, events(), {
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
            if (ctf !== undefined) {
              n = bytesTo(options.output, access, io, (write) =>
                writeCtfInputLines(ctf, opened, 'text', write, undefined, options.filter),
              );
              break;
            }
            n = bytesTo(options.output, access, io, (write) => writeLines(events(), textLines(reader), write));
            break;
          }
          case 'jsonl':
            if (ctf !== undefined) {
              n = bytesTo(options.output, access, io, (write) =>
                writeCtfInputLines(ctf, opened, 'json', write, undefined, options.filter),
              );
              break;
            }
            n = bytesTo(options.output, access, io, (write) => writeLines(events(), jsonLineWriter(opened), write));
            break;
          case 'perfetto': {
            const cmdlines = reader.metadata?.cmdlines;
            n = withFile(options.output, access, (_, writeBytes) =>
              writePerfettoTrace(events(), writeBytes, cmdlines !== undefined ? { cmdlines } : {}),
            );
            break;
          }
          case 'perfetto-json':
            n = withFile(
              options.output,
              access,
              (write) =>
                writePerfettoJson(events(), write, reader.metadata ? { cmdlines: reader.metadata.cmdlines } : {}),
              io,
            );
            break;
        }
      } catch (error) {
        // A write error is about an event of the input: name the input, as the readers' own errors do.
        if (error instanceof TraceFormatError && error.code === 'ERR_TRACE_CTF_WRITE')
          throw CliExit.around(error, `${input}: `);
        throw error;
      } finally {
        reportNotes(io, opened);
      }
      if (options.json === true) io.stdout(summary(n));
      else
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
