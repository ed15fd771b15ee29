/**
 * Persistent buffers as event sources, without the agent: the pages a source hands its sinks decode, with the
 * metadata it writes, to the records of the buffer (user space) or the events the kernel recorded (a kernel buffer),
 * and reading leaves the buffer as it was.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeCpuPages, openRawPagesDir, type PageSink } from '@evtrace/trace-format';
import { findTracefs } from '@evtrace/tracefs';
import { afterAll, describe, expect, it } from 'vitest';
import { createKernelBuffer, openKernelBuffer } from './kernel.ts';
import { KernelBufferSource } from './kernel-source.ts';
import { isPersistentSource } from './source.ts';
import { openPersistent } from './user.ts';
import { UserBufferSource } from './user-source.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const fresh = (prefix: string) => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};

/** A sink that keeps every page it is given (copies: sources reuse their page buffers). */
function keeper(): PageSink & { pages: Buffer[] } {
  const pages: Buffer[] = [];
  return {
    pages,
    writeBytes: (_type, payload) => {
      pages.push(Buffer.from(payload));
      return true;
    },
    flush: () => {},
  };
}

/** The events of the pages `sinks` got, decoded with the metadata `source` writes. */
function decode(source: { cpus: readonly number[]; writeMetadata(dir: string): void }, sinks: { pages: Buffer[] }[]) {
  const dir = fresh('persistent-source-meta-');
  source.writeMetadata(dir);
  for (const cpu of source.cpus) writeFileSync(join(dir, `cpu${cpu}.raw`), '');
  const meta = openRawPagesDir(dir).metadata;
  return source.cpus.flatMap((cpu, i) => decodeCpuPages(meta, { cpu, bytes: Buffer.concat(sinks[i]!.pages) }).events);
}

describe('a user-space buffer as a source', () => {
  it('delivers every committed record as an event of its class, with type, length and payload; the buffer is left as it was', () => {
    const dir = fresh('persistent-source-');
    const buf = openPersistent('src/app/flight', {
      dir,
      create: { size: 64 * 1024, mode: 'overwrite', classes: ['app:tick', 'app:tock'] },
    });
    const w = buf.writer();
    const write = (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const at = w.reserve(i % 3, 4);
        w.view.setUint32(at, i, true);
        w.commit();
      }
    };
    write(0, 30);
    const source = new UserBufferSource({ buffer: 'src/app/flight', backend: 'user', dir });
    expect(isPersistentSource(source)).toBe(true);
    source.prepare();
    source.prepare();
    expect(source.path).toBe(buf.path);
    expect(source.mode).toBe('overwrite');
    expect(source.size).toBe(buf.pageSize * buf.pageCount);
    // One class per named type, and one for the types the metadata does not name.
    expect(source.eventClasses.map((c) => c.name)).toEqual(['app:tick', 'app:tock', 'persistent:record']);
    const sink = keeper();
    source.start([sink]);
    // The buffer's records so far, then those committed while the source runs.
    write(30, 60);
    expect(source.poll(true)).toBeGreaterThan(0);
    write(60, 90);
    source.stop();
    const events = decode(source, [sink]);
    expect(events.map((e) => (e.fields.payload as number[])[0])).toEqual(Array.from({ length: 90 }, (_, k) => k));
    for (const e of events) {
      const i = (e.fields.payload as number[])[0]!;
      expect(e.eventClass.name).toBe(['app:tick', 'app:tock', 'persistent:record'][i % 3]);
      expect(e.fields.type).toBe(i % 3);
      expect(e.fields.length).toBe(4);
    }
    // Times never go back within the stream.
    for (let k = 1; k < events.length; k++) expect(events[k]!.tsNs >= events[k - 1]!.tsNs).toBe(true);
    expect(source.counters()).toEqual([{ cpu: 0, events: 90, lost: 0, bytes: expect.any(Number) }]);
    source.close();
    // The follower consumed nothing: a snapshot still holds all 90 records.
    const snap = buf.snapshot();
    let n = 0;
    while (snap.next()) n++;
    expect(n).toBe(90);
    buf.close();
  });

  it('fails to prepare with the buffer error: a missing buffer is ERR_PERSISTENT_NOT_FOUND, a bad name ERR_PERSISTENT_NAME', () => {
    const dir = fresh('persistent-source-missing-');
    expect(() => new UserBufferSource({ buffer: 'no/such/buffer', backend: 'user', dir }).prepare()).toThrow(
      expect.objectContaining({ name: 'PersistentError', code: 'ERR_PERSISTENT_NOT_FOUND' }),
    );
    expect(() => new UserBufferSource({ buffer: '../escape', backend: 'user', dir })).toThrow(
      expect.objectContaining({ name: 'PersistentError', code: 'ERR_PERSISTENT_NAME' }),
    );
  });
});

function tracefs(): { path?: string; why: string } {
  if (process.getuid?.() !== 0) return { why: 'not root: tracefs instances need root' };
  try {
    return { path: findTracefs(), why: '' };
  } catch (error) {
    return { why: (error as Error).message };
  }
}
const env = tracefs();

describe.skipIf(env.why !== '')(`a kernel buffer as a source${env.why ? ` (skipped: ${env.why})` : ''}`, () => {
  it('reads the events the kernel recorded through the raw pipes; the instance keeps recording, its settings untouched', () => {
    const name = `src${process.pid}/kernel/flight`;
    const kb = createKernelBuffer(name, { size: 256 * 1024, events: ['kmem:kmalloc'], tracefs: env.path! });
    try {
      const settings = () =>
        ['tracing_on', 'buffer_size_kb', 'set_event'].map((f) => readFileSync(join(kb.path, f), 'utf8'));
      const before = settings();
      const source = new KernelBufferSource({ buffer: name, backend: 'kernel' }, env.path!);
      expect(isPersistentSource(source)).toBe(true);
      source.prepare();
      expect(source.path).toBe(kb.path);
      expect(source.eventClasses.map((c) => c.name)).toEqual(['kmem:kmalloc']);
      const sinks = source.cpus.map(() => keeper());
      source.start(sinks);
      const total = () => source.counters().reduce((n, c) => n + c.events, 0);
      for (let i = 0; i < 20 && total() < 50; i++) {
        for (let k = 0; k < 5; k++) execFileSync('ls', ['/proc/self'], { stdio: 'ignore' });
        source.poll();
      }
      source.stop();
      expect(total()).toBeGreaterThanOrEqual(50);
      const events = decode(source, sinks);
      expect(events.length).toBe(total());
      expect(new Set(events.map((e) => e.eventClass.name))).toEqual(new Set(['kmem:kmalloc']));
      source.close();
      expect(settings()).toEqual(before);
      expect(openKernelBuffer(name, { tracefs: env.path! }).info().mode).toBe(source.mode);
    } finally {
      kb.delete();
    }
  });

  it('refuses a kernel buffer that records no events, naming it', () => {
    const name = `src${process.pid}/kernel/empty`;
    const kb = createKernelBuffer(name, { size: 64 * 1024, events: [], tracefs: env.path! });
    try {
      const source = new KernelBufferSource({ buffer: name, backend: 'kernel' }, env.path!);
      expect(() => source.prepare()).toThrow(
        expect.objectContaining({
          code: 'ERR_PERSISTENT_UNSUPPORTED',
          message: expect.stringContaining(`${name} records no events`),
        }),
      );
    } finally {
      kb.delete();
    }
  });
});
