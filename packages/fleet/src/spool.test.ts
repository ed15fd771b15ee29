import { appendFileSync, mkdtempSync, readdirSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { FleetError } from './errors.ts';
import { Spool, type SpoolEntry } from './spool.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'evtrace-spool-'));
  dirs.push(d);
  return d;
}

const body = (i: number) => new TextEncoder().encode(`{"i":${i}}`);
function add(s: Spool, count = 1, channel: 'mce' | 'events.d' = 'mce'): SpoolEntry {
  const seq = s.reserve('h', channel, count);
  const e = { host: 'h', channel, seq, count, body: body(seq) };
  expect(s.append(e)).toBe(true);
  return e;
}
function drain(s: Spool): number[] {
  const seqs: number[] = [];
  for (let n = s.next(); n !== undefined; n = s.next()) seqs.push(n.entry.seq);
  return seqs;
}
const segments = (dir: string) => readdirSync(dir).filter((f) => f.endsWith('.seg'));

describe('Spool', () => {
  it('hands entries out in order, sends again from the first unacknowledged after a rewind', () => {
    const s = Spool.open(tempDir());
    for (let i = 0; i < 5; i++) add(s);
    const first = s.next()!;
    const second = s.next()!;
    expect([first.entry.seq, second.entry.seq]).toEqual([1, 2]);
    s.ack(first.end);
    s.rewind();
    expect(drain(s)).toEqual([2, 3, 4, 5]);
    expect(new TextDecoder().decode(first.entry.body)).toBe('{"i":1}');
    s.close();
  });

  it('keeps what was not acknowledged and the sequence numbers across a reopen, and deletes acknowledged segments', () => {
    const dir = tempDir();
    const s = Spool.open(dir, { segmentBytes: 4096 });
    for (let i = 0; i < 300; i++) add(s, 2);
    expect(segments(dir).length).toBeGreaterThan(2);
    let last: ReturnType<Spool['next']>;
    for (let i = 0; i < 200; i++) last = s.next();
    s.ack(last!.end);
    s.close();
    const again = Spool.open(dir, { segmentBytes: 4096 });
    expect(drain(again)).toEqual(Array.from({ length: 100 }, (_, i) => 401 + 2 * i));
    expect(again.reserve('h', 'mce', 1)).toBe(601);
    // Everything acknowledged: only the segment being written stays.
    again.rewind();
    let end: ReturnType<Spool['next']>;
    for (let n = again.next(); n !== undefined; n = again.next()) end = n;
    again.ack(end!.end);
    expect(again.empty).toBe(true);
    expect(segments(dir)).toHaveLength(1);
    again.close();
  });

  it('continues sequence numbers from the segment checkpoint after every entry was acknowledged and deleted', () => {
    const dir = tempDir();
    const s = Spool.open(dir, { segmentBytes: 4096 });
    let end: ReturnType<Spool['next']>;
    for (let i = 0; i < 100; i++) add(s, 3, 'events.d');
    for (let n = s.next(); n !== undefined; n = s.next()) end = n;
    s.ack(end!.end);
    s.close();
    const again = Spool.open(dir, { segmentBytes: 4096 });
    expect(again.reserve('h', 'events.d', 1)).toBe(301);
    expect(again.reserve('h', 'mce', 1)).toBe(1);
    again.close();
  });

  it('cuts off a record torn by a kill and says where', () => {
    const dir = tempDir();
    const s = Spool.open(dir);
    for (let i = 0; i < 3; i++) add(s);
    s.close();
    const seg = join(dir, segments(dir)[0]!);
    const size = statSync(seg).size;
    truncateSync(seg, size - 3);
    const again = Spool.open(dir);
    expect(again.notes).toEqual([expect.stringMatching(/a torn record at byte \d+ \(an interrupted write\)/)]);
    expect(drain(again)).toEqual([1, 2]);
    // The torn entry never left the host (it is written before it is sent): its number is given again, no gap.
    expect(again.reserve('h', 'mce', 1)).toBe(3);
    again.close();
  });

  it('drops what does not fit under its bound and counts exactly that, across a reopen', () => {
    const dir = tempDir();
    const s = Spool.open(dir, { maxBytes: 8192, segmentBytes: 4096 });
    let kept = 0;
    let dropped = 0;
    for (let i = 0; i < 400; i++) {
      const seq = s.reserve('h', 'mce', 5);
      if (s.append({ host: 'h', channel: 'mce', seq, count: 5, body: body(seq) })) kept++;
      else dropped++;
    }
    expect(dropped).toBeGreaterThan(0);
    expect(s.dropped).toEqual({ records: dropped * 5, messages: dropped });
    expect(drain(s)).toHaveLength(kept);
    s.close();
    expect(Spool.open(dir).dropped).toEqual({ records: dropped * 5, messages: dropped });
  });

  it('refuses a directory it cannot create with a clear error', () => {
    const file = join(tempDir(), 'file');
    writeFileSync(file, '');
    expect(() => Spool.open(join(file, 'spool'))).toThrow(
      expect.objectContaining({
        code: 'ERR_FLEET_SPOOL',
        message: expect.stringMatching(/cannot create the spool directory .*ENOTDIR/),
      }),
    );
  });

  it('opens whatever bytes a segment holds: a valid prefix is kept, the rest cut off, never a crash', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), fc.integer({ min: 0, max: 4 }), (garbage, valid) => {
        const dir = tempDir();
        const s = Spool.open(dir);
        for (let i = 0; i < valid; i++) add(s);
        s.close();
        appendFileSync(join(dir, segments(dir)[0]!), garbage);
        try {
          const again = Spool.open(dir);
          const seqs = drain(again);
          expect(seqs.slice(0, valid)).toEqual(Array.from({ length: valid }, (_, i) => i + 1));
          again.close();
        } catch (error) {
          // Garbage that frames as valid records with a matching checksum is vanishingly unlikely; any error is ours.
          expect(error).toBeInstanceOf(FleetError);
        }
      }),
      { numRuns: 150 },
    );
  });
});
