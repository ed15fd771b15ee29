import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPersistent } from './index.ts';
import { INDEX, runNode, startNode, waitForLine } from './testing/child.ts';

const dir = mkdtempSync(join(tmpdir(), 'persistent-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A writer process: creates `name`, writes records 0, 1, 2... (u32 value, u32 pid) and prints how many it committed. */
const writerScript = (name: string, mode: string, size: number, stopAt = Infinity) => `
  import { openPersistent } from ${JSON.stringify(INDEX)};
  const buf = openPersistent(${JSON.stringify(name)}, { dir: ${JSON.stringify(dir)}, create: { size: ${size}, mode: '${mode}', classes: ['test:seq'] } });
  const w = buf.writer({ streamId: 7 });
  let i = 0;
  const batch = () => {
    for (let n = 0; n < 500 && i < ${stopAt === Infinity ? 'Infinity' : stopAt}; n++, i++) {
      const at = w.reserve(0, 8);
      w.view.setUint32(at, i, true);
      w.view.setUint32(at + 4, process.pid, true);
      w.commit();
    }
    console.log('committed ' + i);
    setTimeout(batch, 1);
  };
  batch();
`;

/** A reader process: opens read-only and prints what a snapshot holds. */
const readerScript = (name: string) => `
  import { openPersistent } from ${JSON.stringify(INDEX)};
  const buf = openPersistent(${JSON.stringify(name)}, { dir: ${JSON.stringify(dir)}, readOnly: true });
  const s = buf.snapshot();
  const values = [];
  while (s.next()) values.push(s.view.getUint32(s.offset, true));
  const gaps = values.filter((v, k) => k > 0 && v !== values[k - 1] + 1).length;
  console.log(JSON.stringify({ count: values.length, first: values[0], last: values.at(-1), gaps, mode: buf.mode, classes: buf.meta.classes, attached: buf.writerAttached }));
`;

describe('a writer killed with SIGKILL loses nothing it committed', () => {
  it('another process reopens the buffer read-only and reads every committed record', async () => {
    const writer = startNode(writerScript('crash/discard', 'discard', 8 << 20));
    const line = await waitForLine(writer, (l) => Number(l.split(' ')[1]) >= 20_000);
    const reported = Number(line.split(' ')[1]);
    const died = new Promise((r) => writer.on('exit', (_c, signal) => r(signal)));
    writer.kill('SIGKILL');
    expect(await died).toBe('SIGKILL');

    const r = await runNode(readerScript('crash/discard'));
    expect(r.stderr).toBe('');
    const got = JSON.parse(r.stdout);
    // Every record the writer reported, and whatever it committed after its last report, with no gap.
    expect(got.first).toBe(0);
    expect(got.gaps).toBe(0);
    expect(got.count).toBeGreaterThanOrEqual(reported);
    expect(got.last).toBe(got.count - 1);
    expect(got).toMatchObject({ mode: 'discard', classes: [{ type: 0, name: 'test:seq' }], attached: true });
  });

  it('a new writer in another process takes over the dead writer and the stream goes on', async () => {
    const writer = startNode(writerScript('crash/resume', 'discard', 1 << 20, 3000));
    await waitForLine(writer, (l) => l === 'committed 3000');
    writer.kill('SIGKILL');
    await new Promise((r) => writer.on('exit', r));
    const resume = await runNode(`
      import { openPersistent } from ${JSON.stringify(INDEX)};
      const buf = openPersistent('crash/resume', { dir: ${JSON.stringify(dir)} });
      const w = buf.writer();
      for (let i = 3000; i < 3500; i++) { const at = w.reserve(0, 8); w.view.setUint32(at, i, true); w.commit(); }
      w.close();
      console.log('ok');
    `);
    expect(resume.stderr).toBe('');
    expect(resume.stdout.trim()).toBe('ok');
    const buf = openPersistent('crash/resume', { dir, readOnly: true });
    try {
      const s = buf.snapshot();
      const values: number[] = [];
      while (s.next()) values.push(s.view.getUint32(s.offset, true));
      expect(values).toEqual(Array.from({ length: 3500 }, (_, i) => i));
      expect(buf.stats()).toMatchObject({ written: 3500, writerClosed: true });
    } finally {
      buf.close();
    }
  });

  it('a live writer in another process is not taken over', async () => {
    const writer = startNode(writerScript('crash/busy', 'overwrite', 1 << 16));
    try {
      await waitForLine(writer, (l) => l.startsWith('committed'));
      const buf = openPersistent('crash/busy', { dir });
      try {
        expect(() => buf.writer()).toThrow(
          expect.objectContaining({
            code: 'ERR_PERSISTENT_WRITER_BUSY',
            message: expect.stringContaining(String(writer.pid)),
          }),
        );
        expect(buf.mappers().writers).toContain(writer.pid);
      } finally {
        buf.close();
      }
      // Seen from a third process: the writer child writes, this process (now read-only) reads, the lister is neither.
      const ro = openPersistent('crash/busy', { dir, readOnly: true });
      try {
        const ls = await runNode(`
          import { listPersistent } from ${JSON.stringify(INDEX)};
          const b = listPersistent({ dir: ${JSON.stringify(dir)}, backends: ['user'] }).buffers.find((b) => b.name === 'crash/busy');
          console.log(JSON.stringify(b));
        `);
        expect(JSON.parse(ls.stdout)).toMatchObject({ name: 'crash/busy', writers: 1, readers: 1, mode: 'overwrite' });
      } finally {
        ro.close();
      }
    } finally {
      writer.kill('SIGKILL');
    }
  });
});

describe('concurrent readers in other processes', () => {
  it('four read-only readers snapshot an overwriting buffer while it is written: gap-free runs, all of the end', async () => {
    const writer = startNode(writerScript('crash/readers', 'overwrite', 64 << 10, 60_000));
    try {
      await waitForLine(writer, (l) => l.startsWith('committed'));
      const reader = `
        import { openPersistent } from ${JSON.stringify(INDEX)};
        const buf = openPersistent('crash/readers', { dir: ${JSON.stringify(dir)}, readOnly: true });
        let snaps = 0, bad = 0, last = -1;
        const until = Date.now() + 1500;
        while (Date.now() < until) {
          const s = buf.snapshot();
          let prev = -1;
          while (s.next()) {
            const v = s.view.getUint32(s.offset, true);
            if (prev !== -1 && v !== prev + 1) bad++;
            prev = v;
          }
          if (prev < last) bad++;
          last = prev;
          snaps++;
        }
        console.log(JSON.stringify({ snaps, bad, last }));
      `;
      const results = await Promise.all([0, 1, 2, 3].map(() => runNode(reader)));
      for (const r of results) {
        expect(r.stderr).toBe('');
        const got = JSON.parse(r.stdout);
        expect(got.bad).toBe(0);
        expect(got.snaps).toBeGreaterThan(1);
        expect(got.last).toBeGreaterThan(0);
      }
      await waitForLine(writer, (l) => l === 'committed 60000');
      const buf = openPersistent('crash/readers', { dir, readOnly: true });
      try {
        const s = buf.snapshot();
        const values: number[] = [];
        while (s.next()) values.push(s.view.getUint32(s.offset, true));
        // The last 64 KiB of records: a gap-free run ending at the last record written.
        expect(values.at(-1)).toBe(59_999);
        expect(values.length).toBeGreaterThan(1000);
        expect(values).toEqual(Array.from({ length: values.length }, (_, i) => 60_000 - values.length + i));
      } finally {
        buf.close();
      }
    } finally {
      writer.kill('SIGKILL');
    }
  });

  it('a consuming reader in another process (read-write open) gets every record or counts it lost, exactly', async () => {
    openPersistent('crash/consume', { dir, create: { size: 8 * 4096, mode: 'discard' } }).close();
    // The reader registers first, so the writer's drops (buffer full) are what the reader is too slow for.
    const reader = startNode(`
      import { openPersistent } from ${JSON.stringify(INDEX)};
      const buf = openPersistent('crash/consume', { dir: ${JSON.stringify(dir)} });
      const r = buf.reader();
      console.log('registered');
      let n = 0, bad = 0, prev = -1;
      const poll = () => {
        while (r.next()) { const v = r.view.getUint32(r.offset, true); if (v <= prev) bad++; prev = v; n++; }
        if (r.ended) { console.log(JSON.stringify({ n, bad, lost: r.lost, last: prev })); process.exit(0); }
        setTimeout(poll, 1);
      };
      poll();
    `);
    await waitForLine(reader, (l) => l === 'registered');
    const done = new Promise<string>((resolve) => {
      let out = '';
      reader.stdout!.on('data', (d) => (out += d));
      reader.on('exit', () => resolve(out));
    });
    const writer = await runNode(`
      import { openPersistent } from ${JSON.stringify(INDEX)};
      const w = openPersistent('crash/consume', { dir: ${JSON.stringify(dir)} }).writer();
      for (let i = 0; i < 50000; i++) { const at = w.reserve(0, 8); if (at >= 0) { w.view.setUint32(at, i, true); w.commit(); } }
      w.close();
      console.log('closed');
    `);
    expect(writer.stderr).toBe('');
    const got = JSON.parse((await done).trim().split('\n').at(-1)!);
    expect(got.bad).toBe(0);
    expect(got.n).toBeGreaterThan(0);
    expect(got.n + got.lost).toBe(50000);
    const buf = openPersistent('crash/consume', { dir, readOnly: true });
    expect(buf.stats().discarded).toBe(got.lost);
    buf.close();
  });

  it('a read-only mapping cannot change the buffer: a store faults the reader, the writer sees nothing', async () => {
    const buf = openPersistent('crash/ro', { dir, create: { size: 8192 } });
    const w = buf.writer();
    const at = w.reserve(3, 4);
    w.view.setUint32(at, 0xabcd, true);
    w.commit();
    const before = buf.snapshot().page(0).slice();
    const MMAP = new URL('./mmap.ts', import.meta.url).pathname;
    const r = await runNode(`
      import { openSync } from 'node:fs';
      import { mapFile } from ${JSON.stringify(MMAP)};
      const fd = openSync(${JSON.stringify(buf.path)}, 'r');
      const m = mapFile(fd, 4096 * 3, false, 'x');
      console.log('mapped ' + new Uint32Array(m.buffer)[0].toString(16));
      new Uint32Array(m.buffer)[1024 + 20] = 0xdead;
      console.log('stored');
    `);
    expect(r.stdout).toContain('mapped 42525645');
    expect(r.stdout).not.toContain('stored');
    expect(r.signal).toBe('SIGSEGV');
    expect(buf.snapshot().page(0)).toEqual(before);
    w.close();
    buf.close();
    const ro = openPersistent('crash/ro', { dir, readOnly: true });
    expect(() => ro.writer()).toThrow(expect.objectContaining({ code: 'ERR_PERSISTENT_READ_ONLY' }));
    expect(() => ro.reader()).toThrow(expect.objectContaining({ code: 'ERR_PERSISTENT_READ_ONLY' }));
    ro.close();
  });
});
