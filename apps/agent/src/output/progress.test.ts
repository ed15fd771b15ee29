/**
 * Progress of a long `convert` on a terminal (a real pty, through util-linux's script(1)): a line redrawn in place
 * with the events so far and their rate, cleared before the summary; never on a pipe, never with -q.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI } from '../testing/agent-daemon.ts';
import { writeU64Ctf } from '../testing/u64-ctf.ts';

const hasScript = spawnSync('sh', ['-c', 'command -v script']).status === 0;
const EVENTS = 1_000_000;
const dir = mkdtempSync(join(tmpdir(), 'evtrace-progress-'));
const ctf = join(dir, 'in.ctf');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

beforeAll(() => {
  // Long enough to convert that the line is drawn: a million events take a good part of a second.
  writeU64Ctf(ctf, EVENTS);
}, 120_000);

/** convert's stderr (and stdout) as a terminal shows them. */
function onTerminal(...flags: string[]): string {
  const line = [process.execPath, CLI, ...flags, 'convert', ctf, '-o', join(dir, 'out.jsonl'), '--to', 'jsonl']
    .map((w) => `'${w}'`)
    .join(' ');
  const r = spawnSync('script', ['-qec', line, '/dev/null'], { encoding: 'utf8' });
  expect(r.status, r.stdout).toBe(0);
  return r.stdout;
}

describe.skipIf(!hasScript)(
  `convert's progress${hasScript ? '' : ' (skipped: script(1) from util-linux is missing)'}`,
  () => {
    it('is drawn on a terminal in place, counting up, and cleared before the summary', () => {
      const text = onTerminal();
      const counts = [...text.matchAll(/\revtrace: convert --to jsonl: ([\d,]+) events, [\d,]+\/s\x1b\[K/g)].map((m) =>
        Number(m[1]!.replace(/,/g, '')),
      );
      expect(counts.length).toBeGreaterThan(0);
      expect([...counts].sort((a, b) => a - b)).toEqual(counts);
      expect(counts.at(-1)!).toBeLessThanOrEqual(EVENTS);
      expect(text).toMatch(
        new RegExp(`\\r\\x1b\\[Kevtrace: ${EVENTS} events written to .*out\\.jsonl \\(jsonl\\)\\r?\\n$`),
      );
    });

    it('is not drawn with -q, nor on a pipe', () => {
      expect(onTerminal('-q')).toBe('');
      const r = spawnSync(process.execPath, [CLI, 'convert', ctf, '-o', join(dir, 'out.jsonl'), '--to', 'jsonl'], {
        encoding: 'utf8',
      });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toBe(`evtrace: ${EVENTS} events written to ${join(dir, 'out.jsonl')} (jsonl)\n`);
    });
  },
);
