/**
 * The systemd journal as `journalctl -o json` (one JSON object per line) and `journalctl -o export` (entries of
 * `FIELD=value` lines separated by a blank line; a field holding control bytes is its name, a newline, its size as a
 * 64-bit little-endian number, the bytes and a newline) print it. Each entry's MESSAGE is a kernel log line: the
 * messages are read in order by the kernel-log reader, and what it finds is placed back at the entry's line (JSON)
 * or byte offset (export). An entry's __REALTIME_TIMESTAMP dates a record whose text carries no TIME.
 */
import type { InputNote } from '../errors.ts';
import type { InputKind, MceRecord } from '../record.ts';
import { readMceText, type TextReadResult } from './text.ts';

interface Message {
  readonly text: string;
  /** 1-based line (JSON) or byte offset of the entry (export). */
  readonly at: number;
  /** Microseconds since the epoch, when the entry says. */
  readonly realtime: bigint | undefined;
}

/** Reads the machine-check records of `journalctl -o json` output. */
export function readJournalJson(text: string, options: { file?: string } = {}): TextReadResult {
  const file = options.file;
  const notes: InputNote[] = [];
  const messages: Message[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    let entry: unknown;
    try {
      entry = JSON.parse(line);
    } catch (error) {
      notes.push({ location: { file, line: i + 1 }, message: `not a JSON journal entry: ${(error as Error).message}` });
      continue;
    }
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      notes.push({ location: { file, line: i + 1 }, message: 'not a JSON journal entry: not an object' });
      continue;
    }
    const fields = entry as Record<string, unknown>;
    const message = fieldText(fields.MESSAGE);
    if (message === undefined) continue;
    messages.push({ text: message, at: i + 1, realtime: decimal(fieldText(fields.__REALTIME_TIMESTAMP)) });
  }
  return place(messages, notes, 'journal-json', file, 'line');
}

/** Reads the machine-check records of `journalctl -o export` output. */
export function readJournalExport(bytes: Uint8Array, options: { file?: string } = {}): TextReadResult {
  const file = options.file;
  const notes: InputNote[] = [];
  const messages: Message[] = [];
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 0;
  let entryAt = 0;
  let message: string | undefined;
  let realtime: bigint | undefined;
  const endEntry = () => {
    if (message !== undefined) messages.push({ text: message, at: entryAt, realtime });
    message = undefined;
    realtime = undefined;
  };
  while (pos < buf.length) {
    const nl = buf.indexOf(0x0a, pos);
    const end = nl < 0 ? buf.length : nl;
    if (end === pos) {
      endEntry();
      pos = end + 1;
      entryAt = pos;
      continue;
    }
    const eq = buf.indexOf(0x3d, pos);
    let name: string;
    let value: string;
    if (eq >= 0 && eq < end) {
      name = buf.toString('latin1', pos, eq);
      value = buf.toString('utf8', eq + 1, end);
      pos = end + 1;
    } else {
      // A binary field: NAME \n size(le64) data \n.
      name = buf.toString('latin1', pos, end);
      const sizeAt = end + 1;
      if (sizeAt + 8 > buf.length) {
        notes.push({ location: { file, offset: pos }, message: `journal export field ${name} is cut short` });
        break;
      }
      const size = buf.readBigUInt64LE(sizeAt);
      const dataAt = sizeAt + 8;
      if (size > BigInt(buf.length - dataAt - 1) || buf[dataAt + Number(size)] !== 0x0a) {
        notes.push({
          location: { file, offset: sizeAt },
          message: `journal export field ${name} says ${size} bytes, which the input does not hold`,
        });
        break;
      }
      value = buf.toString('utf8', dataAt, dataAt + Number(size));
      pos = dataAt + Number(size) + 1;
    }
    if (!/^[A-Z0-9_]+$/.test(name)) {
      notes.push({
        location: { file, offset: pos },
        message: `not a journal export field name: '${name.slice(0, 40)}'`,
      });
      break;
    }
    if (name === 'MESSAGE') message = value;
    else if (name === '__REALTIME_TIMESTAMP') realtime = decimal(value);
  }
  endEntry();
  return place(messages, notes, 'journal-export', file, 'offset');
}

/** Runs the kernel-log reader over the messages and maps its lines back to the entries they came from. */
function place(
  messages: readonly Message[],
  notes: InputNote[],
  kind: InputKind,
  file: string | undefined,
  unit: 'line' | 'offset',
): TextReadResult {
  // A message may hold several lines: each synthetic line knows its entry.
  const owner: number[] = [];
  const parts: string[] = [];
  for (let m = 0; m < messages.length; m++) {
    const lines = messages[m]!.text.split('\n');
    for (const l of lines) {
      owner.push(m);
      parts.push(l);
    }
  }
  const inner = readMceText(parts.join('\n'), { kind: 'kernel-log', ...(file ? { file } : {}) });
  const at = (line: number | undefined) => {
    const m = line === undefined ? undefined : messages[owner[line - 1] ?? -1];
    return m === undefined ? {} : unit === 'line' ? { line: m.at } : { offset: m.at };
  };
  const records: MceRecord[] = inner.records.map((r) => {
    const m = messages[owner[(r.source.line ?? 0) - 1] ?? -1];
    const time = r.time === 0n && m?.realtime !== undefined ? m.realtime / 1_000_000n : r.time;
    return { ...r, time, source: { kind, file, ...at(r.source.line) } };
  });
  for (const n of inner.notes) notes.push({ location: { file, ...at(n.location.line) }, message: n.message });
  return { records, notes };
}

/** A journal field's value: a string, or an array of bytes when it is not valid UTF-8. */
function fieldText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && v.every((b) => typeof b === 'number' && b >= 0 && b <= 255)) {
    return Buffer.from(v as number[]).toString('utf8');
  }
  return undefined;
}

function decimal(s: string | undefined): bigint | undefined {
  return s !== undefined && /^\d{1,20}$/.test(s) ? BigInt(s) : undefined;
}
