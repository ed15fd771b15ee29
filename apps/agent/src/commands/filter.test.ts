import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { runCli } from '../program.ts';
import { expectValid } from '../testing/schemas.ts';

const FORMATS = new URL('../../../../packages/filters/fixtures/events', import.meta.url).pathname;

async function check(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['filter', 'check', '--formats', FORMATS, '--nr-cpus', '2', ...args], {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
  });
  return { code, stdout, stderr };
}

describe('evtrace filter check', () => {
  it('exits 0 for an expression the kernel accepts', async () => {
    const r = await check('-e', 'kmem:kmalloc', 'bytes_req > 64 && node == 0 &&');
    expect([r.code, r.stdout]).toEqual([ExitCode.Ok, 'ok\n']);
  });

  it('exits 3 with the kernel message under a caret at its column', async () => {
    const r = await check('-e', 'kmem:kmalloc', 'bytes_req > 64 && nod == 0');
    expect(r.code).toBe(ExitCode.Rejected);
    const [line, caret, message] = r.stdout.split('\n');
    expect(line).toBe('bytes_req > 64 && nod == 0');
    expect(caret).toBe(`${' '.repeat(22)}^`);
    expect(message).toBe("Field not found ('nod' is not a field of kmem:kmalloc (did you mean 'node'?))");
  });

  it('prints {"ok": false, "message", "column"} with --json', async () => {
    const r = await check('-e', 'sched:sched_switch', '--json', 'prev_comm == 5');
    expect(r.code).toBe(ExitCode.Rejected);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, message: 'Expecting string field', column: 14 });
    expectValid('@evtrace/filters/schemas/check.json', JSON.parse(r.stdout));
    const ok = await check('-e', 'sched:sched_switch', '--json', 'prev_comm ~ "kworker*" && CPU & CPUS{1}');
    expect([ok.code, JSON.parse(ok.stdout)]).toEqual([ExitCode.Ok, { ok: true }]);
    expectValid('@evtrace/filters/schemas/check.json', JSON.parse(ok.stdout));
  });

  it('resolves .function through --kallsyms', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'evtrace-ksyms-'));
    const file = join(dir, 'kallsyms');
    writeFileSync(file, 'ffffffff81000000 T do_one\nffffffff81000100 T do_two\n');
    const ok = await check('-e', 'kmem:kmalloc', '--kallsyms', file, 'call_site.function == do_one');
    expect(ok.code).toBe(ExitCode.Ok);
    const bad = await check('-e', 'kmem:kmalloc', '--kallsyms', file, '--json', 'call_site.function == do_three');
    expect(JSON.parse(bad.stdout)).toMatchObject({ ok: false, message: 'Function not found', column: 31 });
    expectValid('@evtrace/filters/schemas/check.json', JSON.parse(bad.stdout));
  });

  it('documents itself as a man page', async () => {
    let out = '';
    const code = await runCli(['filter', 'check', '--help'], { stdout: (t) => (out += t), stderr: () => {} });
    expect(code).toBe(ExitCode.Ok);
    expect(out).toContain('evtrace filter check - say whether the kernel would accept a filter');
    expect(out).toMatch(/^EXIT STATUS$/m);
    expect(out).toContain("evtrace filter check -e kmem:kmalloc 'bytes_req > 4096 && node == 0'");
  });

  it('fails with 1 for an unknown event and 2 for a malformed --event', async () => {
    const missing = await check('-e', 'kmem:nope', 'x == 1');
    expect(missing.code).toBe(ExitCode.Failure);
    expect(missing.stderr).toContain('no event kmem:nope');
    expect((await check('-e', 'kmalloc', 'x == 1')).code).toBe(ExitCode.Usage);
  });
});
