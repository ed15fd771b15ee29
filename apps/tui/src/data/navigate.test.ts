import { describe, expect, it } from 'vitest';
import { deltaText, parseTime, positionAtTime, searchPattern, searchStore } from './navigate.ts';
import type { EventStore } from './store.ts';

const times = [5n, 10n, 10n, 20n, 1_000_000_030n];
const store = { length: times.length, tsNs: (i: number) => times[i]! } as EventStore;

describe('navigation', () => {
  it('reads times as the column prints them, or relative to the selection', () => {
    // Shown times are rounded to the microsecond: 12.524003 is shown for 12.5240025 on.
    expect(parseTime('12.524003', 0n)).toEqual({ ns: 12_524_002_500n });
    expect(parseTime('12.524002500', 0n)).toEqual({ ns: 12_524_002_500n });
    expect(parseTime('3', 0n)).toEqual({ ns: 2_999_999_500n });
    expect(parseTime('.5', 0n)).toEqual({ ns: 499_999_500n });
    expect(parseTime('+0.000001', 100n)).toEqual({ ns: 1_100n });
    expect(parseTime('-1', 2_000_000_000n)).toEqual({ ns: 1_000_000_000n });
    expect(parseTime('12:30', 0n)).toEqual({ error: expect.stringContaining('not a time: "12:30"') });
    expect(parseTime('', 0n)).toHaveProperty('error');
  });

  it('finds the first event at or after a time, the last when all are earlier', () => {
    expect(positionAtTime(store, 0n)).toBe(0);
    expect(positionAtTime(store, 10n)).toBe(1);
    expect(positionAtTime(store, 11n)).toBe(3);
    expect(positionAtTime(store, 2_000_000_000n)).toBe(4);
  });

  it('searches by regular expression, or literally when the text is not one, case-insensitive without capitals', () => {
    expect(searchPattern('demo-.*net').test('x DEMO-io-net')).toBe(true);
    expect(searchPattern('Demo').test('demo')).toBe(false);
    expect(searchPattern('call_site=(').test('call_site=(nil)')).toBe(true);
  });

  it('searches forward and backward from the selection, wrapping once, and says when nothing matches', async () => {
    const text = ['a', 'b', 'a', 'c', 'b'];
    const run = (from: number, step: 1 | -1, re: RegExp) =>
      new Promise<number | undefined>((done) =>
        searchStore(
          store,
          from,
          step,
          (i) => re.test(text[i]!),
          (p) => p.done && done(p.found),
        ),
      );
    expect(await run(0, 1, /b/)).toBe(1);
    expect(await run(1, 1, /b/)).toBe(4);
    expect(await run(4, 1, /a/)).toBe(0);
    expect(await run(2, -1, /b/)).toBe(1);
    expect(await run(0, -1, /b/)).toBe(4);
    expect(await run(0, 1, /z/)).toBeUndefined();
  });

  it('prints deltas in the unit that reads best', () => {
    expect(deltaText(1_500n)).toBe('+1.500 us');
    expect(deltaText(-2_000_001n)).toBe('-2.000001 ms');
    expect(deltaText(3_000_000_007n)).toBe('+3.000000007 s');
    expect(deltaText(12n)).toBe('+12 ns');
  });
});
