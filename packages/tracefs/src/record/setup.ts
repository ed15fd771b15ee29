/**
 * Setting up a recording's private instance: its buffer settings first (so the metadata copied next describes them),
 * then its filters and events; the page geometry the readers need; the tracing switch.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type PageLayout, parseHeaderPage } from '@evtrace/trace-format';
import { ioError, TracefsError } from '../errors.ts';
import { type EventFilterPlan, writeKernelFilter } from '../filter/filter.ts';
import type { EventName } from '../instance/catalog.ts';
import type { RecordOptions } from './options.ts';
import { WAKE_PERCENT } from './pipe-wait.ts';

const write = (file: string, value: string, what: string, code: 'ERR_TRACEFS_SETTING' | 'ERR_TRACEFS_IO') => {
  try {
    writeFileSync(file, value);
  } catch (error) {
    const e = ioError(file, error, what);
    throw e.code === 'ERR_TRACEFS_PERMISSION' ? e : new TracefsError(code, `${what} (${value}): ${e.message}`, e);
  }
};

/** Writes an optional setting; false when this kernel lacks it or refuses the value. */
function trySetting(file: string, value: string): boolean {
  try {
    writeFileSync(file, value);
    return true;
  } catch {
    return false;
  }
}

/**
 * Stops tracing in the new instance and applies the buffer settings asked for (sub-buffer size, buffer size, clock),
 * non-overwrite mode and the wake-up fill of poll(2). Returns whether that fill was set (kernels without
 * `buffer_percent` wake on any data: a reader then does not wait in poll).
 */
export function configureBuffer(p: string, options: RecordOptions): boolean {
  write(join(p, 'tracing_on'), '0', 'cannot stop tracing in the instance', 'ERR_TRACEFS_IO');
  if (options.subbufKb !== undefined) {
    write(
      join(p, 'buffer_subbuf_size_kb'),
      String(options.subbufKb),
      'the kernel refused the sub-buffer size',
      'ERR_TRACEFS_SETTING',
    );
  }
  if (options.bufferKb !== undefined) {
    write(
      join(p, 'buffer_size_kb'),
      String(options.bufferKb),
      'the kernel refused the buffer size',
      'ERR_TRACEFS_SETTING',
    );
  }
  if (options.clock !== undefined) {
    write(join(p, 'trace_clock'), options.clock, 'the kernel refused the trace clock', 'ERR_TRACEFS_SETTING');
  }
  // Keep the oldest events when the reader falls behind: the stats then count what was dropped.
  write(join(p, 'options', 'overwrite'), '0', 'cannot set non-overwrite mode', 'ERR_TRACEFS_SETTING');
  return trySetting(join(p, 'buffer_percent'), String(WAKE_PERCENT));
}

/** Writes the kernel's part of each event's filter, then enables the selected events. */
export function enableEvents(
  p: string,
  selected: readonly EventName[],
  plans: ReadonlyMap<string, EventFilterPlan>,
): void {
  for (const [name, plan] of plans) {
    if (plan.kernel === undefined) continue;
    const [system, event] = [name.slice(0, name.indexOf(':')), name.slice(name.indexOf(':') + 1)];
    writeKernelFilter(p, join(p, 'events', system, event), plan.kernel);
  }
  for (const e of selected) {
    write(
      join(p, 'events', e.system, e.event, 'enable'),
      '1',
      `cannot enable ${e.system}:${e.event}`,
      'ERR_TRACEFS_IO',
    );
  }
}

/** The instance's pages as the kernel writes them. */
export interface PageGeometry {
  readonly pageSize: number;
  readonly layout: PageLayout;
  /** One CPU's buffer. */
  readonly bufferBytes: number;
}

/** The sub-buffer size, page layout and per-CPU buffer size the instance ended up with. */
export function pageGeometry(p: string): PageGeometry {
  const pageSize = Number(readFileSync(join(p, 'buffer_subbuf_size_kb'), 'utf8').trim()) * 1024;
  const layout = parseHeaderPage(readFileSync(join(p, 'events', 'header_page'), 'utf8'), { pageSize });
  const bufferKb = Number(readFileSync(join(p, 'buffer_size_kb'), 'utf8').match(/\d+/)?.[0] ?? 1408);
  return { pageSize, layout, bufferBytes: bufferKb * 1024 };
}

/** Turns the instance's tracing on or off. */
export function setTracing(p: string, on: boolean): void {
  write(join(p, 'tracing_on'), on ? '1' : '0', on ? 'cannot start tracing' : 'cannot stop tracing', 'ERR_TRACEFS_IO');
}
