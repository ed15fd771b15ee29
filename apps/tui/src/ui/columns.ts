/**
 * The Events view's columns: which are shown and in what order (the user's choice, remembered in
 * `$XDG_CONFIG_HOME/evtrace/view.json`), and their widths for a terminal width, the fields column taking the rest.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

export const COLUMN_IDS = ['time', 'cpu', 'task', 'event', 'fields'] as const;
export type ColumnId = (typeof COLUMN_IDS)[number];

export const COLUMN_HEADERS: Record<ColumnId, string> = {
  time: 'TIME',
  cpu: 'CPU',
  task: 'TASK',
  event: 'EVENT',
  fields: 'FIELDS',
};

/** The widths a column may take (`fields` has none: it takes what is left). */
interface ColumnSpec {
  /** Narrowest useful width. */
  readonly min: number;
  /** Width wanted when the terminal has room. */
  readonly want: number;
}

const SPECS: Record<Exclude<ColumnId, 'fields'>, ColumnSpec> = {
  time: { min: 12, want: 15 },
  cpu: { min: 3, want: 3 },
  task: { min: 10, want: 22 },
  event: { min: 10, want: 22 },
};

/** The shown columns, in order. */
export type ColumnChoice = readonly ColumnId[];

export const DEFAULT_COLUMNS: ColumnChoice = COLUMN_IDS;

/** A laid out column: its id and width in characters. */
export interface LaidColumn {
  readonly id: ColumnId;
  readonly width: number;
}

/**
 * Widths for `columns` in `width` characters, one space between columns: the fixed columns shrink from what they
 * want toward their minimum until the fields column has at least half the line, and take exactly what their content
 * needs when it is known (`need`, e.g. the widest time stamp). The fields column takes the rest.
 */
export function layoutColumns(
  columns: ColumnChoice,
  width: number,
  need: Partial<Record<ColumnId, number>> = {},
): LaidColumn[] {
  const fixed = columns.filter((c): c is Exclude<ColumnId, 'fields'> => c !== 'fields');
  const hasFields = columns.includes('fields');
  const widths = new Map<ColumnId, number>();
  for (const c of fixed) {
    const spec = SPECS[c];
    const n = need[c];
    widths.set(c, Math.max(COLUMN_HEADERS[c].length, n === undefined ? spec.want : Math.min(spec.want, n)));
  }
  const gaps = columns.length - 1;
  const budget = hasFields ? Math.floor(width / 2) : width;
  const used = () => [...widths.values()].reduce((a, b) => a + b, 0) + gaps;
  // Shrink the widest shrinkable column one character at a time: the cut is spread over task and event.
  while (used() > budget) {
    let widest: Exclude<ColumnId, 'fields'> | undefined;
    for (const c of fixed) {
      const w = widths.get(c)!;
      if (w > SPECS[c].min && (widest === undefined || w > widths.get(widest)!)) widest = c;
    }
    if (widest === undefined) break;
    widths.set(widest, widths.get(widest)! - 1);
  }
  if (hasFields) widths.set('fields', Math.max(0, width - used()));
  return columns.map((id) => ({ id, width: widths.get(id)! }));
}

/** Where the user's viewer settings live: `$XDG_CONFIG_HOME/evtrace/view.json`, else `~/.config/evtrace/view.json`. */
export function settingsPath(env: NodeJS.ProcessEnv = process.env): string {
  const base =
    env.XDG_CONFIG_HOME !== undefined && env.XDG_CONFIG_HOME !== '' ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'evtrace', 'view.json');
}

/** The columns saved at `path`, or the default when there is no file or it holds no valid choice. */
export function loadColumns(path: string): ColumnChoice {
  let saved: unknown;
  try {
    saved = (JSON.parse(readFileSync(path, 'utf8')) as { columns?: unknown }).columns;
  } catch {
    return DEFAULT_COLUMNS;
  }
  if (!Array.isArray(saved)) return DEFAULT_COLUMNS;
  const ids = saved.filter((c, i): c is ColumnId => COLUMN_IDS.includes(c as ColumnId) && saved.indexOf(c) === i);
  return ids.length === 0 ? DEFAULT_COLUMNS : ids;
}

/**
 * Saves the columns at `path`, keeping the file's other settings; written to a temporary file and renamed, so a
 * crash never leaves half a file. Returns an error message instead of throwing (the choice still applies for now).
 */
export function saveColumns(path: string, columns: ColumnChoice): string | undefined {
  let settings: Record<string, unknown> = {};
  try {
    const old = JSON.parse(readFileSync(path, 'utf8')) as unknown;
    if (old !== null && typeof old === 'object' && !Array.isArray(old)) settings = old as Record<string, unknown>;
  } catch {}
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(`${path}.tmp`, `${JSON.stringify({ ...settings, columns }, null, 2)}\n`);
    renameSync(`${path}.tmp`, path);
    return undefined;
  } catch (e) {
    return `cannot save the columns to ${path}: ${(e as Error).message}`;
  }
}
