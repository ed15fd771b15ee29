import { closeSync, constants, openSync, readdirSync, readFileSync, readSync, writeFileSync } from 'node:fs';
import {
  compileRecordDecoder,
  type EventClass,
  type FieldValue,
  parseFormatFile,
  parseHeaderPage,
  readPage,
} from '@evtrace/trace-format';
import type { Instance } from './tracefs.ts';

/** One record drained from an instance: its CPU, time, event class and decoded fields. */
export interface RawRecord {
  readonly cpu: number;
  readonly tsNs: bigint;
  readonly eventClass: EventClass;
  readonly bytes: Buffer;
  readonly start: number;
  readonly length: number;
  readonly fields: Record<string, FieldValue>;
  readonly common: Record<string, FieldValue>;
}

/** Drains every CPU's trace_pipe_raw of `instance` and decodes the records of the given events (`system/event`). */
export function drainRecords(instance: Instance, events: readonly string[]): RawRecord[] {
  const pageSize = Number(readFileSync(instance.file('buffer_subbuf_size_kb'), 'utf8').trim()) * 1024;
  const layout = parseHeaderPage(readFileSync(instance.file('events', 'header_page'), 'utf8'), { pageSize });
  const classes = new Map<number, { eventClass: EventClass; decode: ReturnType<typeof compileRecordDecoder> }>();
  for (const e of events) {
    const eventClass = parseFormatFile(readFileSync(instance.file('events', e, 'format'), 'utf8'), {
      system: e.split('/')[0]!,
    });
    classes.set(eventClass.id, { eventClass, decode: compileRecordDecoder(eventClass) });
  }
  const out: RawRecord[] = [];
  for (const dir of readdirSync(instance.file('per_cpu'))) {
    const cpu = Number(dir.replace('cpu', ''));
    const fd = openSync(instance.file('per_cpu', dir, 'trace_pipe_raw'), constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      for (;;) {
        const page = Buffer.alloc(pageSize);
        let n: number;
        try {
          n = readSync(fd, page, 0, pageSize, null);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
          throw error;
        }
        if (n === 0) break;
        const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
        readPage(page, 0, layout, (tsNs, start, length) => {
          const known = classes.get(view.getUint16(start, true));
          if (known === undefined) return;
          const d = known.decode(page, view, start, length);
          out.push({ cpu, tsNs, eventClass: known.eventClass, bytes: page, start, length, ...d });
        });
      }
    } finally {
      closeSync(fd);
    }
  }
  return out.sort((a, b) => (a.tsNs < b.tsNs ? -1 : a.tsNs > b.tsNs ? 1 : a.cpu - b.cpu));
}

/** Writes a marker through the instance's trace_marker (recorded as ftrace/print). */
export function mark(instance: Instance, text: string): void {
  writeFileSync(instance.file('trace_marker'), text);
}

/**
 * Fields the kernel computes separately for each instance, so two recordings of one event may disagree on them:
 * common_flags and common_preempt_count, and sched_switch's prev_state, read from the task once per instance (an
 * exiting task moves from EXIT_ZOMBIE to EXIT_DEAD in between).
 */
const VOLATILE = new Set(['common_flags', 'common_preempt_count', 'prev_state']);

/** A record's identity across two instances: every field but the volatile ones, as text. */
export function identity(r: RawRecord): string {
  const keep = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([k]) => !VOLATILE.has(k)));
  return JSON.stringify([r.eventClass.name, keep(r.common), keep(r.fields)], (_k, v) =>
    typeof v === 'bigint' ? v.toString() : v,
  );
}
