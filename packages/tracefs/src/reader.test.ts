import { describe, expect, it } from 'vitest';
import { MAX_POLL_MS, MIN_POLL_MS, nextInterval } from './reader.ts';

describe('nextInterval', () => {
  const buffer = 1410 * 1024;
  it('sleeps until the busiest CPU fills an eighth of its buffer at the measured rate', () => {
    // 20 KB/ms fills 176 KB in about 8.8 ms.
    expect(nextInterval(20, 200_000, 10, buffer)).toBeCloseTo(buffer / 8 / 20_000, 5);
  });
  it('stays within its bounds and lengthens at most twofold per pass', () => {
    expect(nextInterval(4, 0, 10, buffer)).toBe(8);
    expect(nextInterval(MAX_POLL_MS, 0, 10, buffer)).toBe(MAX_POLL_MS);
    expect(nextInterval(10, 10_000_000, 1, buffer)).toBe(MIN_POLL_MS);
  });
});
