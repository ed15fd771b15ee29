/**
 * `record --json` and `convert --json`: the summary as one object on stdout, valid against the published schemas,
 * and true to the files written (their sizes, and the events `evtrace cat` reads back from them).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI } from '../testing/agent-daemon.ts';
import { expectValid } from '../testing/schemas.ts';

const dir = mkdtempSync(join(tmpdir(), 'evtrace-summary-json-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function evtrace(...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', maxBuffer: 1 << 28 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
const lines = (text: string) => text.trimEnd().split('\n').filter(Boolean);

describe('--json summaries', () => {
  const dat = join(dir, 'demo.dat');

  it('record --json: what was written, by event and per CPU, as cat reads the file back', () => {
    const r = evtrace('record', '--json', '--source', 'demo', '-e', 'kmem:*', '--duration', '1s', '-o', dat);
    expect(r.code, r.stderr).toBe(0);
    // stderr keeps the demo's label; the summary is on stdout alone.
    expect(r.stderr).toMatch(/synthetic events/);
    expect(r.stderr).not.toMatch(/recorded \d+ events/);
    const summary = JSON.parse(r.stdout);
    expectValid('@evtrace/agent/schemas/record.json', summary);
    expect(summary).toMatchObject({ output: dat, format: 'tracedat', source: 'demo', childStatus: null });
    const events = lines(evtrace('cat', '--json', dat).stdout).map((l) => JSON.parse(l).event as string);
    expect(summary.events).toBe(events.length);
    const byEvent: Record<string, number> = {};
    for (const e of events) byEvent[e] = (byEvent[e] ?? 0) + 1;
    expect(summary.byEvent).toEqual(byEvent);
    expect(summary.bytes).toBe(statSync(dat).size);
    for (const l of summary.lost) expect(l.lost).toBe(l.overrun + l.dropped + l.commitOverrun);
  });

  it('convert --json: the events written and the bytes of the output, for a decoded and a page-copied conversion', () => {
    const jsonl = join(dir, 'demo.jsonl');
    const decoded = evtrace('convert', dat, '--to', 'jsonl', '-o', jsonl, '--json');
    expect(decoded.code, decoded.stderr).toBe(0);
    expect(decoded.stderr).toBe('');
    const a = JSON.parse(decoded.stdout);
    expectValid('@evtrace/agent/schemas/convert.json', a);
    expect(a).toEqual({
      input: dat,
      output: jsonl,
      to: 'jsonl',
      events: lines(readFileSync(jsonl, 'utf8')).length,
      pagesCopied: false,
      skippedPages: 0,
      bytes: statSync(jsonl).size,
    });

    const copy = join(dir, 'copy.dat');
    const copied = evtrace('convert', dat, '--to', 'tracedat', '-o', copy, '--json');
    expect(copied.code, copied.stderr).toBe(0);
    const b = JSON.parse(copied.stdout);
    expectValid('@evtrace/agent/schemas/convert.json', b);
    expect(b).toMatchObject({
      to: 'tracedat',
      events: null,
      pagesCopied: true,
      skippedPages: 0,
      bytes: statSync(copy).size,
    });

    const ctf = join(dir, 'demo.ctf');
    const c = JSON.parse(evtrace('convert', dat, '--to', 'ctf', '-o', ctf, '--json').stdout);
    expectValid('@evtrace/agent/schemas/convert.json', c);
    expect(c.events).toBe(a.events);
    const files = readdirSync(ctf, { recursive: true, withFileTypes: true }).filter((f) => f.isFile());
    expect(files.length).toBeGreaterThan(1);
    expect(c.bytes).toBe(files.reduce((n, f) => n + statSync(join(f.parentPath, f.name)).size, 0));
  });

  it('convert --json with -o - is a usage error: standard output holds the events', () => {
    const r = evtrace('convert', dat, '--to', 'jsonl', '-o', '-', '--json');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^evtrace: ERR_CLI_USAGE: --json: /);
  });
});
