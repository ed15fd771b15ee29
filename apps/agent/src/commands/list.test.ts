import { findTracefs } from '@evtrace/tracefs';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { runCli } from '../program.ts';
import { expectValid } from '../testing/schemas.ts';

function setup(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root: the catalogue is readable by root only';
  try {
    findTracefs();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

async function run(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

const why = setup();

describe.skipIf(why !== undefined)(`evtrace list${why ? ` (skipped: ${why})` : ''}`, () => {
  it('lists the catalogue, and only the events a glob selects', async () => {
    const all = await run('list');
    expect(all.code).toBe(ExitCode.Ok);
    const lines = all.stdout.trimEnd().split('\n');
    expect(lines).toContain('kmem:kmalloc');
    expect(lines).toContain('sched:sched_switch');
    const sched = (await run('list', 'sched:*')).stdout.trimEnd().split('\n');
    expectValid(
      '@evtrace/tracefs/schemas/event-list.json',
      JSON.parse((await run('list', 'sched:*', '--json')).stdout),
    );
    expect(sched.every((l) => l.startsWith('sched:'))).toBe(true);
    expect(sched).toEqual(lines.filter((l) => l.startsWith('sched:')));
  });

  it('prints fields as format files declare them, and as JSON', async () => {
    const text = await run('list', 'sched:sched_switch', '--fields');
    expect(text.stdout).toMatch(/^ {4}char prev_comm\[16\];\s+offset:8 size:16 signed:0$/m);
    const json = JSON.parse((await run('list', 'kmem:kmalloc', '--json', '--fields')).stdout);
    expect(json).toHaveLength(1);
    expectValid('@evtrace/tracefs/schemas/event-list.json', json);
    expect(json[0]).toMatchObject({ system: 'kmem', event: 'kmalloc' });
    expect(json[0].id).toBeGreaterThan(0);
    expect(json[0].fields).toContainEqual(expect.objectContaining({ name: 'bytes_req', size: 8, signed: false }));
  });

  it('fails with status 1 naming a glob that matches nothing', async () => {
    const r = await run('list', 'nosuchsystem:*');
    expect(r.code).toBe(ExitCode.Failure);
    expect(r.stderr).toMatch(/unknown event 'nosuchsystem:\*'/);
  });
});
