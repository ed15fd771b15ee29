import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EventClass, TraceEvent } from '../model/types.ts';
import { cyclesToNs, DEFAULT_CLOCK } from './clock.ts';
import { CtfEvent } from './event.ts';
import { createBabeltraceTextFormatter } from './text.ts';

const cls = { id: 0, name: 'tick', streamId: 0, payload: { kind: 'struct', members: [], minAlign: 8 } } as EventClass;

describe('babeltrace2 text times', () => {
  it('are the same whether events count cycles of one clock or carry bigint times', () => {
    const oneGhz = cyclesToNs(DEFAULT_CLOCK);
    const otherGhz = cyclesToNs({ ...DEFAULT_CLOCK, name: 'other', offsetSeconds: 1_700_000_000n });
    const slow = cyclesToNs({ ...DEFAULT_CLOCK, name: 'slow', freq: 1_000_000n });
    const clocks = [oneGhz, otherGhz, slow];
    // Steps that stay within a second, cross one, go back, jump past 2^53, and repeat.
    const step = fc.oneof(
      fc.integer({ min: 0, max: 2000 }),
      fc.integer({ min: -3_000_000_000, max: 3_000_000_000 }),
      fc.constantFrom(0, 137, 999_999_999, 1_000_000_000, 2 ** 53),
    );
    fc.assert(
      fc.property(
        fc.array(fc.record({ step, clock: fc.integer({ min: 0, max: 2 }), big: fc.boolean() }), { maxLength: 40 }),
        fc.bigInt({ min: 0n, max: 2n ** 60n }),
        (steps, start) => {
          let cycles = start;
          const events = steps.map(({ step, clock, big }) => {
            cycles += BigInt(step);
            if (cycles < 0n) cycles = 0n;
            const value = !big && cycles <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(cycles) : cycles;
            return new CtfEvent(value, clocks[clock]!, 0, cls, {}, {});
          });
          const plain: TraceEvent[] = events.map((e) => ({ tsNs: e.tsNs, cpu: 0, eventClass: cls, fields: {} }));
          const ours = createBabeltraceTextFormatter();
          const reference = createBabeltraceTextFormatter();
          expect(events.map(ours)).toEqual(plain.map(reference));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('print the step between events of one clock counted in numbers', () => {
    const clock = cyclesToNs(DEFAULT_CLOCK);
    const line = createBabeltraceTextFormatter();
    const at = (cycles: number) => line(new CtfEvent(cycles, clock, 0, cls, {}, {}));
    expect(at(999_999_990)).toBe('[00:00:00.999999990] (+?.?????????) tick: ');
    expect(at(1_000_000_027)).toBe('[00:00:01.000000027] (+0.000000037) tick: ');
    expect(at(1_000_000_020)).toBe('[00:00:01.000000020] (-0.000000007) tick: ');
    expect(at(3_500_000_020)).toBe('[00:00:03.500000020] (+2.500000000) tick: ');
  });
});
