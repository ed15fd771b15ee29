/**
 * `evtrace mce decode --follow` as a user runs it (the built CLI in its own process): a kernel log that grows, is
 * written in pieces and is rotated, and `journalctl -k -f -o json` piped in. Records must come out as their lines
 * arrive, a record written in two pieces must come out whole, and SIGTERM (or stdin's end) must end it cleanly.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const CLI = new URL('../../dist/cli.js', import.meta.url).pathname;

/** The kernel's three lines for an AMD Zen UMC corrected error on CPU `cpu` (arch/x86/kernel/cpu/mce/core.c). */
function report(cpu: number, channel: number): string[] {
  return [
    `kernel: mce: [Hardware Error]: CPU ${cpu}: Machine Check: 0 Bank 16: 9c2040000000011b`,
    `kernel: mce: [Hardware Error]: TSC 0 ADDR 1f4a3c000 SYND 5d0006201f IPID 96${((channel << 20) | 0x50f00).toString(16).padStart(8, '0')} `,
    'kernel: mce: [Hardware Error]: PROCESSOR 2:a00f11 TIME 1763781200 SOCKET 0 APIC 6 microcode a0011d1',
  ].map((l) => `Nov 22 03:12:01 db7 ${l}\n`);
}

/** Collects a child's stdout JSON lines; `next(n)` waits until n have come. */
function collect(child: ChildProcessWithoutNullStreams) {
  const lines: Record<string, unknown>[] = [];
  let text = '';
  let stderr = '';
  const waiters: (() => void)[] = [];
  child.stdout.on('data', (b: Buffer) => {
    text += b.toString();
    let nl = text.indexOf('\n');
    while (nl >= 0) {
      lines.push(JSON.parse(text.slice(0, nl)));
      text = text.slice(nl + 1);
      nl = text.indexOf('\n');
    }
    for (const w of waiters.splice(0)) w();
  });
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const next = async (n: number) => {
    const deadline = Date.now() + 20_000;
    while (lines.length < n) {
      if (Date.now() > deadline) throw new Error(`waited for ${n} records, got ${lines.length}; stderr: ${stderr}`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
    return lines;
  };
  return { next, exited, stderr: () => stderr };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('evtrace mce decode --follow (built CLI)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-follow-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a growing kernel log: what is there, then each record as it is written, whole; rotation; SIGTERM ends it', async () => {
    const log = join(dir, 'kern.log');
    writeFileSync(log, `Nov 22 03:11:00 db7 kernel: e1000e: eth0 NIC Link is Up\n${report(1, 1).join('')}`);
    const child = spawn(process.execPath, [CLI, 'mce', 'decode', '--follow', '--json', log]);
    const out = collect(child);
    expect((await out.next(1)).map((o) => [o.cpu, o.channel])).toEqual([[1, 1]]);
    // The next report arrives in two writes, the second inside the quiet period: one record, not two halves.
    const [a, b, c] = report(2, 2);
    appendFileSync(log, a! + b!);
    await sleep(20);
    appendFileSync(log, c!);
    expect((await out.next(2))[1]).toMatchObject({ cpu: 2, channel: 2, class: 'memory-controller', socket: 0 });
    // Rotated: the new, shorter file is read from its start.
    writeFileSync(log, report(3, 3).join(''));
    expect((await out.next(3))[2]).toMatchObject({ cpu: 3, channel: 3 });
    child.kill('SIGTERM');
    expect(await out.exited).toBe(0);
    expect(out.stderr()).toBe('');
  }, 30_000);

  it('journalctl -k -f -o json on stdin: records as entries arrive, and the end of stdin ends it', async () => {
    const child = spawn(process.execPath, [CLI, 'mce', 'decode', '--follow', '--json', '-']);
    const out = collect(child);
    const entry = (line: string, i: number) =>
      `${JSON.stringify({ __CURSOR: `s=1;i=${i}`, __REALTIME_TIMESTAMP: '1763781200000000', MESSAGE: line.replace(/^.*kernel: /, '').trimEnd() })}\n`;
    for (const [i, l] of report(4, 1).entries()) child.stdin.write(entry(l, i));
    expect((await out.next(1))[0]).toMatchObject({ cpu: 4, channel: 1, source: { kind: 'journal-json' } });
    for (const [i, l] of report(5, 2).entries()) child.stdin.write(entry(l, i + 3));
    child.stdin.end();
    expect(await out.exited).toBe(0);
    expect((await out.next(2))[1]).toMatchObject({ cpu: 5, channel: 2 });
  }, 30_000);

  it('a binary input kind cannot be followed', async () => {
    const child = spawn(process.execPath, [CLI, 'mce', 'decode', '--follow', '--input-format', 'struct-mce', '-']);
    const out = collect(child);
    child.stdin.end();
    expect(await out.exited).toBe(2);
    expect(out.stderr()).toMatch(
      /--follow reads text inputs \(mcelog-ascii, kernel-log, journal-json, trace-text\), not 'struct-mce'/,
    );
  });
});
