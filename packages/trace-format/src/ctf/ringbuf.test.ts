import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RingBuffer } from '@evtrace/ringbuf';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import type { EventClass, IntegerClass } from '../model/types.ts';
import { openCtfTrace } from './reader.ts';
import { createRingbufCtfWriter, reencodeRingbufPages } from './ringbuf.ts';

const haveBt2 = spawnSync('babeltrace2', ['--version']).status === 0;
const root = mkdtempSync(join(tmpdir(), 'evtrace-ringbuf-ctf-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const u32: IntegerClass = {
  kind: 'int',
  size: 32,
  signed: false,
  align: 8,
  byteOrder: 'le',
  base: 10,
  encoding: 'none',
};
const sample = (id: number, name: string): EventClass => ({
  id,
  name,
  streamId: 0,
  payload: {
    kind: 'struct',
    minAlign: 1,
    members: [
      { name: 'seq', type: u32 },
      { name: 'value', type: u32 },
    ],
  },
});
const classes = [sample(1, 'sample'), sample(40, 'wide')];

interface Written {
  ts: number;
  type: number;
  seq: number;
}

/** Fills a ring buffer with typed records (types 1 and 40) and raw ones (type 7, 5 bytes); returns its snapshot. */
function fill(extra?: (w: ReturnType<RingBuffer['writer']>, ts: number) => void) {
  const buf = RingBuffer.create({ pageCount: 4, mode: 'overwrite', clock: { name: 'monotonic' } });
  const w = buf.writer();
  const written: Written[] = [];
  let ts = 5_000_000_000;
  for (let seq = 0; seq < 600; seq++) {
    ts += seq % 97 === 0 ? 2 ** 27 + 12345 : 1 + (seq % 1000);
    const type = seq % 11 === 0 ? 7 : seq % 5 === 0 ? 40 : 1;
    const len = type === 7 ? 5 : 8;
    const off = w.reserveAt(type, len, ts);
    w.view.setUint32(off, seq, true);
    if (type === 7) w.view.setUint8(off + 4, seq & 0xff);
    else w.view.setUint32(off + 4, seq * 7, true);
    w.commit();
    written.push({ ts, type, seq });
  }
  extra?.(w, ts + 10);
  const snap = buf.snapshot();
  const pages = Array.from({ length: snap.pageCount }, (_, i) => snap.page(i));
  return { pages, written };
}

describe('ringbuf pages as CTF packets', () => {
  it('writes snapshot pages verbatim and reads every record back with its time and payload', () => {
    const { pages, written } = fill();
    const dir = join(root, 'verbatim');
    const writer = createRingbufCtfWriter(dir, { eventClasses: classes });
    for (const p of pages) writer.writePage(p);
    writer.close();
    // Zero copy: the stream file is the pages, byte for byte.
    expect(Buffer.compare(readFileSync(join(dir, 'stream_0')), Buffer.concat(pages))).toBe(0);
    const events = [...openCtfTrace(dir).events()];
    const first = written.findIndex(
      (e) => e.seq === (events[0]!.fields.seq ?? (events[0]!.fields.data as number[])[0]),
    );
    const expected = written.slice(first);
    expect(events.length).toBe(expected.length);
    events.forEach((e, i) => {
      const w = expected[i]!;
      expect(e.tsNs).toBe(BigInt(w.ts));
      if (w.type === 7) {
        expect(e.eventClass.name).toBe('record_7');
        expect(e.fields.data).toEqual([w.seq & 0xff, (w.seq >> 8) & 0xff, 0, 0, w.seq & 0xff]);
      } else {
        expect(e.eventClass.name).toBe(w.type === 1 ? 'sample' : 'wide');
        expect(e.fields).toEqual({ seq: w.seq, value: w.seq * 7 });
      }
    });
  });

  it.skipIf(!haveBt2)(
    `babeltrace2 reads the verbatim pages${haveBt2 ? '' : ' (skipped: babeltrace2 is not installed (apt-get install babeltrace2))'}`,
    () => {
      const { pages } = fill();
      const dir = join(root, 'verbatim-bt2');
      const writer = createRingbufCtfWriter(dir, { eventClasses: classes, env: { hostname: 'ringbuf' } });
      for (const p of pages) writer.writePage(p);
      writer.close();
      const run = spawnSync('babeltrace2', ['--clock-cycles', '--no-delta', dir], { encoding: 'utf8' });
      expect(run.stderr).toBe('');
      const ours = [...openCtfTrace(dir).events()];
      const lines = run.stdout.trimEnd().split('\n');
      expect(lines.length).toBe(ours.length);
      // babeltrace2 prints clock cycles (20 digits); the clock's origin is 0, so they are our nanoseconds.
      lines.forEach((line, i) => {
        const e = ours[i]!;
        expect(line.startsWith(`[${String(e.tsNs).padStart(20, '0')}] ringbuf ${e.eventClass.name}: `)).toBe(true);
        if (e.fields.seq !== undefined) expect(line).toContain(`{ seq = ${e.fields.seq}, value = ${e.fields.value} }`);
      });
    },
  );

  it('refuses verbatim pages holding a record of type 30 and re-encodes them instead', () => {
    const { pages, written } = fill((w, ts) => {
      const off = w.reserveAt(30, 8, ts);
      w.view.setUint32(off, 4242, true);
      w.view.setUint32(off + 4, 1, true);
      w.commit();
    });
    const writer = createRingbufCtfWriter(join(root, 'bad'), { eventClasses: classes });
    expect(() => {
      for (const p of pages) writer.writePage(p);
    }).toThrow(TraceFormatError);
    const dir = join(root, 'reencoded');
    const n = reencodeRingbufPages(
      pages.map((data) => ({ data })),
      dir,
      { eventClasses: [...classes, sample(30, 'thirty')] },
    );
    const events = [...openCtfTrace(dir).events()];
    expect(events.length).toBe(n);
    const last = events.at(-1)!;
    expect(last.eventClass.name).toBe('thirty');
    expect(last.fields).toEqual({ seq: 4242, value: 1 });
    const tail = written.slice(-(n - 1));
    events.slice(0, -1).forEach((e, i) => {
      expect(e.tsNs).toBe(BigInt(tail[i]!.ts));
    });
    if (haveBt2) {
      const run = spawnSync('babeltrace2', [dir], { encoding: 'utf8' });
      expect(run.status).toBe(0);
      expect(run.stdout.trimEnd().split('\n').length).toBe(n);
    }
  });

  it('fuzz: mutated pages are written, re-encoded or rejected with a located TraceFormatError', () => {
    const { pages } = fill();
    const dir = join(root, 'fuzz');
    fc.assert(
      fc.property(
        fc.nat(pages.length - 1),
        fc.array(fc.record({ at: fc.nat(), value: fc.nat(255) }), { minLength: 1, maxLength: 6 }),
        (i, edits) => {
          const page = Uint8Array.from(pages[i]!);
          for (const e of edits) page[e.at % page.length] = e.value;
          for (const run of [
            () => {
              const w = createRingbufCtfWriter(dir, { eventClasses: classes });
              try {
                w.writePage(page);
              } finally {
                w.close();
              }
            },
            () => reencodeRingbufPages([{ data: page }], join(dir, 'again'), { eventClasses: classes }),
          ]) {
            try {
              run();
            } catch (error) {
              expect(error).toBeInstanceOf(TraceFormatError);
              expect((error as TraceFormatError).location.offset).toBeTypeOf('number');
            }
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});
