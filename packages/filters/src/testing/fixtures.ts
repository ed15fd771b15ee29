import { readFileSync } from 'node:fs';
import { type EventClass, parseFormatFile } from '@evtrace/trace-format';

/** An event class from the format files captured from Linux 6.18 under fixtures/events (laid out like tracefs). */
export function fixtureClass(event: string): EventClass {
  const url = new URL(`../../fixtures/events/${event}/format`, import.meta.url);
  return parseFormatFile(readFileSync(url, 'utf8'), { file: url.pathname, system: event.split('/')[0]! });
}

/** A little-endian record for `eventClass` with the given integer and fixed-string fields set. */
export function encodeRecord(eventClass: EventClass, values: Record<string, number | bigint | string>): DataView {
  const fields = eventClass.ftrace!.fields;
  const size = Math.max(...fields.map((f) => f.offset + f.size)) + 64;
  const view = new DataView(new ArrayBuffer(size));
  let tail = Math.max(...fields.map((f) => f.offset + f.size));
  for (const f of fields) {
    const v = values[f.name];
    if (v === undefined) continue;
    if (typeof v === 'string') {
      const bytes = new TextEncoder().encode(v);
      if (f.cType.includes('__data_loc')) {
        new Uint8Array(view.buffer, tail, bytes.length).set(bytes);
        view.setUint32(f.offset, ((bytes.length + 1) << 16) | tail, true);
        tail += bytes.length + 1;
      } else new Uint8Array(view.buffer, f.offset, Math.min(bytes.length, f.size)).set(bytes.subarray(0, f.size));
      continue;
    }
    const big = BigInt(v);
    if (f.size === 8) view.setBigUint64(f.offset, BigInt.asUintN(64, big), true);
    else if (f.size === 4) view.setUint32(f.offset, Number(BigInt.asUintN(32, big)), true);
    else if (f.size === 2) view.setUint16(f.offset, Number(BigInt.asUintN(16, big)), true);
    else view.setUint8(f.offset, Number(BigInt.asUintN(8, big)));
  }
  return view;
}
