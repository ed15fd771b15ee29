/**
 * The reproductions of garbage accepted: random bytes and empty files given to mce decode, bts report and kmem
 * report end with exit status 1 and a message naming the file, where and what was expected; nothing on stdout.
 * So does an input with nothing of the decoder's kind in it (a text file, a trace of other events), for every
 * decoder; --lenient still refuses it, after saying what it skipped.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { runCli } from '../program.ts';

const dir = mkdtempSync(join(tmpdir(), 'evtrace-garbage-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function run(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

function file(name: string, bytes: Uint8Array | string): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

describe('garbage is refused by the CLI', () => {
  it('mce decode on 64 KiB of random bytes: no record, the file and byte offset named', async () => {
    const path = file('random.mce', randomBytes(65536));
    const r = await run('mce', 'decode', path);
    expect(r.code).toBe(ExitCode.Failure);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(new RegExp(`^evtrace: ERR_MCE_INPUT: ${path}: byte \\d+: .*expected struct mce records`));
  });

  it('bts report on 4 KiB of random bytes: no branch, the file and byte offset named; --lenient counts', async () => {
    const path = file('random.bts', randomBytes(4096));
    const r = await run('bts', 'report', path);
    expect(r.code).toBe(ExitCode.Failure);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(new RegExp(`^evtrace: ERR_BTS_FORMAT: ${path}: byte \\d+: not a BTS record`));
    const lenient = await run('bts', 'report', path, '--lenient');
    expect(lenient.code).toBe(ExitCode.Failure);
    expect(lenient.stdout).toBe('');
    expect(lenient.stderr).toContain('170 records with non-canonical addresses skipped (not BTS records)');
    expect(lenient.stderr).toContain(`no branches could be read from ${path}`);
  });

  it('kmem report on an empty file: refused, not an empty report', async () => {
    const path = file('empty', '');
    const r = await run('kmem', 'report', path);
    expect(r.code).toBe(ExitCode.Failure);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `evtrace: ERR_KMEM_INPUT: ${path}: byte 0: empty: expected a trace of kmem events, perf script text of kmem events or kmemtrace relay records\n`,
    );
  });

  it('any random input to any of the three: exit 1, nothing reported, the file named', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.noBias(fc.uint8Array({ maxLength: 4096 })),
        fc.constantFrom(['mce', 'decode'], ['bts', 'report'], ['kmem', 'report']),
        async (bytes, command) => {
          const path = file('any', bytes);
          const r = await run(...command, path);
          expect(r.code).toBe(ExitCode.Failure);
          expect(r.stdout).toBe('');
          expect(r.stderr).toContain(path);
        },
      ),
      { numRuns: 40 },
    );
  });
});

/** Why `perf record` cannot run here, or ''. */
function perfRecords(): string {
  try {
    execFileSync('perf', ['--version'], { stdio: 'ignore' });
    return '';
  } catch {
    return 'perf is not installed (apt-get install linux-perf)';
  }
}

const KMEM_EXPECTED = 'expected a trace of kmem events, perf script text of kmem events or kmemtrace relay records';
const BTS_EXPECTED = 'expected raw BTS records, perf.data, perf script, QEMU log or gdb record text, or a trace';
const NOT_A_TRACE = 'byte 0: not a trace.dat file, CTF trace or raw-pages directory';

describe("an input with nothing of the decoder's kind is refused by the CLI", () => {
  const hello = file('hello.txt', 'hello\nworld\n');
  /** A trace of sched:sched_switch only: no branch, no machine check, no allocation. */
  const sched = join(dir, 'sched.dat');
  beforeAll(async () => {
    const r = await run('record', '--demo', '-e', 'sched:sched_switch', '--duration', '200ms', '-o', sched);
    expect(r.code, r.stderr).toBe(ExitCode.Ok);
  }, 30_000);

  /** Runs with and without --lenient: both exit 1 with nothing on stdout; returns the two stderr texts. */
  async function refused(...args: string[]): Promise<[string, string]> {
    const strict = await run(...args);
    const lenient = await run(...args, '--lenient');
    for (const r of [strict, lenient]) {
      expect(r.code, r.stderr).toBe(ExitCode.Failure);
      expect(r.stdout).toBe('');
    }
    return [strict.stderr, lenient.stderr];
  }

  it('bts report: "hello\\nworld" in each text format, and a trace without bts:branch events', async () => {
    for (const format of [undefined, 'perf-script', 'qemu-log', 'gdb-instruction-history']) {
      const args = ['bts', 'report', hello, ...(format ? ['--format', format] : [])];
      const [strict, lenient] = await refused(...args);
      expect(strict).toMatch(
        new RegExp(
          `^evtrace: ERR_BTS_FORMAT: ${hello}: byte 0: no branch read as ${format ?? 'perf-script'}\\b.*: ${BTS_EXPECTED}\\n$`,
        ),
      );
      expect(lenient).toBe(strict);
    }
    // A call history: each line it could not read is named, then the refusal.
    const [calls] = await refused('bts', 'report', hello, '--format', 'gdb-call-history');
    expect(calls).toMatch(new RegExp(`^evtrace: warning: ERR_BTS_SYNTAX: ${hello}:1:1: malformed`));
    expect(calls).toContain(`${hello}:2:1: malformed`);
    expect(calls).toMatch(new RegExp(`no call history could be read from ${hello} \\(read as gdb-call-history\\)\\n$`));
    // Raw records: the bytes that are not one are counted, then the refusal.
    const [raw] = await refused('bts', 'report', hello, '--format', 'bts64');
    expect(raw).toContain(`truncated 24-byte BTS record: 12 bytes at the end (0 whole records kept)`);
    expect(raw).toMatch(new RegExp(`no branches could be read from ${hello} \\(read as bts64\\)\\n$`));
    const [trace, lenientTrace] = await refused('bts', 'report', sched);
    expect(trace).toBe(
      `evtrace: ERR_BTS_FORMAT: ${sched}: no bts:branch event in this trace: expected a trace of bts:branch events\n`,
    );
    expect(lenientTrace).toBe(trace);
    // A text file given as a trace: named once, at byte 0.
    const [notTrace] = await refused('bts', 'report', hello, '--format', 'trace');
    expect(notTrace).toBe(`evtrace: ERR_BTS_FORMAT: ${hello}: ${NOT_A_TRACE}\n`);
  });

  it('mce decode: a text without machine-check lines, and a trace without mce_record or mc_event', async () => {
    const text = await run('mce', 'decode', hello);
    expect(text.code).toBe(ExitCode.Failure);
    expect(text.stdout).toBe('');
    expect(text.stderr).toBe(
      `evtrace: ${hello}:1:1: not a machine-check line, ignored: hello\n` +
        `evtrace: ${hello}:2:1: not a machine-check line, ignored: world\n` +
        `evtrace: ERR_CLI_NO_DATA: no machine-check record in ${hello} (read as mcelog-ascii): expected machine-check records or EDAC memory errors\n`,
    );
    const trace = await run('mce', 'decode', sched);
    expect(trace.code).toBe(ExitCode.Failure);
    expect(trace.stdout).toBe('');
    expect(trace.stderr).toMatch(
      new RegExp(
        `^evtrace: ${sched}: [1-9]\\d* events other than mce_record and mc_event were skipped\\n` +
          `evtrace: ERR_CLI_NO_DATA: no machine-check record in ${sched} \\(read as trace\\): expected machine-check records or EDAC memory errors\\n$`,
      ),
    );
  });

  it('kmem report and kmem diff: a text file, and a trace without kmem events; --lenient counts what it skipped', async () => {
    const [strict, lenient] = await refused('kmem', 'report', hello);
    // Not the syntax error of its first line: no line of it is a kmem event.
    expect(strict).toBe(`evtrace: ERR_KMEM_INPUT: ${hello}: no kmem event (2 problems skipped): ${KMEM_EXPECTED}\n`);
    expect(lenient).toBe(strict);
    // Text with kmem events and a malformed line still fails at that line (kmem.test.ts: bad.txt).
    const [trace, lenientTrace] = await refused('kmem', 'report', sched);
    expect(trace).toBe(`evtrace: ERR_KMEM_INPUT: ${sched}: a trace without kmem event classes: ${KMEM_EXPECTED}\n`);
    expect(lenientTrace).toBe(trace);
    // A kmemtrace relay directory whose cpu0 holds text: strict names the record, --lenient counts it.
    const relay = join(dir, 'relay');
    mkdirSync(relay);
    writeFileSync(join(relay, 'cpu0'), 'hello\nworld\n');
    const [record, lenientRelay] = await refused('kmem', 'report', relay);
    expect(record).toMatch(new RegExp(`^evtrace: ERR_KMEM_RELAY_RECORD: ${relay}/cpu0: byte 0: truncated record`));
    expect(lenientRelay).toBe(
      `evtrace: ERR_KMEM_INPUT: ${relay}: no kmem event (1 problem skipped): ${KMEM_EXPECTED}\n`,
    );
    const [diff] = await refused('kmem', 'diff', hello, hello);
    expect(diff).toBe(strict);
  });

  const perf = perfRecords();
  it.skipIf(perf !== '')(
    `kmem report: a perf.data of cpu-clock samples holds no kmem event${perf ? ` (skipped: ${perf})` : ''}`,
    async () => {
      const data = join(dir, 'clock.data');
      execFileSync('perf', ['record', '-q', '-e', 'cpu-clock', '-o', data, '--', 'sleep', '0.05'], { stdio: 'ignore' });
      const [strict, lenient] = await refused('kmem', 'report', data);
      expect(strict).toMatch(
        new RegExp(
          `^evtrace: ERR_KMEM_INPUT: ${data}: a perf\\.data without kmem tracepoint events \\(record them with perf kmem record\\): ${KMEM_EXPECTED}\\n$`,
        ),
      );
      expect(lenient).toBe(strict);
    },
  );

  it('cat and convert: a text file is no trace, and convert writes nothing', async () => {
    const [cat, lenientCat] = await refused('cat', hello);
    expect(cat).toBe(`evtrace: ERR_TRACE_INPUT: ${hello}: ${NOT_A_TRACE}\n`);
    expect(lenientCat).toBe(cat);
    for (const to of ['ctf', 'tracedat', 'jsonl', 'perfetto']) {
      const out = join(dir, `out-${to}`);
      const [convert, lenientConvert] = await refused('convert', hello, '--to', to, '-o', out);
      expect(convert).toBe(cat);
      expect(lenientConvert).toBe(cat);
      expect(existsSync(out)).toBe(false);
    }
  });
});
