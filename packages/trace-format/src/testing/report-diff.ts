/**
 * Test support: `trace-cmd report`'s text of a file beside ours, line for line, with the differing lines grouped by
 * event so that a test can require none (or name the one reference bug it tolerates).
 */
import { execFileSync } from 'node:child_process';

/** `trace-cmd report FILE` as lines, without its `cpus=N` header. */
export function reportLines(file: string): string[] {
  const text = execFileSync('trace-cmd', ['report', file], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return text
    .replace(/^cpus=\d+\n/, '')
    .trimEnd()
    .split('\n');
}

/** One line that differs: the event trace-cmd's line names (`lost` for its dropped-events lines), and both texts. */
export interface LineDifference {
  readonly line: number;
  readonly event: string;
  readonly ours: string | undefined;
  readonly theirs: string | undefined;
}

/** The event a report line is about. */
export function lineEvent(line: string): string {
  if (/^CPU:\d+ \[(\d+ )?EVENTS DROPPED\]$/.test(line)) return 'lost';
  return /^\s*.*?-\d+\s+\[\d+\]\s+\d+\.\d+: (\w+):/.exec(line)?.[1] ?? '?';
}

/** Every line where `ours` and `theirs` differ (or where one of them has ended). */
export function differingLines(ours: readonly string[], theirs: readonly string[]): LineDifference[] {
  const out: LineDifference[] = [];
  for (let i = 0; i < Math.max(ours.length, theirs.length); i++) {
    if (ours[i] === theirs[i]) continue;
    out.push({ line: i + 1, event: lineEvent(theirs[i] ?? ours[i]!), ours: ours[i], theirs: theirs[i] });
  }
  return out;
}

/** Differences counted by event, for an assertion message that stays short. */
export function countByEvent(diffs: readonly LineDifference[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const d of diffs) counts[d.event] = (counts[d.event] ?? 0) + 1;
  return counts;
}

/**
 * The one difference from trace-cmd these tests tolerate, a bug of trace-cmd 3.1's expression parser (libtraceevent
 * 1.7, `process_op`): when an operator's right operand is a parenthesised expression whose operator binds less
 * tightly, it takes the parentheses apart. `timer_start` prints `flags=%s` of
 * `__print_flags(REC->flags & (0x00040000 | 0x00080000 | 0x00100000 | 0x00200000), "|", { 0x00040000, "M" },
 * { 0x00080000, "D" }, { 0x00100000, "P" }, { 0x00200000, "I" })`, which trace-cmd evaluates as
 * `(REC->flags & 0x00040000) | 0x00080000 | 0x00100000 | 0x00200000`: every timer shows `D|P|I` (or `M|D|P|I`)
 * whatever its flags. We print the kernel's value, as its own `trace` file does; the rest of the line agrees.
 */
export function isTimerStartFlags(d: LineDifference): boolean {
  if (d.event !== 'timer_start' || d.ours === undefined || d.theirs === undefined) return false;
  const cut = (l: string) => l.replace(/ flags=\S*$/, '');
  return cut(d.ours) === cut(d.theirs) && /flags=M?\|?D\|P\|I$/.test(d.theirs);
}
