import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { RingBuffer } from './ringbuffer.ts';

const run = promisify(execFile);
const INDEX = new URL('./index.ts', import.meta.url).pathname;

describe('a buffer outlives the process that wrote it', () => {
  it('another process reads the bytes it left (writer never closed), and a new writer resumes the stream', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ringbuf-persist-'));
    try {
      const file = join(dir, 'buffer.bin');
      // The producer process writes 1000 records, saves the region and exits without closing its writer.
      const producer = `
        import { writeFileSync } from 'node:fs';
        import { RingBuffer } from ${JSON.stringify(INDEX)};
        const buf = RingBuffer.create({ pageCount: 16, mode: 'discard' });
        const w = buf.writer({ streamId: 3 });
        for (let i = 0; i < 1000; i++) {
          const off = w.reserve(i % 30, 8);
          w.view.setUint32(off, i, true);
          w.view.setUint32(off + 4, process.pid, true);
          w.commit();
        }
        writeFileSync(${JSON.stringify(file)}, new Uint8Array(buf.buffer));
        process.exit(0);
      `;
      await run(process.execPath, ['--input-type=module', '-e', producer]);
      const bytes = readFileSync(file);
      const region = new SharedArrayBuffer(bytes.length);
      new Uint8Array(region).set(bytes);
      const buf = RingBuffer.attach(region);
      expect([buf.pageCount, buf.mode, buf.clockName, buf.writerAttached]).toEqual([
        16,
        'discard',
        'CLOCK_MONOTONIC',
        true,
      ]);
      const snap = buf.snapshot();
      const seqs: number[] = [];
      while (snap.next()) seqs.push(snap.view.getUint32(snap.offset, true));
      expect(seqs).toEqual(Array.from({ length: 1000 }, (_, i) => i));
      expect(snap.pageHeader(0).streamId).toBe(3);

      // The stream goes on in this process: the dead writer's open page is closed and numbering continues.
      const r = buf.reader();
      expect(() => buf.writer()).toThrow(/another writer is attached/);
      const w = buf.writer({ force: true });
      for (let i = 1000; i < 1100; i++) {
        const off = w.reserve(1, 8);
        w.view.setUint32(off, i, true);
        w.commit();
      }
      w.close();
      const all: number[] = [];
      let lastTs = 0;
      while (r.next()) {
        all.push(r.view.getUint32(r.offset, true));
        expect(r.timestamp).toBeGreaterThanOrEqual(lastTs);
        lastTs = r.timestamp;
      }
      expect(all).toEqual(Array.from({ length: 1100 }, (_, i) => i));
      expect(r.ended).toBe(true);
      expect(buf.stats()).toMatchObject({ written: 1100, discarded: 0, writerClosed: true });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
