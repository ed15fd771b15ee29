/** Traces for the tests and the benchmark, made with the real writers: the demo source and the trace.dat writer. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createCtfWriter,
  type EventClass,
  encodeTraceDat,
  openRawPagesDir,
  type TraceEvent,
} from '@evtrace/trace-format';
import { recordDemo, writeTraceDatFromRawDir } from '@evtrace/tracefs';
import { type FileSource, openFileSource } from '../data/file-source.ts';

/** A fresh temporary directory. */
export function tempDir(prefix = 'evtrace-view-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Records `ms` of the demo source (kmem and sched events on 2 CPUs) and returns the trace.dat path. */
export async function recordDemoTrace(dir: string, ms = 300, rate = 20_000): Promise<string> {
  const raw = join(dir, 'raw');
  await recordDemo({ events: ['kmem:*', 'sched:*'], dir: raw, durationMs: ms, rate, cpus: 2 });
  const dat = join(dir, 'demo.dat');
  writeTraceDatFromRawDir(raw, dat);
  return dat;
}

/**
 * A trace.dat of `n` demo events spread over 4 CPUs, written in one go with trace-format's writer (the demo source
 * runs in real time: a million events would take a minute). The event classes are the demo's kmem:kmalloc.
 */
export async function largeTrace(dir: string, n: number): Promise<string> {
  await recordDemoTrace(dir, 50);
  const reader = openRawPagesDir(join(dir, 'raw'));
  const kmalloc = reader.eventClasses.find((c) => c.name === 'kmem:kmalloc') as EventClass;
  const sizes = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096];
  function* events(): Generator<TraceEvent> {
    for (let i = 0; i < n; i++) {
      const bytes = sizes[i % sizes.length]!;
      yield {
        tsNs: 1_000_000_000n + BigInt(i) * 250n,
        cpu: i % 4,
        eventClass: kmalloc,
        fields: {
          call_site: 0xffffffff81a01230n,
          ptr: 0xffff888100000000n + BigInt(i) * 64n,
          bytes_req: BigInt(bytes - (i % 3)),
          bytes_alloc: BigInt(bytes),
          gfp_flags: 0xcc0n,
          node: 0,
        },
        scopes: {
          'event.context': {
            common_type: kmalloc.id,
            common_flags: 0,
            common_preempt_count: 0,
            common_pid: 4101 + (i % 4),
          },
        },
      };
    }
  }
  const file = join(dir, `large-${n}.dat`);
  writeFileSync(file, encodeTraceDat([kmalloc], events(), { cmdlines: reader.metadata.cmdlines }).bytes);
  return file;
}

/**
 * A CTF trace of `n` kmem:kmalloc events over 4 CPUs (one stream file each), written with trace-format's CTF writer;
 * each event's task is its stream event context's `tid` (as LTTng's `vtid`). Returns the trace directory.
 */
export async function largeCtfTrace(dir: string, n: number): Promise<string> {
  await recordDemoTrace(dir, 50);
  const kmalloc = openRawPagesDir(join(dir, 'raw')).eventClasses.find((c) => c.name === 'kmem:kmalloc') as EventClass;
  const out = join(dir, `ctf-${n}`);
  const writer = createCtfWriter(out, {
    eventContext: {
      kind: 'struct',
      minAlign: 8,
      members: [
        {
          name: 'tid',
          type: { kind: 'int', size: 32, signed: true, align: 8, byteOrder: 'le', base: 10, encoding: 'none' },
        },
      ],
    },
  });
  const sizes = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096];
  for (let i = 0; i < n; i++) {
    const bytes = sizes[i % sizes.length]!;
    writer.writeEvent({
      tsNs: 1_000_000_000n + BigInt(i) * 250n,
      cpu: i % 4,
      eventClass: kmalloc,
      fields: {
        call_site: 0xffffffff81a01230n,
        ptr: 0xffff888100000000n + BigInt(i) * 64n,
        bytes_req: BigInt(bytes - (i % 3)),
        bytes_alloc: BigInt(bytes),
        gfp_flags: 0xcc0n,
        node: 0,
      },
      scopes: {
        'stream.event.context': { tid: 4101 + (i % 4) },
        // The ftrace class's own context: its common fields.
        'event.context': {
          common_type: kmalloc.id,
          common_flags: 0,
          common_preempt_count: 0,
          common_pid: 4101 + (i % 4),
        },
      },
    });
  }
  writer.close();
  return out;
}

/** A trace file's source once it is indexed whole. */
export async function openIndexed(path: string): Promise<FileSource> {
  const source = openFileSource(path);
  await source.indexed();
  return source;
}
