// Pages are CTF 1.8 packets as they stand: babeltrace2 (the reference CTF reader) reads snapshot pages written to disk
// verbatim, given TSDL metadata that describes LAYOUT.md.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RingBuffer } from './ringbuffer.ts';

const bt2 = spawnSync('babeltrace2', ['--version'], { encoding: 'utf8' });
const why = bt2.error ? 'babeltrace2 is not installed (Debian package babeltrace2)' : '';

const METADATA = `/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 32; signed = false; } := uint32_t;
typealias integer { size = 64; align = 64; signed = false; } := uint64_t;
trace { major = 1; minor = 8; byte_order = le; };
clock { name = monotonic; freq = 1000000000; offset = 0; };
typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; } := uint27_clock_t;
typealias integer { size = 64; align = 32; signed = false; map = clock.monotonic.value; } := uint64_clock_t;
typealias integer { size = 64; align = 64; signed = false; map = clock.monotonic.value; } := uint64_clock_a_t;
stream {
  packet.context := struct {
    uint64_clock_a_t timestamp_begin;
    uint64_clock_a_t timestamp_end;
    uint64_t content_size;
    uint64_t packet_size;
    uint64_t events_discarded;
    uint64_t packet_seq_num;
    uint64_t records_before;
    uint32_t commit;
    uint32_t reserved;
    uint32_t close_end;
    uint32_t record_count;
    uint32_t flags;
    uint32_t writer_stream_id;
  };
  event.header := struct {
    enum : integer { size = 5; align = 32; signed = false; } { compact = 0 ... 29, padding = 30, extended = 31 } id;
    variant <id> {
      struct { uint27_clock_t timestamp; } compact;
      struct { integer { size = 27; align = 1; signed = false; } unused; } padding;
      struct { uint32_t id; uint64_clock_t timestamp; } extended;
    } v;
  };
  event.context := struct { uint32_t length; };
};
event { name = "sample"; id = 1; fields := struct { uint32_t seq; uint32_t value; }; };
event { name = "wide"; id = 40; fields := struct { uint32_t seq; uint32_t value; }; };
event { name = "padding"; id = 30; fields := struct { uint8_t bytes[stream.event.context.length]; }; };
`;

interface Expected {
  ts: number;
  name: string;
  seq: number;
  value: number;
}

describe.skipIf(why !== '')(`babeltrace2 reads ringbuf pages as CTF packets${why ? ` (skipped: ${why})` : ''}`, () => {
  it('decodes every record: compact and extended headers, timestamps, payloads and discarded counts', () => {
    const buf = RingBuffer.create({ pageCount: 4, mode: 'discard', clock: { name: 'monotonic' } });
    const r = buf.reader();
    const w = buf.writer();
    const written: Expected[] = [];
    let ts = 1_000_000_000;
    let dropped = 0;
    const put = (seq: number) => {
      // Mostly small steps (compact headers), sometimes a jump past 2^27 ns (extended) and type 40 (extended).
      ts += seq % 97 === 0 ? 2 ** 27 + 12345 : 1 + (seq % 1000);
      const type = seq % 5 === 0 ? 40 : 1;
      const off = w.reserveAt(type, 8, ts);
      if (off < 0) {
        dropped++;
        return;
      }
      w.view.setUint32(off, seq, true);
      w.view.setUint32(off + 4, seq * 7, true);
      w.commit();
      written.push({ ts, name: type === 1 ? 'sample' : 'wide', seq, value: seq * 7 });
    };
    let seq = 0;
    while (seq < 1500) put(seq++);
    while (r.next());
    expect(dropped).toBeGreaterThan(0);
    while (seq < 1600) put(seq++);

    const snap = buf.snapshot();
    const dir = mkdtempSync(join(tmpdir(), 'ringbuf-ctf-'));
    try {
      writeFileSync(join(dir, 'metadata'), METADATA);
      const stream = new Uint8Array(snap.pageCount * snap.pageSize);
      for (let i = 0; i < snap.pageCount; i++) stream.set(snap.page(i), i * snap.pageSize);
      writeFileSync(join(dir, 'stream_0'), stream);
      const result = spawnSync('babeltrace2', ['--log-level=ERROR', '--clock-cycles', '--no-delta', dir], {
        encoding: 'utf8',
      });
      expect(result.status, result.stderr).toBe(0);
      const events = result.stdout
        .trim()
        .split('\n')
        .map((line) => {
          const m = /^\[(\d+)\] (\w+): \{ [^}]* \}, \{ length = 8 \}, \{ seq = (\d+), value = (\d+) \}$/.exec(line);
          expect(m, line).not.toBeNull();
          return { ts: Number(m![1]), name: m![2]!, seq: Number(m![3]), value: Number(m![4]) };
        });
      const first = written.findIndex((e) => e.seq === events[0]!.seq);
      expect(events).toEqual(written.slice(first));
      expect(events.length).toBe(
        Array.from({ length: snap.pageCount }, (_, i) => snap.pageHeader(i).recordCount).reduce((a, b) => a + b, 0),
      );
      // The drop happened between two pages of the snapshot: babeltrace2 reports it from events_discarded.
      const details = execFileSync(
        'babeltrace2',
        ['--log-level=ERROR', '-c', 'sink.text.details', '--params', 'with-metadata=false', dir],
        { encoding: 'utf8' },
      );
      const counts = [...details.matchAll(/Discarded events \((\d+) events?\)/g)].map((m) => Number(m[1]));
      expect(counts).toEqual([dropped]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
