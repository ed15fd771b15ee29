import type { Command } from 'commander';
import { addCommand, type CliIO } from '../command.ts';
import { ctfLineReader, writeCtfInputLines } from '../ctf-lines.ts';
import { usageError } from '../exit-codes.ts';
import { setExamples } from '../help.ts';
import { byteWriter, stdoutBytes } from '../output/buffered-writer.ts';
import { printSliced, sliceReading } from '../sliced-lines.ts';
import { jsonLineWriter, openInput, printNotes, reportNotes, textLines } from '../trace-input.ts';

interface CatOptions {
  json?: boolean;
  filter?: string;
  lenient?: boolean;
  buffer?: string;
  allBuffers?: boolean;
  limit?: string;
  live?: string;
  socket?: string;
  threads?: string;
}

/** `cat` on several threads (see sliced-lines.ts). */
async function catSliced(
  input: string,
  options: CatOptions,
  plan: NonNullable<ReturnType<typeof sliceReading>>,
  io: CliIO,
): Promise<void> {
  const write = stdoutBytes(io);
  const open = {
    json: options.json === true,
    ...(options.filter !== undefined ? { filter: options.filter } : {}),
    ...(options.buffer !== undefined ? { buffer: options.buffer } : {}),
    ...(options.allBuffers === true ? { allBuffers: true } : {}),
  };
  const read = await printSliced(input, open, plan, write);
  printNotes(io, read.warnings, read.notes, '--all-buffers');
  if (read.failure !== undefined) throw read.failure;
}

/** `evtrace cat INPUT`: prints the events of a trace. */
export function registerCat(program: Command, io: CliIO): void {
  const cmd = addCommand(program, 'cat')
    .summary('print the events of a trace (CTF directory, trace.dat, or raw per-CPU pages)')
    .description(
      `Prints every event of INPUT in timestamp order: as trace-cmd report prints ftrace data (trace.dat or a directory
of cpuN.raw pages beside an events/ tree copied from tracefs), its plugins' text (kmem call sites, sched_switch,
sched_wakeup, hrtimer, futex, tlb_flush) and its "CPU:N [N EVENTS DROPPED]" lines where the kernel lost events
included; as babeltrace2 prints CTF. With --json, one object per line, valid against @evtrace/trace-format/schemas/event.json: {"ts_ns": "<decimal>", "cpu": N|null,
"event": "system:name", "pid": N|null, "comm": NAME|null, "flags": {irqs_off, need_resched, preempt_resched,
hardirq, softirq, nmi, preempt_depth, migrate_disable}|null, "fields": {...}}. Each field has one JSON type for
every event of its class, taken from the event's format: 64-bit integers are decimal strings, addresses and
integers the format prints as %p or hex are "0x..." strings, narrower integers are numbers. comm is the name the
task had when the event fired (pid 0 is swapper/CPU, as the kernel names it); the events of a trace.dat instance
buffer (--buffer, --all-buffers) carry "buffer": "NAME".
In --filter, COMM is the name a task had when the event fired, replayed from the recording's sched_switch,
sched_process_fork, sched_process_exec and task_rename events; a task's events before any of these name it take the
first name the recording shows it had (a task_rename's oldcomm), read ahead in a second pass over INPUT, and
saved_cmdlines names the tasks the recording never does.
Warnings go to stderr, never to stdout. A trace is read at offsets: a FIFO or device is refused, naming it.
A damaged input (a trace.dat or cpuN.raw cut short, a corrupt page or chunk) fails naming the file and byte offset;
with --lenient every whole page before the damage is printed, per CPU, and the damage is named on stderr.`,
    )
    .argument('[input]', 'CTF trace directory, trace.dat file, or raw-pages directory')
    .option('--json', 'one JSON object per event per line')
    .option('--filter <expr>', 'keep events matching an ftrace filter expression (e.g. "bytes_req > 64")')
    .option('--lenient', 'report corrupt pages or packets on stderr and continue (a cut file: its whole pages)')
    .option('--buffer <name>', 'trace.dat: read the instance buffer NAME (trace-cmd record -B) instead of the top one')
    .option(
      '--all-buffers',
      'trace.dat: every buffer, merged by time, each line after its buffer name (as trace-cmd report)',
    )
    .option('-n, --limit <n>', 'print only the first N events (after --filter)')
    .option(
      '--threads <n>',
      'ftrace data: read on N threads, each printing its share of the time (1: this one only); default: 1 below 4 cores, else one per core up to 4 for recordings of 256 Ki records or more',
    )
    .option('--live <session>', "a running agent session's events as they arrive, after its recent window (no INPUT)")
    .option('--socket <path>', "with --live: the agent's control socket")
    .action(async (input: string | undefined, options: CatOptions) => {
      const limit = options.limit === undefined ? Number.POSITIVE_INFINITY : Number(options.limit);
      if (options.limit !== undefined && !/^\d+$/.test(options.limit))
        throw usageError(`--limit must be a non-negative integer, not '${options.limit}'`);
      if (options.live !== undefined) {
        if (input !== undefined || options.filter !== undefined)
          throw usageError('--live takes no INPUT and no --filter (the session has its own)');
        const { catLive } = await import('./session.ts');
        return catLive(
          options.live,
          { json: options.json === true, limit, ...(options.socket ? { socket: options.socket } : {}) },
          io,
        );
      }
      if (input === undefined) throw usageError('cat needs INPUT (or --live SESSION)');
      if (options.allBuffers && options.buffer !== undefined)
        throw usageError('--buffer and --all-buffers contradict each other');
      const threads = options.threads === undefined ? undefined : Number(options.threads);
      if (threads !== undefined && (!/^\d+$/.test(options.threads!) || threads < 1 || threads > 64))
        throw usageError(`--threads must be an integer from 1 to 64, not '${options.threads}'`);
      const opened = openInput(input, options);
      const plan = sliceReading(input, opened, {
        ...(threads !== undefined ? { threads } : {}),
        lenient: options.lenient === true,
        limited: options.limit !== undefined,
      });
      // Returned, not awaited: this reader is let go while the threads read with their own.
      if (plan !== undefined) return catSliced(input, options, plan, io);
      const ctf = ctfLineReader(opened);
      if (ctf !== undefined) {
        try {
          writeCtfInputLines(ctf, opened, options.json ? 'json' : 'text', stdoutBytes(io), limit, options.filter);
        } finally {
          reportNotes(io, opened, '--all-buffers');
        }
        return;
      }
      // JSON or text lines are written as bytes into the output buffer itself.
      const line = options.json ? jsonLineWriter(opened) : textLines(opened.reader);
      const sink = byteWriter(stdoutBytes(io));
      try {
        let printed = 0;
        // Stops reading at the limit: the rest of a large trace is never decoded.
        for (const e of opened.events()) {
          if (printed++ >= limit) break;
          line(e, sink.out);
          sink.put();
        }
      } finally {
        sink.flush();
        reportNotes(io, opened, '--all-buffers');
      }
    });
  setExamples(
    cmd,
    `evtrace cat trace.dat                           the text trace-cmd report prints
evtrace cat trace.dat --json --filter 'bytes_req > 1024'
evtrace cat trace.dat -n 20                      the first 20 events
evtrace cat ./raw                                raw pages: raw/cpu0.raw, raw/events/header_page, raw/events/kmem/kmalloc/format
evtrace cat ./ctf-trace                          babeltrace2 style text
evtrace cat --live flight                        a running agent session's events (losses of this viewer on stderr)`,
  );
}
