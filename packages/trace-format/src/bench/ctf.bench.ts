/**
 * CTF benchmarks: decoding beside babeltrace2 (`babeltrace2 -o dummy`, which decodes every field and discards the
 * result) on the same traces, and writing beside a plain memory copy of the same bytes.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Comparison, consume, fromTotal, type Measurement, measure, printComparisons } from '@evtrace/bench';
import { openCtfTrace } from '../ctf/reader.ts';
import { createCtfWriter } from '../ctf/writer.ts';
import type { EventClass, FieldClass, FieldValue, IntegerClass } from '../model/types.ts';

const EVENTS = 1_000_000;

function int(size: number, signed = false, base: 10 | 16 = 10): IntegerClass {
  return { kind: 'int', size, signed, align: 8, byteOrder: 'le', base, encoding: 'none' };
}

const comm: FieldClass = { kind: 'array', element: { ...int(8), encoding: 'utf8' }, length: 16 };

const oneField: EventClass = {
  id: 0,
  name: 'one_u64',
  streamId: 0,
  payload: { kind: 'struct', minAlign: 1, members: [{ name: 'value', type: int(64) }] },
};

/** An 11-field event shaped like LTTng's kernel events (byte-aligned integers and fixed text arrays). */
const elevenFields: EventClass = {
  id: 1,
  name: 'sched_switch_like',
  streamId: 0,
  payload: {
    kind: 'struct',
    minAlign: 1,
    members: (
      [
        ['prev_comm', comm],
        ['prev_tid', int(32, true)],
        ['prev_prio', int(32, true)],
        ['prev_state', int(64, true)],
        ['next_comm', comm],
        ['next_tid', int(32, true)],
        ['next_prio', int(32, true)],
        ['cpu', int(32)],
        ['flags', int(16, false, 16)],
        ['ip', int(64, false, 16)],
        ['vruntime', int(64)],
      ] as [string, FieldClass][]
    ).map(([name, type]) => ({ name, type })),
  },
};

function elevenValues(k: number): { [name: string]: FieldValue } {
  return {
    prev_comm: 'swapper/0',
    prev_tid: k & 0xffff,
    prev_prio: 120,
    prev_state: BigInt(k & 3),
    next_comm: 'kworker/u8:2',
    next_tid: (k * 7) & 0xffff,
    next_prio: 100,
    cpu: k & 3,
    flags: 0x8000,
    ip: 0xffffffff81000000n + BigInt(k),
    vruntime: BigInt(k) * 1000n,
  };
}

function writeTrace(dir: string, cls: EventClass, values: (k: number) => { [name: string]: FieldValue }): number {
  const writer = createCtfWriter(dir, {});
  let ts = 1_700_000_000_000_000_000n;
  for (let k = 0; k < EVENTS; k++) {
    ts += 137n;
    writer.writeEvent({ eventClass: cls, tsNs: ts, cpu: 0, fields: values(k) });
  }
  writer.close();
  return statSync(join(dir, 'stream_0')).size;
}

function readAll(dir: string): number {
  let n = 0;
  for (const e of openCtfTrace(dir).events()) {
    consume(e);
    n++;
  }
  return n;
}

/** babeltrace2 on the same trace: median of three runs, process start included (it is small next to 1 M events). */
function babeltrace(dir: string, name: string): Measurement | undefined {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = process.hrtime.bigint();
    const run = spawnSync('babeltrace2', ['-o', 'dummy', dir]);
    if (run.status !== 0) return undefined;
    times.push(Number(process.hrtime.bigint() - t0));
  }
  times.sort((a, b) => a - b);
  return fromTotal(name, times[1]!, EVENTS);
}

export function runCtfBenchmarks(): void {
  const root = mkdtempSync(join(tmpdir(), 'evtrace-ctf-bench-'));
  try {
    const rows: Comparison[] = [];
    const oneDir = join(root, 'one');
    const oneBytes = writeTrace(oneDir, oneField, (k) => ({ value: BigInt(k) }));
    const elevenDir = join(root, 'eleven');
    const elevenBytes = writeTrace(elevenDir, elevenFields, elevenValues);
    const haveBt2 = spawnSync('babeltrace2', ['--version']).status === 0;
    for (const [label, dir, bytes] of [
      ['decode 1-field events (u64)', oneDir, oneBytes],
      ['decode 11-field LTTng-like events', elevenDir, elevenBytes],
    ] as const) {
      const ours = measure(
        `evtrace openCtfTrace`,
        () => {
          if (readAll(dir) !== EVENTS) throw new Error('lost events');
        },
        { opsPerCall: EVENTS, bytesPerOp: bytes / EVENTS, samples: 3, sampleMs: 1 },
      );
      const peer = haveBt2 ? babeltrace(dir, 'babeltrace2 -o dummy') : undefined;
      if (peer) {
        peer.bytesPerSec = (bytes / EVENTS) * peer.opsPerSec;
        rows.push({ case: label, ours, peer, target: '>= 2x' });
      } else {
        process.stdout.write(`${label}: ${ours.opsPerSec.toFixed(0)} events/s (babeltrace2 not installed)\n`);
      }
    }
    printComparisons('CTF decode (events/s, same trace)', rows);

    // Writing: events/s and MB/s beside copying the same bytes (the floor any writer pays).
    const writeRows: Comparison[] = [];
    for (const [label, cls, values, bytes] of [
      ['write 1-field events (u64)', oneField, (k: number) => ({ value: BigInt(k) }), oneBytes],
      ['write 11-field LTTng-like events', elevenFields, elevenValues, elevenBytes],
    ] as const) {
      const dir = join(root, `w-${cls.name}`);
      const per = bytes / EVENTS;
      const inputs = Array.from({ length: 4096 }, (_, k) => values(k));
      const ours = measure(
        'evtrace createCtfWriter',
        () => {
          const writer = createCtfWriter(dir, {});
          let ts = 1_000_000n;
          for (let k = 0; k < 200_000; k++) {
            ts += 137n;
            writer.writeEvent({ eventClass: cls, tsNs: ts, cpu: 0, fields: inputs[k & 4095]! });
          }
          writer.close();
        },
        { opsPerCall: 200_000, bytesPerOp: per, samples: 3, sampleMs: 1 },
      );
      const src = new Uint8Array(Math.ceil(per * 200_000));
      const dst = new Uint8Array(src.length);
      const copy = measure('memory copy of the bytes', () => dst.set(src), {
        opsPerCall: 200_000,
        bytesPerOp: per,
      });
      writeRows.push({
        case: `${label}: ${per.toFixed(2)} bytes/event on disk`,
        ours,
        peer: copy,
        target: cls === oneField ? '<= 12 B/event' : '',
      });
    }
    printComparisons('CTF write (events/s, MB/s; bytes per event on disk)', writeRows);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) runCtfBenchmarks();
