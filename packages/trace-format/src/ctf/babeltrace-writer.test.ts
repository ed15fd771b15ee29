import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ctfFixtureCases, sharedFixtures } from './fixtures.ts';
import { openCtfTrace } from './reader.ts';
import { createBabeltraceTextFormatter } from './text.ts';

const haveBt2 = spawnSync('babeltrace2', ['--version']).status === 0;
const fixtures = sharedFixtures();
const root = mkdtempSync(join(tmpdir(), 'evtrace-bt2-writer-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function traceDirs(dir: string): string[] {
  const found: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) found.push(...traceDirs(join(dir, e.name)));
    else if (e.name === 'metadata') found.push(dir);
  }
  return found;
}

describe.skipIf(!haveBt2 || !fixtures)(
  `reading what babeltrace2's CTF writer (sink.ctf.fs) writes${haveBt2 && fixtures ? '' : ' (skipped: babeltrace2 (apt-get install babeltrace2) or ../shared/fixtures absent)'}`,
  () => {
    // Traces without events (succeed4, intersection/nostream) give babeltrace2 nothing to write.
    const cases = fixtures
      ? ctfFixtureCases(fixtures).succeed.filter((c) => !['succeed/succeed4', 'intersection/nostream'].includes(c.name))
      : [];
    for (const c of cases) {
      it(`${c.name} rewritten by babeltrace2 reads as babeltrace2 reads it`, () => {
        const out = join(root, c.name.replace('/', '-'));
        const write = spawnSync('babeltrace2', [c.dir, '-c', 'sink.ctf.fs', '-p', `path="${out}"`], {
          encoding: 'utf8',
        });
        expect(write.status, write.stderr).toBe(0);
        const dirs = traceDirs(out);
        expect(dirs.length).toBeGreaterThan(0);
        for (const dir of dirs) {
          const reader = openCtfTrace(dir);
          const format = createBabeltraceTextFormatter({ trace: reader.trace, timestamps: reader.timestamped });
          const run = spawnSync('babeltrace2', ['--clock-gmt', dir], { encoding: 'utf8', maxBuffer: 1 << 28 });
          expect(run.status).toBe(0);
          expect(Array.from(reader.events(), format)).toEqual(run.stdout.split('\n').filter(Boolean));
        }
      });
    }
  },
);
