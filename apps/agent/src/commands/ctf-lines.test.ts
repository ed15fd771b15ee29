/**
 * CTF inputs through the line writers (cat, cat --json, cat --filter, convert --to jsonl|text) and the packet copy
 * (convert --to ctf): the same output as babeltrace2 and as the event formatters over the events `--filter` keeps.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileFilter, type EventPredicate, parseFilter } from '@evtrace/filters';
import {
  createBabeltraceTextFormatter,
  createJsonFormatter,
  openCtfTrace,
  type TraceEvent,
} from '@evtrace/trace-format';
import { afterAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { run } from '../testing/sample-traces.ts';
import { writeU64Ctf } from '../testing/u64-ctf.ts';

const dir = mkdtempSync(join(tmpdir(), 'evtrace-ctf-lines-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const u64 = join(dir, 'u64');
writeU64Ctf(u64, 20_000);

/** What the events path prints: the events a filter keeps, each through the event formatter. */
function reference(trace: string, format: 'text' | 'json', expr?: string, limit = Number.POSITIVE_INFINITY): string {
  const reader = openCtfTrace(trace);
  const line =
    format === 'json'
      ? createJsonFormatter()
      : (() => {
          const f = createBabeltraceTextFormatter({ trace: reader.trace, timestamps: reader.timestamped });
          return (e: TraceEvent) => `${f(e)}\n`;
        })();
  const filters = new Map<unknown, EventPredicate>();
  const keep = (e: TraceEvent) => {
    if (expr === undefined) return true;
    let f = filters.get(e.eventClass);
    if (f === undefined) filters.set(e.eventClass, (f = compileFilter(parseFilter(expr, e.eventClass), e.eventClass)));
    return f(e);
  };
  let out = '';
  let n = 0;
  for (const e of reader.events()) {
    if (!keep(e)) continue;
    if (n++ >= limit) break;
    out += line(e);
  }
  return out;
}

describe('CTF lines written from the packets', () => {
  it("cat and cat --json: the event formatters' lines", async () => {
    expect((await run('cat', u64)).stdout).toBe(reference(u64, 'text'));
    expect((await run('cat', '--json', u64)).stdout).toBe(reference(u64, 'json'));
  });

  it('--filter keeps what the filter keeps, judged on the values, the delta from the line before', async () => {
    // Judged on the payload's bytes after each class's first event; CPU is the packet's.
    for (const expr of [
      'value > 12345',
      'value < 100 || value == 19999',
      'value & 1',
      'value > 9 && CPU == 0',
      'CPU != 0',
    ]) {
      const text = await run('cat', '--filter', expr, u64);
      expect(text.code).toBe(ExitCode.Ok);
      expect(text.stdout).toBe(reference(u64, 'text', expr));
      expect((await run('cat', '--json', '--filter', expr, u64)).stdout).toBe(reference(u64, 'json', expr));
    }
    expect((await run('cat', '--filter', 'value & 1', '-n', '5', u64)).stdout).toBe(
      reference(u64, 'text', 'value & 1', 5),
    );
  });

  it('--filter naming no field of any class is still a usage error', async () => {
    const r = await run('cat', '--filter', 'nosuch > 1', u64);
    expect(r.code).toBe(ExitCode.Usage);
    expect(r.stderr).toMatch(/'nosuch' is not a field of one_u64/);
    // Also when no event is asked for: the expression is judged on the classes the trace declares.
    const none = await run('cat', '-n', '0', '--filter', 'nosuch > 1', u64);
    expect(none.code).toBe(ExitCode.Usage);
    expect(none.stderr).toMatch(/'nosuch' is not a field of one_u64/);
    const fits = await run('cat', '-n', '0', '--filter', 'value > 1', u64);
    expect([fits.code, fits.stdout]).toEqual([ExitCode.Ok, '']);
  });

  it('convert --to jsonl and --to text write what cat --json and cat print', async () => {
    for (const [to, flags] of [
      ['jsonl', ['--json']],
      ['text', []],
    ] as const) {
      const out = join(dir, `out.${to}`);
      const r = await run('convert', u64, '--to', to, '-o', out);
      expect(r.stderr).toBe(`evtrace: 20000 events written to ${out} (${to})\n`);
      expect(readFileSync(out, 'utf8')).toBe((await run('cat', ...flags, u64)).stdout);
    }
  });

  it('convert --to ctf copies the packets as they are', async () => {
    const out = join(dir, 'copy');
    const r = await run('convert', u64, '--to', 'ctf', '-o', out);
    expect(r.code).toBe(ExitCode.Ok);
    expect(r.stderr).toBe(`evtrace: 20000 events written to ${out} (ctf)\n`);
    expect(readdirSync(out).sort()).toEqual(readdirSync(u64).sort());
    for (const name of readdirSync(u64)) expect(readFileSync(join(out, name))).toEqual(readFileSync(join(u64, name)));
  });
});

const FIXTURES = new URL(
  '../../../../../shared/fixtures/ctf-babeltrace-v2.0.4/tests/data/ctf-traces/succeed',
  import.meta.url,
).pathname;
const bt2 = spawnSync('babeltrace2', ['--version']).status === 0;
const skip = !existsSync(FIXTURES)
  ? `${FIXTURES} is absent`
  : !bt2
    ? 'babeltrace2 is not installed (apt-get install babeltrace2)'
    : undefined;

describe.skipIf(skip !== undefined)(`CTF lines against babeltrace2${skip ? ` (skipped: ${skip})` : ''}`, () => {
  for (const name of ['wk-heartbeat-u', 'sequence', 'debug-info', 'trace-with-index', 'lttng-crash']) {
    it(`cat ${name} prints what babeltrace2 --clock-gmt prints`, async () => {
      const trace = join(FIXTURES, name);
      const theirs = execFileSync('babeltrace2', ['--clock-gmt', trace], { maxBuffer: 1 << 28, encoding: 'utf8' });
      expect((await run('cat', trace)).stdout).toBe(theirs);
    });
  }
});
