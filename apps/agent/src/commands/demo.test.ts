import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { runCli } from '../program.ts';
import { expectValid } from '../testing/schemas.ts';
import { parseSize } from '../units.ts';

const run = promisify(execFile);
const CLI = new URL('../../dist/cli.js', import.meta.url).pathname;

async function demo(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, 'demo', ...args], { maxBuffer: 1 << 26 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The per-producer rows of the summary: [producer, produced, delivered, lost]. */
function summary(stderr: string): number[][] {
  return stderr
    .split('\n')
    .filter((l) => /^\s+\d+\s+\d+\s+\d+\s+\d+$/.test(l))
    .map((l) => l.trim().split(/\s+/).map(Number));
}

describe('evtrace demo (built CLI)', () => {
  it('prints 20 events from 2 worker threads merged by timestamp, then a summary', async () => {
    const r = await demo();
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(20);
    let lastTime = -1;
    const lastSeq = [-1, -1];
    for (const line of lines) {
      const m = /^\+(\d+\.\d{9})s {2}producer (\d) {2}#(\d+) +(sample|alloc|log) +(value|bytes|text)=/.exec(line);
      expect(m, line).not.toBeNull();
      const [, time, producer, seq] = m!;
      expect(Number(time)).toBeGreaterThanOrEqual(lastTime);
      lastTime = Number(time);
      expect(Number(seq)).toBe(lastSeq[Number(producer)]! + 1);
      lastSeq[Number(producer)] = Number(seq);
    }
    expect(lines[0]).toMatch(/^\+0\.000000000s/);
    expect(summary(r.stderr)).toEqual([
      [0, 10, 10, 0],
      [1, 10, 10, 0],
    ]);
    expect(r.stderr).toMatch(/20 events delivered, 0 lost/);
  });

  it('prints JSON lines with --json', async () => {
    const r = await demo('--json', '--producers', '3', '--events', '30', '--mode', 'discard', '--page-size', '16k');
    expect(r.code).toBe(0);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { ts: string; producer: number; seq: number; type: string; text?: string });
    expect(events).toHaveLength(90);
    for (const e of events) expectValid('@evtrace/agent/schemas/demo-event.json', e);
    for (let i = 1; i < events.length; i++) expect(BigInt(events[i]!.ts) >= BigInt(events[i - 1]!.ts)).toBe(true);
    for (const p of [0, 1, 2]) {
      const mine = events.filter((e) => e.producer === p);
      expect(mine.map((e) => e.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i));
      expect(mine.filter((e) => e.type === 'log').every((e) => e.text === `hello from producer ${p}`)).toBe(true);
    }
    expect(r.stderr).toMatch(/3 worker thread\(s\), one discard-mode buffer each \(64 pages of 16384 bytes\)/);
  });

  it('accounts for every event under load: delivered + lost == produced', async () => {
    for (const mode of ['overwrite', 'discard']) {
      const r = await demo('--events', '200000', '--mode', mode);
      expect(r.code).toBe(0);
      const rows = summary(r.stderr);
      expect(rows).toHaveLength(2);
      for (const [, produced, delivered, lost] of rows) {
        expect(produced).toBe(200000);
        expect(delivered! + lost!).toBe(produced);
      }
      expect(r.stdout.split('\n').length - 1).toBe(rows.reduce((a, row) => a + row[2]!, 0));
    }
  }, 60_000);

  it('--limit prints the first N events and still reads and counts every one', async () => {
    const r = await demo('--events', '20000', '--limit', '3', '--mode', 'discard', '--page-size', '1M');
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')).toHaveLength(3);
    const rows = summary(r.stderr);
    expect(rows.map((row) => row[1])).toEqual([20000, 20000]);
    expect(rows.reduce((a, row) => a + row[2]! + row[3]!, 0)).toBe(40000);
    expect(r.stderr).toContain(`${rows.reduce((a, row) => a + row[2]!, 0)} events delivered`);
  });

  it('refuses bad options with exit status 2', async () => {
    const bad = await demo('--page-size', '5000');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--page-size: page size 5000 must be a power of two');
    expect((await demo('--mode', 'fifo')).stderr).toContain("--mode must be overwrite or discard, got 'fifo'");
    expect((await demo('--producers', '0')).code).toBe(2);
  });
});

describe('evtrace demo (in process)', () => {
  it('runs from the sources with its worker as a .ts file', async () => {
    let stdout = '';
    let stderr = '';
    const code = await runCli(['demo', '--events', '4', '--producers', '1'], {
      stdout: (t) => (stdout += t),
      stderr: (t) => (stderr += t),
    });
    expect(code).toBe(ExitCode.Ok);
    expect(stdout.trim().split('\n')).toHaveLength(4);
    expect(stderr).toMatch(/4 events delivered, 0 lost/);
  });

  it('parses sizes', () => {
    expect([parseSize('4096'), parseSize('16k'), parseSize('64KiB'), parseSize('1M'), parseSize('x')]).toEqual([
      4096,
      16384,
      65536,
      1 << 20,
      undefined,
    ]);
  });
});
