import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TracefsError } from '../errors.ts';
import { lastErrorLogEntry } from '../filter/filter.ts';
import { parseCpuStats } from '../pages/pages.ts';
import { tracefsForTests } from '../testing/env.ts';
import {
  globToRegExp,
  listEvents,
  matchEvents,
  parseAvailableEvents,
  readEventFormat,
  selectEvents,
} from './catalog.ts';
import { tracefsInMounts } from './mount.ts';

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
    expect(() => globToRegExp('sched:[z-a]*')).toThrowError(expect.objectContaining({ code: 'ERR_TRACEFS_EVENT' }));
  });

  it('names the pattern that matches nothing', () => {
    expect(() => matchEvents(CATALOGUE, ['kmem:kmalloc', 'kmem:nope'])).toThrowError(
      expect.objectContaining({ code: 'ERR_TRACEFS_EVENT', message: expect.stringContaining("'kmem:nope'") }),
    );
    expect(() => matchEvents(CATALOGUE, ['nosys'])).toThrow(TracefsError);
  });

  it('selects from a catalogue file exactly as matchEvents does, exact names by lookup and globs by parsing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'evtrace-catalogue-'));
    const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,5}$/);
    const outcome = (f: () => { system: string; event: string }[]) => {
      try {
        return f().map((e) => `${e.system}:${e.event}`);
      } catch (error) {
        return `${(error as TracefsError).code}: ${(error as Error).message}`;
      }
    };
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(name, name), { minLength: 1, maxLength: 12 }),
        fc.array(fc.oneof(fc.tuple(name, name), fc.constant(['kmem', '*'] as [string, string])), { maxLength: 4 }),
        fc.boolean(),
        (entries, extra, finalNewline) => {
          const text = entries.map(([s, e]) => `${s}:${e}`).join('\n') + (finalNewline ? '\n' : '');
          writeFileSync(join(dir, 'available_events'), text);
          // Names from the catalogue (in another order, one twice), and others that may not be in it.
          const picked = [...entries]
            .reverse()
            .slice(0, 3)
            .map(([s, e]) => `${s}:${e}`);
          const patterns = [...picked, ...picked.slice(0, 1), ...extra.map(([s, e]) => `${s}:${e}`)];
          expect(outcome(() => selectEvents(dir, patterns))).toEqual(
            outcome(() => matchEvents(parseAvailableEvents(text), patterns)),
          );
        },
      ),
    );
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

describe('text parsers of tracefs files', () => {
  it('take the newest error_log entry', () => {
    const log = `[  10.000000] event filter parse error: error: Field not found\n  Command: a == 1\n           ^\n[  12.500000] event filter parse error: error: Invalid operator\n  Command: a ==\n             ^\n`;
    expect(lastErrorLogEntry(log)).toBe(
      '[  12.500000] event filter parse error: error: Invalid operator\n  Command: a ==\n             ^',
    );
    expect(lastErrorLogEntry('')).toBeUndefined();
  });

  it('never throw on arbitrary text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 400 }), (text) => {
        parseAvailableEvents(text);
        tracefsInMounts(text);
        parseCpuStats(text);
        lastErrorLogEntry(text);
        try {
          globToRegExp(text);
        } catch (error) {
          expect(error).toBeInstanceOf(TracefsError);
        }
      }),
      { numRuns: 500 },
    );
  });
});
