import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { schedulingOf, threadsScheduling as threads } from '../testing/env.ts';
import { type Raised, REALTIME_PRIORITY, raisePriority, restorePriority } from './priority.ts';

const root = process.getuid?.() === 0;

/** Raises, runs `check` while raised, and always restores. */
function whileRaised(wanted: number | undefined, check: (raised: Raised | undefined) => void): void {
  const raised = raisePriority(wanted);
  try {
    check(raised);
  } finally {
    if (raised !== undefined) restorePriority(raised);
  }
}

describe.skipIf(!root)(
  `raising the recorder's threads${root ? '' : ' (skipped: not root, nothing can be raised)'}`,
  () => {
    it('makes every thread SCHED_FIFO at the lowest real-time priority by default, and puts each back', () => {
      const before = threads();
      expect([...before.values()].every((t) => t.policy === 0)).toBe(true);
      whileRaised(undefined, (raised) => {
        expect(raised?.kind).toBe('realtime');
        const now = threads();
        for (const tid of raised!.before.keys())
          expect(now.get(tid)).toMatchObject({ policy: 1, rtPriority: REALTIME_PRIORITY });
        // Every thread there was when it was raised, not only the calling one.
        expect([...before.keys()].every((tid) => raised!.before.has(tid) || !now.has(tid))).toBe(true);
      });
      const after = threads();
      for (const [tid, was] of before) if (after.has(tid)) expect(after.get(tid)).toEqual(was);
    });

    it('leaves a command started meanwhile to ordinary scheduling (SCHED_RESET_ON_FORK)', () => {
      whileRaised(undefined, (raised) => {
        expect(raised?.kind).toBe('realtime');
        const child = schedulingOf(execFileSync('cat', ['/proc/self/stat']).toString());
        expect(child).toMatchObject({ policy: 0, rtPriority: 0 });
      });
    });

    it('sets a nice value when given one, and puts the old values back', () => {
      const before = threads();
      whileRaised(-5, (raised) => {
        expect(raised).toMatchObject({ kind: 'nice', nice: -5 });
        const now = threads();
        for (const tid of raised!.before.keys()) expect(now.get(tid)).toMatchObject({ nice: -5, policy: 0 });
      });
      const after = threads();
      for (const [tid, was] of before) if (after.has(tid)) expect(after.get(tid)?.nice).toBe(was.nice);
    });

    it('changes nothing when told not to', () => {
      const before = threads();
      expect(raisePriority(false)).toBeUndefined();
      expect(threads()).toEqual(before);
    });

    it('where it is not allowed (an ordinary user), raises nothing and says so with undefined', () => {
      const module = fileURLToPath(new URL('./priority.ts', import.meta.url));
      const script = `
      const { raisePriority } = await import(${JSON.stringify(module)});
      const fs = process.getBuiltinModule('node:fs');
      const sched = () => {
        const stat = fs.readFileSync('/proc/self/stat', 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return [f[16], f[37], f[38]].join(' ');
      };
      const before = sched();
      const raised = raisePriority(undefined);
      process.stdout.write(JSON.stringify({ raised: raised ?? null, same: sched() === before }));
    `;
      const out = execFileSync(
        'setpriv',
        ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '--input-type=module', '-e', script],
        { encoding: 'utf8' },
      );
      expect(JSON.parse(out)).toEqual({ raised: null, same: true });
    });
  },
);
