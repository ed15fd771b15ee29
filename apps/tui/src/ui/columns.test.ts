import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_COLUMNS, layoutColumns, loadColumns, saveColumns, settingsPath } from './columns.ts';

const total = (cols: { width: number }[]) => cols.reduce((a, c) => a + c.width, 0) + cols.length - 1;

describe('column layout', () => {
  it('fills the width exactly and gives the fields column at least half of 80 columns', () => {
    const laid = layoutColumns(DEFAULT_COLUMNS, 79, { time: 11, cpu: 1, task: 18, event: 12 });
    expect(total(laid)).toBe(79);
    expect(laid.find((c) => c.id === 'fields')!.width).toBeGreaterThanOrEqual(39);
    expect(laid.find((c) => c.id === 'time')!.width).toBe(11);
  });

  it('gives the fixed columns what their content needs when the terminal is wide', () => {
    const laid = layoutColumns(DEFAULT_COLUMNS, 199, { time: 11, cpu: 1, task: 18, event: 12 });
    expect(Object.fromEntries(laid.map((c) => [c.id, c.width]))).toEqual({
      time: 11,
      cpu: 3,
      task: 18,
      event: 12,
      fields: 199 - 11 - 3 - 18 - 12 - 4,
    });
  });

  it('keeps the chosen order and leaves hidden columns out', () => {
    const laid = layoutColumns(['event', 'time', 'fields'], 100, { time: 11, event: 12 });
    expect(laid.map((c) => c.id)).toEqual(['event', 'time', 'fields']);
    expect(total(laid)).toBe(100);
  });
});

describe('remembered columns', () => {
  it('saves under XDG_CONFIG_HOME, keeps other settings, and ignores unknown or repeated names', () => {
    const dir = mkdtempSync(join(tmpdir(), 'evtrace-view-'));
    try {
      const path = settingsPath({ XDG_CONFIG_HOME: dir });
      expect(path).toBe(join(dir, 'evtrace', 'view.json'));
      expect(loadColumns(path)).toEqual(DEFAULT_COLUMNS);
      expect(saveColumns(path, ['event', 'fields'])).toBeUndefined();
      expect(loadColumns(path)).toEqual(['event', 'fields']);
      writeFileSync(path, JSON.stringify({ other: 1, columns: ['cpu', 'bogus', 'cpu', 'time'] }));
      expect(loadColumns(path)).toEqual(['cpu', 'time']);
      saveColumns(path, ['time']);
      expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ other: 1, columns: ['time'] });
      writeFileSync(path, '{not json');
      expect(loadColumns(path)).toEqual(DEFAULT_COLUMNS);
      expect(saveColumns(join(path, 'under-a-file.json'), ['time'])).toMatch(
        /cannot save the columns to .*under-a-file/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
