import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { tracefsForTests } from '../testing/env.ts';
import { createInstance, instanceOwner, listInstances } from './instance.ts';

const env = tracefsForTests();
const INSTANCE = new URL('./instance.ts', import.meta.url).href;

/** A child process that creates an instance, prints its name, then runs `then`. */
const script = (tracefs: string, then: string) =>
  `import { createInstance } from ${JSON.stringify(INSTANCE)};
   const inst = createInstance(${JSON.stringify(tracefs)});
   console.log(inst.name);
   ${then}`;

describe('instance names', () => {
  it("tell one-shot instances from an owner's, and refuse what evtrace did not make", () => {
    expect(instanceOwner('evtrace-1234-0')).toEqual({ pid: 1234, owner: undefined });
    // An all-digit pid of 8 characters is still a pid when no owner segment follows.
    expect(instanceOwner('evtrace-12345678-3')).toEqual({ pid: 12345678, owner: undefined });
    expect(instanceOwner('evtrace-0123abcd-77-1')).toEqual({ pid: 77, owner: '0123abcd' });
    for (const foreign of ['evtrace.p.team.app', 'evtrace-xyz-1-0', 'evtrace-0123ABCD-1-0', 'mine', 'evtrace--1-0'])
      expect(instanceOwner(foreign)).toBeUndefined();
  });

  it('refuses an owner tag that is not 8 hex digits', () => {
    expect(() => createInstance('/nonexistent', '../x')).toThrow(
      expect.objectContaining({ code: 'ERR_TRACEFS_SETTING', message: expect.stringMatching(/8 hex digits/) }),
    );
  });
});

describe.skipIf(env.why !== undefined)(`instance clean-up${env.why ? ` (skipped: ${env.why})` : ''}`, () => {
  it('removes the instance when the process dies of an uncaught exception', () => {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script(env.path!, "throw new Error('boom');")]);
    const name = r.stdout.toString().trim();
    expect(name).toMatch(/^evtrace-\d+-0$/);
    expect(r.status).not.toBe(0);
    expect(r.stderr.toString()).toContain('boom');
    expect(listInstances(env.path!)).not.toContain(name);
  });

  it('removes the instance on SIGTERM when nobody handles it, and still dies of the signal', async () => {
    const child = spawn(process.execPath, [
      '--input-type=module',
      '-e',
      script(env.path!, 'setTimeout(() => {}, 30000);'),
    ]);
    const name = await new Promise<string>((resolve) => child.stdout.once('data', (d) => resolve(String(d).trim())));
    expect(listInstances(env.path!)).toContain(name);
    const exited = new Promise<NodeJS.Signals | null>((r) => child.on('exit', (_code, signal) => r(signal)));
    child.kill('SIGTERM');
    expect(await exited).toBe('SIGTERM');
    expect(listInstances(env.path!)).not.toContain(name);
  });
});
