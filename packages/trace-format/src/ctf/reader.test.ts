import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import type { EventClass } from '../model/types.ts';
import { openCtfTrace, readCtfTrace } from './reader.ts';
import { createCtfWriter } from './writer.ts';

const root = mkdtempSync(join(tmpdir(), 'evtrace-ctf-reader-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const cls: EventClass = {
  id: 0,
  name: 'tick',
  streamId: 0,
  payload: {
    kind: 'struct',
    minAlign: 1,
    members: [
      {
        name: 'n',
        type: { kind: 'int', size: 32, signed: false, align: 8, byteOrder: 'le', base: 10, encoding: 'none' },
      },
    ],
  },
};

/** Writes 3 packets of 10 events on one CPU; returns the byte offsets where packets start. */
function threePackets(dir: string): number[] {
  const writer = createCtfWriter(dir, { packetSize: 120 });
  for (let n = 0; n < 30; n++) writer.writeEvent({ eventClass: cls, tsNs: 1000n + BigInt(n), cpu: 0, fields: { n } });
  writer.close();
  const data = readFileSync(join(dir, 'stream_0'));
  const starts: number[] = [];
  for (let i = 0; i + 4 <= data.length; i++) if (data.readUInt32LE(i) === 0xc1fc1fc1) starts.push(i);
  return starts;
}

describe('openCtfTrace on corrupt packets', () => {
  it('throws at the corrupt packet with its file and offset; lenient mode skips it and keeps the rest', () => {
    const dir = join(root, 'corrupt');
    const starts = threePackets(dir);
    expect(starts.length).toBeGreaterThanOrEqual(3);
    const file = join(dir, 'stream_0');
    const data = readFileSync(file);
    data.writeUInt32LE(0xdeadbeef, starts[1]!);
    writeFileSync(file, data);

    const seen: number[] = [];
    let error: unknown;
    try {
      for (const e of openCtfTrace(dir).events()) seen.push(e.fields.n as number);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(TraceFormatError);
    expect((error as TraceFormatError).message).toBe(
      `${file}: byte ${starts[1]}: bad packet magic 0xdeadbeef (expected 0xc1fc1fc1)`,
    );

    const lenient = openCtfTrace(dir, { lenient: true });
    const all = Array.from(lenient.events(), (e) => e.fields.n as number);
    expect(all.slice(0, seen.length)).toEqual(seen);
    expect(all.length).toBeGreaterThan(seen.length);
    expect(all.at(-1)).toBe(29);
    expect(lenient.warnings).toEqual([
      `skipped corrupt packet 2 at byte ${starts[1]}: ${(error as Error).message}`,
      `${file}: tracer discarded 1 packet before packet 3`,
    ]);
  });

  it('reports discarded packets from packet_seq_num gaps', () => {
    const dir = join(root, 'gap');
    const starts = threePackets(dir);
    const data = readFileSync(join(dir, 'stream_0'));
    // Drop the middle packet: the third packet's sequence number then jumps by two.
    const cut = Buffer.concat([data.subarray(0, starts[1]!), data.subarray(starts[2]!)]);
    const reader = readCtfTrace({ metadata: readFileSync(join(dir, 'metadata')), streams: [{ path: 's', data: cut }] });
    const n = [...reader.events()].length;
    expect(n).toBeLessThan(30);
    expect(reader.warnings).toEqual(['s: tracer discarded 1 packet before packet 2']);
  });

  it('reads files in windows: packets larger than the 4 MiB read-ahead and files of several windows', () => {
    const dir = join(root, 'big');
    const blob: EventClass = {
      id: 0,
      name: 'blob',
      streamId: 0,
      payload: { kind: 'struct', minAlign: 1, members: [{ name: 's', type: { kind: 'string', encoding: 'utf8' } }] },
    };
    const writer = createCtfWriter(dir, { packetSize: 5 << 20 });
    const text = (n: number) => `${n}:`.padEnd(4000, String.fromCharCode(97 + (n % 26)));
    for (let n = 0; n < 3000; n++)
      writer.writeEvent({ eventClass: blob, tsNs: BigInt(n), cpu: 0, fields: { s: text(n) } });
    writer.close();
    let n = 0;
    for (const e of openCtfTrace(dir).events()) {
      expect(e.fields.s).toBe(text(n));
      n++;
    }
    expect(n).toBe(3000);
  });

  it('rejects a missing trace directory with ERR_TRACE_INPUT', () => {
    expect(() => openCtfTrace(join(root, 'nope'))).toThrow(expect.objectContaining({ code: 'ERR_TRACE_INPUT' }));
  });
});
