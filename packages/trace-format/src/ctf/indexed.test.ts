/**
 * The progressive CTF index against the sequential reader on every real fixture trace (babeltrace's and Trace
 * Compass's, one to many streams, CTF 1.8 and 2): same events in the same order whether indexed at once or a few
 * at a time, decoded again in any order; and over mutated streams, only typed errors, the lenient index agreeing
 * with the lenient reader.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import type { TraceEvent } from '../model/types.ts';
import { ctfFixtureCases, sharedFixtures, withEditedStream } from './fixtures.ts';
import { openCtfTrace, readCtfTrace } from './reader.ts';

const fixtures = sharedFixtures();

/** What makes an event itself, tsNs read through its getter. */
const plain = (e: TraceEvent) => ({
  tsNs: e.tsNs,
  cpu: e.cpu,
  name: e.eventClass.name,
  fields: e.fields,
  scopes: e.scopes,
});

function traceDirs(): { name: string; dir: string }[] {
  if (!fixtures) return [];
  const { succeed } = ctfFixtureCases(fixtures);
  const ctf2 = join(fixtures, 'ctf-tracecompass/ctf/src/main/resources');
  return [
    ...succeed,
    ...readdirSync(ctf2)
      .filter((n) => n.startsWith('CTF2'))
      .map((n) => ({ name: n, dir: join(ctf2, n) })),
  ];
}

/** A deterministic shuffle of 0..n-1. */
function shuffled(n: number, seed: number): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  let x = seed || 1;
  for (let i = n - 1; i > 0; i--) {
    x = (x * 1103515245 + 12345) >>> 0;
    const j = x % (i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

describe.skipIf(!fixtures)(`indexing CTF traces${fixtures ? '' : ' (skipped: ../shared/fixtures absent)'}`, () => {
  const cases = traceDirs();

  it('has real traces, some of several streams', () => {
    expect(cases.length).toBeGreaterThan(20);
  });

  for (const c of cases) {
    it(`${c.name}: the index holds the reader's events in its order, indexed at once or bit by bit`, () => {
      const reader = openCtfTrace(c.dir, { lenient: true });
      const want = [...reader.events()].map(plain);
      const whole = openCtfTrace(c.dir, { lenient: true }).index().finish();
      expect(whole.done).toBe(true);
      expect(whole.progress).toBe(1);
      expect(whole.length).toBe(want.length);
      // Random order, across packets and streams: each event decoded again as the reader decoded it.
      for (const i of shuffled(whole.length, whole.length).slice(0, 2000)) {
        expect(plain(whole.event(i)), `event ${i}`).toEqual(want[i]);
        expect(whole.tsNs(i)).toBe(want[i]!.tsNs);
        expect(whole.cpu(i)).toBe(want[i]!.cpu);
        expect(whole.eventClass(i).name).toBe(want[i]!.name);
      }
      // A few events per step: the rows already indexed never change as the index grows.
      const steps = openCtfTrace(c.dir, { lenient: true }).index();
      let seen = 0;
      let rounds = 0;
      while (!steps.advance(0, 7)) {
        expect(steps.length).toBeGreaterThan(seen);
        expect(steps.progress).toBeLessThanOrEqual(1);
        if (steps.length > 0) expect(plain(steps.event(steps.length - 1))).toEqual(want[steps.length - 1]);
        seen = steps.length;
        if (++rounds > 1_000_000) throw new Error('the index never finishes');
      }
      expect(steps.length).toBe(want.length);
    });
  }

  it('finds the first rows of a multi-stream trace long before it has read the streams', () => {
    const multi = cases
      .map((c) => ({ ...c, reader: openCtfTrace(c.dir), events: [...openCtfTrace(c.dir).events()].map(plain) }))
      .filter((c) => c.reader.streamFiles.length > 1)
      .sort((a, b) => b.events.length - a.events.length)[0]!;
    expect(multi.events.length).toBeGreaterThan(2000);
    const index = multi.reader.index();
    index.advance(0, 10);
    expect(index.length).toBeGreaterThanOrEqual(10);
    // The time budget is looked at every 1024 events: that many at most were read for these 10.
    expect(index.length).toBeLessThanOrEqual(1024);
    expect(index.done).toBe(false);
    expect(index.progress).toBeLessThan(0.5);
    const first = multi.events.slice(0, 10);
    expect(Array.from({ length: 10 }, (_, i) => plain(index.event(i)))).toEqual(first);
    expect(() => index.event(index.length)).toThrow(RangeError);
  });

  it('over mutated streams: only TraceFormatError; the lenient index agrees with the lenient reader', () => {
    const small = cases
      .map((c) => ({ c, files: streamFiles(c.dir) }))
      .filter(({ files }) => files.length > 0 && files.every((f) => statSync(f).size <= 65536))
      .map(({ c, files }) => ({
        metadata: readFileSync(join(c.dir, 'metadata')),
        streams: files.map((path) => ({ path, data: readFileSync(path) as Uint8Array })),
      }));
    expect(small.length).toBeGreaterThan(10);
    fc.assert(
      fc.property(
        fc.nat(small.length - 1),
        fc.nat(),
        fc.array(fc.record({ at: fc.nat(), value: fc.nat(255) }), { minLength: 1, maxLength: 6 }),
        (i, s, edits) => {
          const input = withEditedStream(small[i]!, s, edits);
          for (const lenient of [false, true]) {
            try {
              const want = [...readCtfTrace(input, { lenient }).events()].map(plain);
              const index = readCtfTrace(input, { lenient }).index().finish();
              expect(index.length).toBe(want.length);
              for (let j = 0; j < index.length; j++) expect(plain(index.event(j))).toEqual(want[j]);
            } catch (error) {
              if (!(error instanceof TraceFormatError)) throw error;
              expect(lenient && error.code === 'ERR_TRACE_CTF_PACKET').toBe(false);
            }
          }
        },
      ),
      { numRuns: 100 },
    );
  }, 120_000);
});

function streamFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => n !== 'metadata' && !n.startsWith('.'))
    .map((n) => join(dir, n))
    .filter((p) => statSync(p).isFile());
}
