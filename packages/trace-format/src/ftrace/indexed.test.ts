import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import type { EventClass, TraceEvent } from '../model/types.ts';
import { RECORD_ARGS, recordTraceDat, traceCmdRecording } from '../testing/tracecmd.ts';
import { indexFtrace, indexFtraceProgressively, mergeOrder } from './indexed.ts';
import { openTraceDat, readTraceDat } from './tracedat/read.ts';
import { encodeTraceDat } from './tracedat/write-events.ts';

const u = (size: number) =>
  ({ kind: 'int', size, signed: false, align: 8, byteOrder: 'le', base: 10, encoding: 'none' }) as const;
const request: EventClass = {
  id: 7,
  name: 'app:request',
  streamId: 0,
  payload: {
    kind: 'struct',
    minAlign: 8,
    members: [
      { name: 'id', type: u(64) },
      { name: 'path', type: { kind: 'string', encoding: 'utf8' } },
    ],
  },
};
const tick: EventClass = {
  id: 8,
  name: 'app:tick',
  streamId: 0,
  payload: { kind: 'struct', minAlign: 8, members: [{ name: 'n', type: u(32) }] },
};

/** Four CPUs with interleaved and equal timestamps, gaps that need time extends, two classes. */
function events(n: number): TraceEvent[] {
  return Array.from(
    { length: n },
    (_, i): TraceEvent => ({
      tsNs: 1_000_000n + BigInt(Math.floor(i / 3)) * (i % 11 === 0 ? 300_000_000n : 1000n),
      cpu: i % 4,
      eventClass: i % 5 === 0 ? tick : request,
      fields: i % 5 === 0 ? { n: i } : { id: BigInt(i), path: `/item/${i}` },
    }),
  );
}

const strip = (e: TraceEvent) => ({
  tsNs: e.tsNs,
  cpu: e.cpu,
  name: e.eventClass.name,
  fields: e.fields,
  scopes: e.scopes,
});

describe('indexFtrace', () => {
  for (const compression of ['none', 'zstd'] as const) {
    it(`gives every event of a ${compression} trace.dat at its position, as the sequential reader yields it`, () => {
      const bytes = encodeTraceDat([request, tick], events(5000), { version: 7, compression }).bytes;
      const sequential = [...readTraceDat(bytes).events()];
      const index = indexFtrace(readTraceDat(bytes));
      expect(index.length).toBe(sequential.length);
      expect(index.length).toBe(5000);
      // Backwards and in a stride: positions are independent of the order they are asked in.
      for (let i = index.length - 1; i >= 0; i -= 7) {
        expect(strip(index.event(i))).toEqual(strip(sequential[i]!));
        expect(index.tsNs(i)).toBe(sequential[i]!.tsNs);
        expect(index.cpu(i)).toBe(sequential[i]!.cpu);
        expect(index.eventClass(i).name).toBe(sequential[i]!.eventClass.name);
      }
      expect([...index.lost.values()]).toEqual([0, 0, 0, 0]);
    });
  }

  it('grows a slice at a time, with the compressed chunks kept compressed, to the events the sequential reader yields', () => {
    const bytes = encodeTraceDat([request, tick], events(20_000), { version: 7, compression: 'zstd' }).bytes;
    const sequential = [...readTraceDat(bytes).events()];
    const index = indexFtraceProgressively(readTraceDat(bytes));
    expect(index.length).toBe(0);
    expect(index.done).toBe(false);
    const lengths: number[] = [];
    const progress: number[] = [];
    while (!index.advance(0, 1500)) {
      lengths.push(index.length);
      progress.push(index.progress);
      // What is indexed already reads as it will at the end.
      const i = index.length - 1;
      expect(strip(index.event(i))).toEqual(strip(sequential[i]!));
    }
    expect(lengths.length).toBeGreaterThan(5);
    for (let k = 1; k < lengths.length; k++) {
      expect(lengths[k]!).toBeGreaterThan(lengths[k - 1]!);
      expect(progress[k]!).toBeGreaterThanOrEqual(progress[k - 1]!);
    }
    expect(progress.at(-1)!).toBeLessThanOrEqual(1);
    expect(index.progress).toBe(1);
    expect(index.length).toBe(20_000);
    for (let i = 0; i < index.length; i += 3) {
      expect(strip(index.event(i))).toEqual(strip(sequential[i]!));
      expect(index.pid(i)).toBe(sequential[i]!.scopes?.['event.context']?.common_pid ?? -1);
    }
    expect([...index.bytes.values()].every((b) => b > 0)).toBe(true);
  });

  it('rejects positions outside the trace', () => {
    const index = indexFtrace(readTraceDat(encodeTraceDat([tick], events(10), {}).bytes));
    expect(() => index.event(index.length)).toThrow(RangeError);
    expect(() => index.tsNs(-1)).toThrow(RangeError);
  });

  it('merges runs in time order with ties to the lower run', () => {
    const { which, at } = mergeOrder([new BigInt64Array([1n, 5n, 5n]), new BigInt64Array([0n, 5n, 9n])]);
    expect([...which]).toEqual([1, 0, 0, 0, 1, 1]);
    expect([...at]).toEqual([0, 0, 1, 2, 1, 2]);
  });

  it.each([
    ['version 6', { version: 6 }],
    ['version 7 zstd', { version: 7, compression: 'zstd' }],
  ] as const)('on corrupt %s input throws only TraceFormatError, or in lenient mode keeps what decodes', (_, how) => {
    const good = encodeTraceDat([request, tick], events(400), how).bytes;
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(good.length - 1), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
        fc.boolean(),
        (edits, lenient) => {
          const bytes = Buffer.from(good);
          for (const [at, v] of edits) bytes[at] = v;
          try {
            const index = indexFtrace(readTraceDat(bytes, { lenient }), { lenient });
            expect(index.length).toBeLessThanOrEqual(400 * 2);
            for (let i = 0; i < index.length; i += 13) index.event(i);
          } catch (e) {
            if (!(e instanceof TraceFormatError)) throw e;
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

const { why, root } = traceCmdRecording();

describe.skipIf(why !== '')(`indexFtrace on a trace-cmd recording${why ? ` (skipped: ${why})` : ''}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-indexed-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  it('matches the sequential reader event for event', { timeout: 60_000 }, async () => {
    const file = join(dir, 'k.dat');
    await recordTraceDat(root, file, RECORD_ARGS, 500);
    const sequential = [...openTraceDat(file).events()];
    const index = indexFtrace(openTraceDat(file));
    expect(index.length).toBe(sequential.length);
    expect(index.length).toBeGreaterThan(0);
    for (let i = 0; i < index.length; i++) {
      expect(strip(index.event(i))).toEqual(strip(sequential[i]!));
      expect(index.pid(i)).toBe(sequential[i]!.scopes?.['event.context']?.common_pid);
    }
  });
});
