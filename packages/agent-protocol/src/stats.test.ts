import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type BufferStats, checkBufferStats } from './stats.ts';
import { parseRequest } from './validate.ts';

const good: BufferStats = {
  name: 'web',
  origin: 'tracefs',
  unit: 'events',
  instance: 'evtrace-0a1b2c3d-1-1',
  interval: 1000,
  samples: [
    {
      seq: 7,
      time: 1_790_000_000_000,
      cpus: [
        {
          cpu: 0,
          size: 19456,
          fill: 0.25,
          peakFill: 0.75,
          entries: 40,
          overrun: 0,
          dropped: 3,
          lost: 3,
          written: 90,
          read: 50,
          head: 90,
        },
      ],
    },
  ],
};

describe('the stats op', () => {
  it('reads a request with and without since, and names what is wrong', () => {
    expect(parseRequest('{"id":1,"op":"stats","name":"web"}')).toEqual({
      ok: true,
      value: { id: 1, op: 'stats', name: 'web' },
    });
    expect(parseRequest('{"id":2,"op":"stats","name":"web","since":7}')).toMatchObject({ value: { since: 7 } });
    expect(parseRequest('{"id":3,"op":"stats","name":"web","since":1.5}')).toMatchObject({
      ok: false,
      id: 3,
      message: expect.stringContaining('request.since'),
    });
    expect(parseRequest('{"id":4,"op":"stats"}')).toMatchObject({ ok: false, message: 'request.name: missing' });
  });

  it('accepts well-formed gauges and names the first wrong member of others', () => {
    expect(checkBufferStats(good)).toBeUndefined();
    expect(checkBufferStats({ ...good, origin: 'disk' })).toBe('stats.origin: must be tracefs or ringbuf');
    const cpu = good.samples[0]!.cpus[0]!;
    const bad = (c: object) =>
      checkBufferStats({ ...good, samples: [{ ...good.samples[0]!, cpus: [{ ...cpu, ...c }] }] });
    expect(bad({ fill: 1.5 })).toBe('stats.samples[0].cpus[0].fill: must be a number 0..1');
    expect(bad({ peakFill: undefined })).toBe('stats.samples[0].cpus[0].peakFill: must be a number 0..1');
    expect(bad({ lost: -1 })).toBe('stats.samples[0].cpus[0].lost: must be a non-negative integer');
    expect(bad({ entries: null })).toBeUndefined();
    expect(bad({ entries: '4' })).toBe('stats.samples[0].cpus[0].entries: must be a non-negative integer or null');
    expect(checkBufferStats({ ...good, interval: 0 })).toBe('stats.interval: must be a positive integer');
  });

  it('never throws on any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const r = checkBufferStats(v);
        expect(r === undefined || typeof r === 'string').toBe(true);
      }),
    );
  });
});
