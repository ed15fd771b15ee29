import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FilterError, type ParseOptions, parseCpuList, parseFilter, parseKallsyms } from '@evtrace/filters';
import { type EventClass, parseFormatFile, readInput } from '@evtrace/trace-format';
import type { Command } from 'commander';
import { addCommand, type CliIO } from '../command.ts';
import { CliCode, CliExit, ExitCode, usageError } from '../exit-codes.ts';
import { setExamples } from '../help.ts';

interface CheckOptions {
  event: string;
  formats?: string;
  json?: boolean;
  kallsyms?: string;
  nrCpus?: string;
}

/** The tracefs mount point from /proc/mounts, if any. */
function tracefsRoot(): string | undefined {
  try {
    return readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((l) => l.split(' '))
      .find((f) => f[2] === 'tracefs')?.[1];
  } catch {
    return undefined;
  }
}

function loadEventClass(event: string, formats: string | undefined): EventClass {
  const m = /^([A-Za-z0-9_.-]+):([A-Za-z0-9_.-]+)$/.exec(event);
  if (m === null) throw usageError(`--event must be SYSTEM:EVENT, got '${event}'`);
  const [, system, name] = m as unknown as [string, string, string];
  let dir = formats;
  if (dir === undefined) {
    const root = tracefsRoot();
    if (root === undefined) {
      throw new CliExit(
        'ERR_TRACEFS_NOT_FOUND',
        'tracefs is not mounted: mount it or pass --formats DIR (laid out like events/)',
      );
    }
    dir = join(root, 'events');
  }
  const file = join(dir, system, name, 'format');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CliExit(CliCode.Io, `${file}: ${code === 'ENOENT' ? `no event ${event}` : String(code)}`);
  }
  return parseFormatFile(text, { file, system });
}

function parseOptions(expr: string, options: CheckOptions): ParseOptions {
  let symbols: ParseOptions['symbols'];
  const kallsyms = options.kallsyms ?? '/proc/kallsyms';
  // Reading 100k+ symbols costs time: only when a .function predicate may need them.
  if (expr.includes('.function') || options.kallsyms !== undefined) {
    try {
      const text = readInput(kallsyms).toString('utf8');
      // Without privileges every address reads 0: no symbol table then.
      if (!/^0+ /.test(text)) symbols = parseKallsyms(text);
    } catch (error) {
      if (options.kallsyms !== undefined) throw CliExit.around(error, `${kallsyms}: `);
    }
  }
  let nrCpuIds: number | undefined;
  if (options.nrCpus !== undefined) {
    nrCpuIds = Number(options.nrCpus);
    if (!Number.isInteger(nrCpuIds) || nrCpuIds < 1) throw usageError('--nr-cpus must be a positive integer');
  } else {
    try {
      const cpus = parseCpuList(readFileSync('/sys/devices/system/cpu/possible', 'utf8').trim(), 1 << 16);
      if (cpus && cpus.size > 0) nrCpuIds = Math.max(...cpus) + 1;
    } catch {
      // Keep the library default.
    }
  }
  return { ...(symbols ? { symbols } : {}), ...(nrCpuIds ? { nrCpuIds } : {}) };
}

/** `evtrace filter check`: would the kernel accept this filter for this event? */
export function registerFilter(program: Command, io: CliIO): void {
  const filter = addCommand(program, 'filter')
    .summary('check ftrace filter expressions as the kernel would')
    .description('Work with ftrace event filters (the language of tracefs events/*/*/filter).');
  const check = addCommand(filter, 'check')
    .summary('say whether the kernel would accept a filter, and where it would fail')
    .description(
      `Parses and type-checks EXPR against the event's format exactly as Linux does when the filter is written to
tracefs: exit 0 when the kernel would accept it, 3 when it would reject it, printing the kernel's message under a
caret at the kernel's column (0-based, in bytes). Event formats come from DIR (laid out like tracefs's events/:
DIR/SYSTEM/EVENT/format) or from the live tracefs. .function predicates use /proc/kallsyms unless --kallsyms is given;
CPU lists are checked against this machine's CPUs unless --nr-cpus is given.`,
    )
    .argument('<expr>', 'the filter expression')
    .requiredOption('-e, --event <system:event>', 'the event the filter is for, e.g. kmem:kmalloc')
    .option('-f, --formats <dir>', 'event format files laid out like tracefs events/ (default: the live tracefs)')
    .option('--kallsyms <file>', 'kernel symbols for .function (default: /proc/kallsyms)')
    .option('--nr-cpus <n>', 'number of possible CPUs for CPUS{...} lists (default: this machine)')
    .option('--json', 'print {"ok": ...} as JSON')
    .action((expr: string, options: CheckOptions) => {
      const eventClass = loadEventClass(options.event, options.formats);
      try {
        parseFilter(expr, eventClass, parseOptions(expr, options));
      } catch (error) {
        if (!(error instanceof FilterError)) throw error;
        if (options.json) {
          const out = {
            ok: false,
            message: error.message,
            column: error.column,
            code: error.code,
            detail: error.detail ?? null,
          };
          io.stdout(`${JSON.stringify(out)}\n`);
        } else {
          io.stdout(`${error.format(expr)}\n`);
        }
        throw CliExit.quiet(ExitCode.Rejected);
      }
      io.stdout(options.json ? `${JSON.stringify({ ok: true })}\n` : 'ok\n');
    });
  setExamples(
    check,
    `evtrace filter check -e kmem:kmalloc 'bytes_req > 4096 && node == 0'
evtrace filter check -e sched:sched_switch --json 'prev_comm ~ "kworker*"'
evtrace filter check -e kmem:kmalloc --formats ./events 'call_site.function == kfree'`,
  );
}
