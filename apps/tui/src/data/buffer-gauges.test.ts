import type { BufferStatsSample, CpuBufferStats } from '@evtrace/agent-protocol';
import { describe, expect, it } from 'vitest';
import { bufferRows } from '../views/cpus.tsx';
import { gaugeView } from './buffer-gauges.ts';
import type { SourceStats } from './source.ts';

const cpu = (cpu: number, fill: number, lost: number): CpuBufferStats => ({
  cpu,
  size: 16384,
  fill,
  peakFill: Math.min(1, fill * 2),
  entries: 10,
  overrun: 0,
  dropped: lost,
  lost,
  written: 100,
  read: 90,
  head: 100,
});
const sample = (seq: number, cpus: CpuBufferStats[]): BufferStatsSample => ({ seq, time: seq * 1000, cpus });
const meta = { origin: 'tracefs', instance: 'evtrace-x', interval: 1000, unit: 'events' } as const;

describe('buffer gauges over time', () => {
  it('keeps each CPU peak fill per sample and turns the lost counter into the loss of each interval', () => {
    const v = gaugeView(meta, [
      sample(1, [cpu(0, 0.1, 5), cpu(1, 0, 0)]),
      sample(2, [cpu(0, 0.9, 5), cpu(1, 0.5, 40)]),
      sample(3, [cpu(0, 1, 105), cpu(1, 0.25, 40)]),
    ]);
    expect(v.origin).toBe('kernel per-CPU stats of instance evtrace-x');
    expect(v.cpus.map((c) => [c.cpu, c.fill, c.lost])).toEqual([
      [0, 1, 105],
      [1, 0.25, 40],
    ]);
    // The history is each interval's peak; the gauge the fill at the sample.
    expect(v.cpus[0]!.fills).toEqual([0.2, 1, 1]);
    // The first sample's loss happened before the viewer looked: counted in `lost`, not as an interval's.
    expect(v.cpus[0]!.losses).toEqual([0, 0, 100]);
    expect(v.cpus[1]!.losses).toEqual([0, 40, 0]);
  });

  it('draws fill against a full buffer and the loss in its own column, within the width', () => {
    const buffers = gaugeView(meta, [sample(1, [cpu(0, 0, 0)]), sample(2, [cpu(0, 0.25, 30)])]);
    const stats: SourceStats = { cpus: [], types: [], eventsPerSec: 0, lost: 30, total: 0, buffers };
    const rows = bufferRows(stats, true, 80, true, 4);
    expect(rows[0]!.text).toContain('BUFFERS  kernel per-CPU stats of instance evtrace-x, every 1 s');
    const line = `${rows[2]!.text}${rows[2]!.loss}${rows[2]!.tail}`;
    expect(line.length).toBeLessThanOrEqual(80);
    // A quarter full (rounded to the gauge's cells), and the history's last mark, a peak of half, at the middle of
    // the scale, not its top.
    expect(line).toMatch(/^cpu0 {2}\[###-------\] 25% +03 +30 +07 +10 ev/);
  });

  it('says why a live source has no gauges, and what a file tells instead', () => {
    const none: SourceStats = { cpus: [], types: [], eventsPerSec: 0, lost: 0, total: 0, buffersUnavailable: 'older' };
    expect(bufferRows(none, true, 80, true, 4)[0]!.text.trim()).toBe('BUFFERS  n/a: older');
    const file: SourceStats = {
      cpus: [{ cpu: 0, events: 12, lost: 3, rates: [], bytes: 8192 }],
      types: [],
      eventsPerSec: 0,
      lost: 3,
      total: 12,
    };
    const rows = bufferRows(file, false, 80, true, 4);
    expect(rows[0]!.text).toContain('FROM THE FILE');
    expect(rows[2]!.text.trimEnd()).toBe('cpu0  12         8.0 KiB     3');
  });
});
