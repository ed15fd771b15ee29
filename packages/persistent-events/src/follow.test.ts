import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPersistent } from './index.ts';
import { INDEX, startNode, waitForLine } from './testing/child.ts';

const dir = mkdtempSync(join(tmpdir(), 'persistent-follow-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('following a buffer read-only from another process', () => {
  it('delivers each record once, in order, as another process writes; counts what it was too slow for', async () => {
    // The writer writes bursts of 200 on request (a line on stdin) into a 4-page buffer of 4 KiB pages.
    const writer = startNode(
      `
      import { openPersistent } from ${JSON.stringify(INDEX)};
      import { createInterface } from 'node:readline';
      const w = openPersistent('f/live', { dir: ${JSON.stringify(dir)}, create: { size: 16384 } }).writer();
      let i = 0;
      console.log('ready');
      createInterface({ input: process.stdin }).on('line', (n) => {
        for (let k = 0; k < Number(n); k++, i++) { const at = w.reserve(1, 4); w.view.setUint32(at, i, true); w.commit(); }
        console.log('wrote ' + i);
        if (n === '0') { w.close(); console.log('closed'); }
      });
    `,
      { stdin: true },
    );
    try {
      await waitForLine(writer, (l) => l === 'ready');
      const buf = openPersistent('f/live', { dir, readOnly: true });
      const follower = buf.follow();
      const seen: number[] = [];
      const take = () => follower.poll((r) => seen.push(r.view.getUint32(r.offset, true)));
      expect(take()).toEqual({ records: 0, lost: 0 });
      for (const burst of [200, 1, 300]) {
        writer.stdin!.write(`${burst}\n`);
        await waitForLine(writer, (l) => l.startsWith('wrote'));
        take();
      }
      expect(seen).toEqual(Array.from({ length: 501 }, (_, i) => i));
      // 5000 records of 12 bytes are ~15 pages: only the last 4 pages survive until the next poll.
      writer.stdin!.write('5000\n');
      await waitForLine(writer, (l) => l === 'wrote 5501');
      const r = take();
      expect(r.lost).toBeGreaterThan(0);
      expect(r.records + r.lost).toBe(5000);
      expect(seen.at(-1)).toBe(5500);
      const tail = seen.slice(501);
      expect(tail).toEqual(Array.from({ length: tail.length }, (_, i) => 5501 - tail.length + i));
      expect(take()).toEqual({ records: 0, lost: 0 });
      writer.stdin!.write('0\n');
      await waitForLine(writer, (l) => l === 'closed');
      expect(buf.stats().writerClosed).toBe(true);
      buf.close();
    } finally {
      writer.kill('SIGKILL');
    }
  });
});
