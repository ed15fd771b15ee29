import { describe, expect, it } from 'vitest';
import { globToRegExp, listEvents, matchEvents, parseAvailableEvents, readEventFormat } from './catalog.ts';
import { TracefsError } from './errors.ts';
import { tracefsInMounts } from './mount.ts';
import { tracefsForTests } from './testing/env.ts';

const CATALOGUE = parseAvailableEvents(
  'sched:sched_switch\nsched:sched_wakeup\nkmem:kmalloc\nkmem:kfree\nirq:softirq_entry\n',
);

describe('event selection', () => {
  it('matches system:event globs, bare systems and character classes, once each in catalogue order', () => {
    const names = (p: string[]) => matchEvents(CATALOGUE, p).map((e) => `${e.system}:${e.event}`);
    expect(names(['sched:*'])).toEqual(['sched:sched_switch', 'sched:sched_wakeup']);
    expect(names(['kmem'])).toEqual(['kmem:kmalloc', 'kmem:kfree']);
    expect(names(['*:k?ree', 'kmem:kfree', 'sched:sched_[s]*'])).toEqual(['sched:sched_switch', 'kmem:kfree']);
    expect(globToRegExp('a.b[!c]*').test('a.bd-x')).toBe(true);
    expect(globToRegExp('a.b').test('axb')).toBe(false);
  });

  it('names the pattern that matches nothing', () => {
    expect(() => matchEvents(CATALOGUE, ['kmem:kmalloc', 'kmem:nope'])).toThrowError(
      expect.objectContaining({ code: 'ERR_TRACEFS_EVENT', message: expect.stringContaining("'kmem:nope'") }),
    );
    expect(() => matchEvents(CATALOGUE, ['nosys'])).toThrow(TracefsError);
  });

  it('finds tracefs in a mounts table, decoding escaped spaces', () => {
    const text = 'proc /proc proc rw 0 0\nnodev /mnt/my\\040trace tracefs rw,relatime 0 0\n';
    expect(tracefsInMounts(text)).toBe('/mnt/my trace');
    expect(tracefsInMounts('proc /proc proc rw 0 0\n')).toBeUndefined();
  });
});

const env = tracefsForTests();

describe.skipIf(env.why !== undefined)(`the real catalogue${env.why ? ` (skipped: ${env.why})` : ''}`, () => {
  it('lists kmem and sched events and reads their fields', () => {
    const all = listEvents(env.path!);
    expect(all.length).toBeGreaterThan(100);
    const [kmalloc] = matchEvents(all, ['kmem:kmalloc']);
    const { eventClass } = readEventFormat(env.path!, kmalloc!);
    expect(eventClass.name).toBe('kmem:kmalloc');
    expect(eventClass.ftrace!.fields.map((f) => f.name)).toContain('bytes_req');
  });
});
