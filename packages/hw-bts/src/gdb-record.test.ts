/**
 * gdb itself as the judge of the gdb inputs: a small C program is compiled and recorded by gdb here. `record
 * instruction-history` and `record function-call-history` need `record btrace` (BTS or Intel PT through perf), which
 * a machine without that hardware (such as a VM) refuses; `record full`, gdb's software recorder, runs everywhere but
 * answers neither command. With `record full`, gdb replays the recording one instruction at a time (`stepi` from
 * `record goto begin`) and disassembles each one as its histories do, and where execution went next is gdb's own
 * answer; with `record btrace`, where it runs, gdb's histories are read as they are.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseGdbCallHistory, parseGdbInstructionHistory } from './gdb.ts';

const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
const tools = has('gdb') && has('gcc');

/** fib(5) calls fib 15 times (itself included): 2 * fib(6) - 1. */
const PROGRAM = `static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(void) {
  volatile int r = fib(5);
  return r == 5 ? 0 : 1;
}
`;
const FIB_CALLS = 15;

/** The program built with symbols, unoptimized (every call a real call). */
function build(): string {
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-gdb-'));
  writeFileSync(join(dir, 'fib.c'), PROGRAM);
  execFileSync('gcc', ['-O0', '-g', '-o', join(dir, 'fib'), join(dir, 'fib.c')]);
  return join(dir, 'fib');
}

/**
 * Runs gdb in batch mode: breaks in main, starts recording with `record`, steps over fib(5), then runs `after`. A
 * command gdb refuses is reported in the output and the next one still runs; the output is stdout and stderr.
 */
function gdb(program: string, record: string, after: readonly string[]): string {
  const commands = ['set pagination off', 'set confirm off', 'break main', 'run', record, 'next', ...after];
  // A `while` block is a script's: it goes through a file, sourced as one command.
  const block = after.findIndex((c) => c.startsWith('while '));
  const args = commands.flatMap((c) => ['-ex', c]);
  if (block >= 0) {
    const end = after.indexOf('end', block);
    const script = join(mkdtempSync(join(tmpdir(), 'evtrace-gdb-')), 'loop.gdb');
    writeFileSync(script, `${after.slice(block, end + 1).join('\n')}\n`);
    const head = commands.slice(0, commands.length - after.length + block);
    const tail = after.slice(end + 1);
    args.splice(0, args.length, ...[...head, `source ${script}`, ...tail].flatMap((c) => ['-ex', c]));
  }
  const r = spawnSync('gdb', ['-nx', '-batch', ...args, program], { encoding: 'utf8', timeout: 60_000 });
  if (r.error !== undefined) throw r.error;
  return `${r.stdout}${r.stderr}`;
}

/** Why `record btrace` cannot run here, in gdb's words; undefined where it runs. */
function btraceRefusal(): string | undefined {
  if (!tools) return 'gdb or gcc is not installed (apt-get install gdb gcc)';
  const out = gdb(build(), 'record btrace', ['info record']);
  const refused = /Could not enable branch tracing[^\n]*|[^\n]*not supported[^\n]*|Target does not support[^\n]*/.exec(
    out,
  );
  if (refused !== null) return refused[0].replace(/ for Thread 0x[0-9a-f]+ \(LWP \d+\)/, '');
  return /Active record target: record-btrace/.test(out) ? undefined : out.trim();
}

const hex = (s: string) => BigInt(s);

describe.skipIf(!tools)(
  `gdb's record full replay as the judge of instruction-history${tools ? '' : ' (skipped: gdb or gcc is not installed (apt-get install gdb gcc))'}`,
  { timeout: 60_000 },
  () => {
    it("derives exactly the branches gdb's replay takes, fib's 15 calls among them", () => {
      const fib = build();
      // Each replayed instruction as `x/2i $pc` shows it: the instruction (`=> `), then the one after it in memory.
      const out = gdb(fib, 'record full', [
        'set $end = $pc',
        'record goto begin',
        'while $pc != $end',
        '  x/2i $pc',
        '  stepi',
        'end',
        'x/i $pc',
      ]);
      const lines = out.split('\n');
      const steps: { line: string; at: bigint; next: bigint | undefined }[] = [];
      lines.forEach((line, i) => {
        const m = /^=> (0x[0-9a-f]+) /.exec(line);
        if (m === null) return;
        const after = /^ {3}(0x[0-9a-f]+) /.exec(lines[i + 1] ?? '');
        steps.push({ line: line.slice(3), at: hex(m[1]!), next: after === null ? undefined : hex(after[1]!) });
      });
      expect(steps.length).toBeGreaterThan(200);
      // gdb's answer: execution went elsewhere than the next instruction in memory.
      const taken = steps
        .slice(0, -1)
        .flatMap((s, i) => (steps[i + 1]!.at !== s.next ? [[s.at, steps[i + 1]!.at]] : []));
      // Calls, returns and fib's base-case jumps at least: conditionals taken and not taken among them.
      expect(taken.length).toBeGreaterThan(2 * FIB_CALLS);
      // The listing as instruction-history numbers it, the current instruction (the last) marked.
      const history = steps.map((s, i) => `${i + 1}\t${i === steps.length - 1 ? '=> ' : '   '}${s.line}`).join('\n');
      const d = parseGdbInstructionHistory(history, { source: 'replay' });
      expect(d.problems).toEqual([]);
      const ours = d.branches.toArray();
      expect(ours.map((b) => [b.from, b.to])).toEqual(taken);
      const fibEntry = steps.find((s) => /<fib>:/.test(s.line))!.at;
      expect(ours.filter((b) => b.kind === 'call' && b.to === fibEntry)).toHaveLength(FIB_CALLS);
      expect(ours.filter((b) => b.kind === 'return')).toHaveLength(FIB_CALLS);
    });

    it('is refused function-call-history and instruction-history by record full (why the samples in gdb.test.ts stay)', () => {
      const out = gdb(build(), 'record full', ['record instruction-history', 'record function-call-history']);
      expect(out.match(/You can't do that when your target is `record-full'/g)).toHaveLength(2);
    });
  },
);

const btraceWhy = btraceRefusal();

describe.skipIf(btraceWhy !== undefined)(
  `gdb's record btrace histories, read as gdb prints them${btraceWhy !== undefined ? ` (skipped: record btrace cannot run here: ${btraceWhy}; the hand-written samples in gdb.test.ts stand in for function-call-history)` : ''}`,
  { timeout: 60_000 },
  () => {
    it("reads instruction-history and function-call-history /ilc with fib's 15 calls in both", () => {
      const out = gdb(build(), 'record btrace', [
        'set record instruction-history-size unlimited',
        'set record function-call-history-size unlimited',
        'record instruction-history /r',
        'echo --- calls\\n',
        'record function-call-history /ilc',
      ]);
      const [insns, calls] = out.split('--- calls\n');
      const d = parseGdbInstructionHistory(insns!, { source: 'instruction-history' });
      expect(d.problems).toEqual([]);
      expect(d.branches.toArray().filter((b) => b.kind === 'call' && b.toName?.startsWith('fib'))).toHaveLength(
        FIB_CALLS,
      );
      const h = parseGdbCallHistory(calls!, { source: 'function-call-history' });
      expect(h.problems).toEqual([]);
      expect(h.segments[0]!.name).toBe('main');
      // Every call of fib opens a segment one level deeper than the one before it.
      const entered = h.segments.filter(
        (s, i) => i > 0 && s.name === 'fib' && s.level === h.segments[i - 1]!.level + 1,
      );
      expect(entered).toHaveLength(FIB_CALLS);
    });
  },
);
