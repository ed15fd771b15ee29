import {
  type BranchFormat,
  type BranchInput,
  type BranchList,
  BtsError,
  callHistory,
  captureHardware,
  captureQemu,
  describeProbe,
  detectHardware,
  edgeCoverage,
  FunctionNames,
  formatCallHistory,
  hexAddress,
  hotEdges,
  inferLoadBias,
  inSpace,
  lastBranches,
  probeLbr,
  readBranchInput,
  readElfSymbols,
  Symbolizer,
} from '@evtrace/hw-bts';
import { Kallsyms, readInput, TraceFormatError } from '@evtrace/trace-format';
import type { Command } from 'commander';
import { addCommand, type CliIO } from '../command.ts';
import { CliCode, CliExit, usageError } from '../exit-codes.ts';
import { setExamples } from '../help.ts';
import { bufferedWriter, stdoutBytes } from '../output/buffered-writer.ts';

interface ReportOptions {
  last?: string;
  calls?: boolean;
  hot?: boolean;
  coverage?: boolean;
  task?: string;
  user?: boolean;
  kernel?: boolean;
  symbols?: string[];
  kallsyms?: string;
  format?: BranchFormat;
  json?: boolean;
  lenient?: boolean;
}

/** ELF e_type of position-independent executables and shared objects. */
const ET_DYN = 3;

const FORMATS: readonly BranchFormat[] = [
  'bts64',
  'bts32',
  'perf-data',
  'perf-script',
  'qemu-log',
  'gdb-instruction-history',
  'gdb-call-history',
  'trace',
];

/** `evtrace bts report|record`: branch traces. */
export function registerBts(program: Command, io: CliIO): void {
  const bts = addCommand(program, 'bts')
    .summary('branch traces: report on BTS, perf, gdb and QEMU branch data; record one')
    .description(
      `Branch traces: every taken branch (from, to, flags). "report" reads raw Branch Trace Store records, perf.data
with intel_bts AUX data, perf script branch stacks (brstack, brstacksym, brstackoff; both flag layouts), gdb's
record instruction-history and function-call-history, QEMU user-mode block logs (a software source), and
traces (trace.dat, CTF) holding bts:branch events beside sched:sched_switch, which say whose branch each is; and
prints the last branches, the call history, hot edges and edge coverage. "record" captures a program.`,
    );
  registerReport(addCommand(bts, 'report'), io);
  registerRecord(addCommand(bts, 'record'), io);
  setExamples(
    bts,
    `evtrace bts record -o prog.log -- ./prog      capture (hardware BTS if present, else QEMU)
evtrace bts report prog.log --calls --symbols ./prog`,
  );
}

function registerReport(cmd: Command, io: CliIO): void {
  cmd
    .summary('print the last branches, call history, hot edges or edge coverage of a branch trace')
    .description(
      `Reads INPUT (format detected from its content unless --format says) and prints, in this order, what the
options ask for; with none, the last 20 branches. Branch rows show FROM -> TO with symbols (ELF files given with
--symbols, kernel addresses through --kallsyms), the branch kind and flags (P predicted, M mispredicted, X in
transaction, A abort). --calls prints the function call history like gdb's "record function-call-history /c": one
line per stretch in a function, indented two spaces per nesting level. --user and --kernel select branches by their
source address (at or above 0x8000000000000000 is kernel), so a user-only view drops the kernel-to-user returns as
gdb does. With --json, one JSON object (@evtrace/hw-bts/schemas/report.json): branch rows carry "from" and "to" as
hex strings, "flags", "kind", "from_symbol"/"to_symbol" when known, and "time_ns" as a decimal string. Problems in
the input (truncated records, malformed lines) are reported on stderr with where they are; the valid data around
them is used. Raw BTS records must be branches: a record whose addresses are not canonical x86-64 ones ends the
report with its byte offset (--lenient skips and counts them), and an input with no branch at all is refused. INPUT
may be a FIFO, a pipe or - (stdin): such a stream is read up to 128 MiB and refused beyond; a FIFO no writer opens
within 2 s is refused.`,
    )
    .argument('<input>', "branch trace file ('-': stdin), or a trace (trace.dat, CTF directory) with bts:branch events")
    .option('--last <n>', 'print the last N branches')
    .option('--calls', 'print the function call history with nesting')
    .option('--hot', 'print the edges by how often they were taken, with misprediction counts')
    .option('--coverage', 'print edge coverage: distinct edges overall and per function')
    .option('--task <pid>', 'only branches of this thread id')
    .option('--user', 'only branches from user space')
    .option('--kernel', 'only branches from kernel space')
    .option(
      '--symbols <elf...>',
      'ELF files to symbolize with; a PIE or shared object is placed at ELF@0xADDRESS, else where the calls the trace names say',
    )
    .option('--kallsyms <file>', 'a copy of /proc/kallsyms for kernel addresses')
    .option('--format <format>', `input format: ${FORMATS.join(', ')}`)
    .option('--json', 'one JSON object on stdout')
    .option(
      '--lenient',
      'skip raw BTS records that cannot be branches (counted on stderr) instead of refusing the input',
    )
    .action((input: string, options: ReportOptions) => report(input, options, io));
  setExamples(
    cmd,
    `evtrace bts report prog.log --last 10 --symbols ./prog    QEMU log of ./prog: the last 10 branches
evtrace bts report prog.log --calls --symbols ./prog       call history with nesting
evtrace bts report perf.txt --hot --task 4322              perf script -F tid,brstack output, one thread
evtrace bts report trace.bts --user --coverage --json      raw 24-byte BTS records`,
  );
}

function usage(message: string): never {
  throw usageError(message);
}

function report(input: string, o: ReportOptions, io: CliIO): void {
  if (o.user && o.kernel) usage('--user and --kernel exclude each other');
  if (o.format !== undefined && !FORMATS.includes(o.format)) usage(`--format must be one of ${FORMATS.join(', ')}`);
  let last = o.last === undefined ? undefined : Number(o.last);
  if (o.last !== undefined && !/^\d+$/.test(o.last)) usage(`--last must be a non-negative integer, not '${o.last}'`);
  if (o.task !== undefined && !/^\d+$/.test(o.task)) usage(`--task must be a thread id, not '${o.task}'`);
  if (last === undefined && !o.calls && !o.hot && !o.coverage) last = 20;
  const decoded: BranchInput = readBranchInput(input, {
    ...(o.format !== undefined ? { format: o.format } : {}),
    ...(o.lenient ? { lenient: true } : {}),
  });
  for (const p of decoded.problems) io.stderr(`evtrace: warning: ${p.code}: ${p.message}\n`);
  for (const n of decoded.notes) io.stderr(`evtrace: ${n}\n`);
  const out = bufferedWriter(stdoutBytes(io));
  if (decoded.format === 'gdb-call-history') {
    if (last !== undefined && o.last !== undefined) usage('a gdb function-call-history has no branches: use --calls');
    if (o.hot || o.coverage || o.task !== undefined || o.user || o.kernel)
      usage('a gdb function-call-history has functions only: --calls is the one analysis it supports');
    if (o.json) out.put(`${JSON.stringify({ format: decoded.format, calls: decoded.segments })}\n`);
    else out.put(formatCallHistory(decoded.segments));
    out.flush();
    if (decoded.segments.length === 0 && decoded.problems.length > 0)
      throw new CliExit(CliCode.NoData, `no call history could be read from ${input} (read as ${decoded.format})`);
    return;
  }
  let symbols = o.symbols === undefined && o.kallsyms === undefined ? undefined : loadSymbols(o, decoded.branches, io);
  // A trace carries its own kallsyms: kernel addresses get names without --kallsyms.
  if (decoded.format === 'trace' && decoded.kallsyms !== undefined && o.kallsyms === undefined)
    symbols = (symbols ?? new Symbolizer()).setKallsyms(decoded.kallsyms);
  let list: BranchList = decoded.branches;
  if (list.length === 0 && decoded.problems.length > 0)
    throw new CliExit(CliCode.NoData, `no branches could be read from ${input} (read as ${decoded.format})`);
  if (o.task !== undefined) {
    const tid = Number(o.task);
    if (list.length > 0 && !list.tid.subarray(0, list.length).some((t) => t >= 0))
      throw new CliExit(CliCode.NoData, `--task: ${input} (${decoded.format}) does not say which task ran each branch`);
    list = list.filter((i) => list.tid[i] === tid);
  }
  if (o.user || o.kernel) {
    const space = o.user ? 'user' : 'kernel';
    const all = list;
    list = all.filter((i) => inSpace(all, i, space));
  }
  const names = new FunctionNames(list, symbols);
  const json: Record<string, unknown> = { format: decoded.format, branches: list.length };
  const text: string[] = [];
  if (last !== undefined) {
    const rows = lastBranches(list, last);
    if (o.json) json.last = rows.map((i) => branchRow(list, names, i));
    else
      text.push(
        `last ${rows.length} of ${list.length} branches (oldest first)\n${rows.map((i) => branchLine(list, names, i)).join('')}`,
      );
  }
  if (o.calls) {
    const segs = callHistory(list, symbols);
    if (o.json) json.calls = segs;
    else text.push(`call history (${segs.length} segments)\n${formatCallHistory(segs)}`);
  }
  if (o.hot) {
    const edges = hotEdges(list, 50);
    if (o.json)
      json.hot = edges.map((e) => ({
        ...branchRow(list, names, e.example),
        count: e.count,
        mispredicted: e.mispredicted,
        predicted: e.predicted,
      }));
    else
      text.push(
        `hot edges (top ${edges.length})\n${'count'.padStart(10)} ${'mispred'.padStart(8)}  edge\n${edges
          .map(
            (e) =>
              `${String(e.count).padStart(10)} ${String(e.mispredicted).padStart(8)}  ${names.label(e.example, 0)} -> ${names.label(e.example, 1)}\n`,
          )
          .join('')}`,
      );
  }
  if (o.coverage) {
    const cov = edgeCoverage(list, symbols);
    if (o.json) json.coverage = cov;
    else
      text.push(
        `edge coverage: ${cov.edges} distinct edges in ${cov.branches} branches, ${cov.functions.length} functions\n${'edges'.padStart(8)} ${'branches'.padStart(10)} ${'entered'.padStart(8)}  function\n${cov.functions
          .map(
            (f) =>
              `${String(f.edges).padStart(8)} ${String(f.branches).padStart(10)} ${String(f.entered).padStart(8)}  ${f.name}\n`,
          )
          .join('')}`,
      );
  }
  if (o.json) {
    json.problems = decoded.problems.map((p) => ({ code: p.code, message: p.message }));
    json.notes = decoded.notes;
    out.put(`${JSON.stringify(json)}\n`);
  } else out.put(text.join('\n'));
  out.flush();
}

function loadSymbols(o: ReportOptions, list: BranchList, io: CliIO): Symbolizer {
  const s = new Symbolizer();
  for (const spec of o.symbols ?? []) {
    const at = spec.lastIndexOf('@0x');
    const path = at > 0 ? spec.slice(0, at) : spec;
    try {
      let bias = at > 0 ? BigInt(spec.slice(at + 1)) : undefined;
      const bytes = readInput(path);
      if (bias === undefined) {
        // A PIE or shared object runs wherever it was loaded: find where from the names the trace gives.
        const elf = readElfSymbols(bytes, path);
        if (elf.type === ET_DYN) {
          bias = inferLoadBias(list, elf);
          if (bias === undefined)
            io.stderr(
              `evtrace: warning: --symbols ${path}: position-independent and its load address is not in the trace: give ${path}@0xADDRESS\n`,
            );
          else
            io.stderr(
              `evtrace: --symbols ${path}: loaded at 0x${bias.toString(16)} (from the calls the trace names)\n`,
            );
        }
      }
      s.addElfBytes(bytes, path, bias ?? 0n);
    } catch (error) {
      if (error instanceof BtsError || error instanceof TraceFormatError) throw CliExit.around(error, '--symbols: ');
      throw error;
    }
  }
  if (o.kallsyms !== undefined) {
    let text: string;
    try {
      text = readInput(o.kallsyms).toString('utf8');
    } catch (error) {
      if (!(error instanceof TraceFormatError)) throw error;
      throw CliExit.around(error, '--kallsyms: ');
    }
    s.setKallsyms(Kallsyms.parse(text));
  }
  return s;
}

const FLAG_LETTERS: Readonly<Record<string, string>> = { predicted: 'P', mispredicted: 'M', inTx: 'X', abort: 'A' };

function branchRow(list: BranchList, names: FunctionNames, i: number): Record<string, unknown> {
  const b = list.at(i);
  const row: Record<string, unknown> = {
    index: i,
    from: hexAddress(list.fromHi[i]!, list.fromLo[i]!),
    to: hexAddress(list.toHi[i]!, list.toLo[i]!),
    flags: b.flags,
    kind: b.kind,
  };
  const fs = names.describe(i, 0);
  const ts = names.describe(i, 1);
  if (fs !== undefined) row.from_symbol = fs;
  if (ts !== undefined) row.to_symbol = ts;
  if (b.tid !== undefined) row.tid = b.tid;
  if (b.cpu !== undefined) row.cpu = b.cpu;
  if (b.cycles !== undefined) row.cycles = b.cycles;
  // A 64-bit timestamp: a decimal string, as in every evtrace JSON output.
  if (b.time !== undefined) row.time_ns = String(Math.round(b.time));
  return row;
}

function branchLine(list: BranchList, names: FunctionNames, i: number): string {
  const from = hexAddress(list.fromHi[i]!, list.fromLo[i]!);
  const to = hexAddress(list.toHi[i]!, list.toLo[i]!);
  const fs = names.describe(i, 0);
  const ts = names.describe(i, 1);
  const flags =
    list
      .at(i)
      .flags.map((f) => FLAG_LETTERS[f])
      .join('') || '-';
  const task = list.tid[i]! >= 0 ? ` tid ${list.tid[i]}` : '';
  return `${String(i).padStart(8)}  ${from}${fs ? ` <${fs}>` : ''} -> ${to}${ts ? ` <${ts}>` : ''}  ${list.kindOf(i)} ${flags}${task}\n`;
}

interface RecordOptions {
  output?: string;
  source?: string;
}

function registerRecord(cmd: Command, io: CliIO): void {
  cmd
    .summary('run a program and capture its branches (hardware BTS when present, else QEMU user mode)')
    .description(
      `Runs PROGRAM with ARGS and captures its taken branches. --source hardware uses the intel_bts PMU through
perf record (a perf.data that "bts report" reads); --source qemu runs the program under QEMU user mode
(qemu-x86_64 from Debian's qemu-user) and writes its block log: a SOFTWARE source, exact control flow but no
prediction flags. --source auto (the default) takes the hardware when /sys/bus/event_source/devices has intel_bts,
QEMU otherwise, and says which and why on stderr. The exit status is 1 when the program fails or is killed.`,
    )
    .argument('<program>', 'the program to run')
    .argument('[args...]', 'its arguments (put -- before them when they start with -)')
    .option('-o, --output <file>', 'where to write (default bts.qemu.log or bts.perf.data)')
    .option('--source <source>', 'auto, hardware or qemu', 'auto')
    .action(async (prog: string, args: string[], o: RecordOptions) => {
      const source = o.source ?? 'auto';
      if (!['auto', 'hardware', 'qemu'].includes(source))
        usage(`--source must be auto, hardware or qemu, not '${source}'`);
      const hw = detectHardware();
      const useHw = source === 'hardware' || (source === 'auto' && hw.bts);
      if (source === 'hardware' && !hw.bts) throw new CliExit('ERR_BTS_UNSUPPORTED', `${hw.why}`);
      if (useHw) {
        const output = o.output ?? 'bts.perf.data';
        io.stderr(`evtrace: hardware source: intel_bts through perf record -> ${output}\n`);
        const r = await captureHardware(prog, args, { output });
        if (r.status !== 0) throw new CliExit(CliCode.Child, `perf record exited with status ${r.status}`);
        return;
      }
      const output = o.output ?? 'bts.qemu.log';
      if (source === 'auto')
        io.stderr(`evtrace: software source (QEMU user mode): ${hw.why}; ${describeProbe(probeLbr())}\n`);
      const r = await captureQemu(prog, args, { log: output });
      const decoded = readBranchInput(output, { format: 'qemu-log' });
      io.stderr(
        `evtrace: ${decoded.format === 'gdb-call-history' ? 0 : decoded.branches.length} branches of ${prog} in ${output} (read it with: evtrace bts report ${output} --symbols ${prog})\n`,
      );
      if (r.signal !== null) throw new CliExit(CliCode.Child, `${prog} was killed by ${r.signal}`);
      if (r.status !== 0) throw new CliExit(CliCode.Child, `${prog} exited with status ${r.status}`);
    });
  setExamples(
    cmd,
    `evtrace bts record -o ls.log -- ls -l /      QEMU log of ls (on a machine without BTS)
evtrace bts record --source hardware -o p.data -- ./prog`,
  );
}
