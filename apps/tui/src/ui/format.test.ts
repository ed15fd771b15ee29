import { describe, expect, it } from 'vitest';
import { countText, fit, gauge, sparkline, taskText, timeText } from './format.ts';
import { colourWanted } from './theme.ts';

describe('cell text', () => {
  it('prints time stamps as seconds and microseconds rounded to nearest, like trace-cmd report and evtrace cat', () => {
    expect(timeText(9280458592964n)).toBe('9280.458593');
    expect(timeText(9280458592464n)).toBe('9280.458592');
    expect(timeText(5_000_001_000n)).toBe('5.000001');
  });
  it('cuts and pads to the column width', () => {
    expect(fit('abcdef', 4)).toBe('abc…');
    expect(fit('ab', 4)).toBe('ab  ');
    expect(fit('ab', 0)).toBe('');
  });
  it('names tasks as comm-pid', () => {
    expect(taskText(4101, 'demo-worker')).toBe('demo-worker-4101');
    expect(taskText(7, undefined)).toBe('7');
    expect(taskText(-1, undefined)).toBe('-');
  });
  it('scales sparklines to their maximum and fills gauges', () => {
    expect(sparkline([0, 5, 10], 3)).toBe('▁▄█');
    expect(sparkline([0, 5, 10], 3, true)).toBe('037');
    expect(sparkline([1], 4)).toBe('   █');
    expect(gauge(0.5, 12)).toBe('[#####-----]');
    expect(gauge(2, 4)).toBe('[##]');
  });
  it('abbreviates counts', () => {
    expect(countText(999)).toBe('999');
    expect(countText(12_345)).toBe('12.3k');
    expect(countText(1_234_567)).toBe('1.23M');
  });
});

describe('colourWanted', () => {
  it('is off with NO_COLOR set to anything and on TERM=dumb', () => {
    expect(colourWanted({ TERM: 'xterm-256color' })).toBe(true);
    expect(colourWanted({ TERM: 'xterm', NO_COLOR: '1' })).toBe(false);
    expect(colourWanted({ TERM: 'dumb' })).toBe(false);
    expect(colourWanted({ TERM: 'xterm', NO_COLOR: '' })).toBe(true);
  });
});
