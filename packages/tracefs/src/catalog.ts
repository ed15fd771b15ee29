/** The event catalogue of tracefs: which `system:event` pairs exist, and their fields. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type EventClass, parseFormatFile } from '@evtrace/trace-format';
import { ioError, TracefsError } from './errors.ts';

/** One tracepoint of the catalogue. */
export interface EventName {
  readonly system: string;
  readonly event: string;
}

/** Parses `available_events` (`system:event` per line). */
export function parseAvailableEvents(text: string): EventName[] {
  const out: EventName[] = [];
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    out.push({ system: line.slice(0, colon), event: line.slice(colon + 1).trim() });
  }
  return out;
}

/** Lists every event of a tracefs mount (or instance directory) in catalogue order. */
export function listEvents(tracefs: string): EventName[] {
  return parseAvailableEvents(readCatalogue(tracefs));
}

function readCatalogue(tracefs: string): string {
  const file = join(tracefs, 'available_events');
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw ioError(file, error, 'cannot read the event catalogue');
  }
}

/**
 * {@link matchEvents} over the catalogue of `tracefs`. Exact `system:event` names are looked up in its text, which
 * spares parsing its thousands of lines into objects and testing each against every pattern at a recording's start;
 * any glob or bare system takes the full path.
 */
export function selectEvents(tracefs: string, patterns: readonly string[]): EventName[] {
  const text = readCatalogue(tracefs);
  const exact = /^[^:*?[\]\s]+:[^:*?[\]\s]+$/;
  if (!patterns.every((p) => exact.test(p))) return matchEvents(parseAvailableEvents(text), patterns);
  // Each name's line, found as `\nNAME\n` in the text with a newline put before and after it.
  const lines = `\n${text}${text.endsWith('\n') ? '' : '\n'}`;
  const found = new Map<number, EventName>();
  for (const pattern of patterns) {
    const at = lines.indexOf(`\n${pattern}\n`);
    // Not there as a whole line: the full path decides (and names what matches nothing).
    if (at < 0) return matchEvents(parseAvailableEvents(text), patterns);
    const colon = pattern.indexOf(':');
    found.set(at, { system: pattern.slice(0, colon), event: pattern.slice(colon + 1) });
  }
  return [...found.entries()].sort((a, b) => a[0] - b[0]).map(([, e]) => e);
}

function unknownEvent(pattern: string): TracefsError {
  const colon = pattern.indexOf(':');
  return new TracefsError(
    'ERR_TRACEFS_EVENT',
    `unknown event '${pattern}': no event of tracefs matches it (see: evtrace list${colon < 0 ? '' : ` '${pattern.slice(0, colon)}:*'`})`,
  );
}

/**
 * Compiles a shell-style glob (`*`, `?`, `[...]`) to an anchored RegExp.
 *
 * @throws TracefsError `ERR_TRACEFS_EVENT` for a malformed class such as `[z-a]`.
 */
export function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) re += '\\[';
      else {
        const body = glob.slice(i + 1, end).replace(/\\/g, '\\\\');
        re += `[${body.startsWith('!') ? `^${body.slice(1)}` : body}]`;
        i = end;
      }
    } else re += c.replace(/[.+^${}()|\\/]/g, '\\$&');
  }
  try {
    return new RegExp(`^${re}$`);
  } catch (error) {
    throw new TracefsError('ERR_TRACEFS_EVENT', `invalid glob '${glob}': ${(error as Error).message}`);
  }
}

/**
 * Selects the events named by patterns: `system:event`, either part a glob (`sched:*`, `*:kmalloc`), or a bare
 * `system` (every event of it). Matches are returned once each, in catalogue order.
 *
 * @throws TracefsError `ERR_TRACEFS_EVENT` naming the first pattern that matches nothing.
 */
export function matchEvents(catalogue: readonly EventName[], patterns: readonly string[]): EventName[] {
  const selected = new Set<EventName>();
  for (const pattern of patterns) {
    const colon = pattern.indexOf(':');
    const sys = globToRegExp(colon < 0 ? pattern : pattern.slice(0, colon));
    const ev = globToRegExp(colon < 0 ? '*' : pattern.slice(colon + 1));
    let any = false;
    for (const e of catalogue) {
      if (sys.test(e.system) && ev.test(e.event)) {
        selected.add(e);
        any = true;
      }
    }
    if (!any) throw unknownEvent(pattern);
  }
  return catalogue.filter((e) => selected.has(e));
}

/** Reads and parses `events/SYSTEM/EVENT/format` under a tracefs mount or instance. */
export function readEventFormat(tracefs: string, name: EventName): { text: string; eventClass: EventClass } {
  const file = join(tracefs, 'events', name.system, name.event, 'format');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw ioError(file, error, `cannot read the format of ${name.system}:${name.event}`);
  }
  return { text, eventClass: parseFormatFile(text, { file, system: name.system }) };
}
