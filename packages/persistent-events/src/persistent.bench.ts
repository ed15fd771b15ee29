// Writes through a shared file mapping (a persistent buffer on tmpfs, mapped with koffi) beside the same ringbuf
// writes on a SharedArrayBuffer, measured in this run. Each side runs in its own child process (its own JIT state:
// ringbuf's writer code is shared, and feedback from one buffer kind would bill the other), alternating for ROUNDS
// rounds; the median of each side is printed. Run: node src/persistent.bench.ts
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type Comparison, fromTotal, measure, printComparisons } from '@evtrace/bench';
import { RingBuffer, type Writer } from '@evtrace/ringbuf';
import { openPersistent } from './index.ts';

const PAGE = 65536;
const PAGES = 64;
const REPS = 64;
const ROUNDS = 5;

/** REPS records of `bytes` payload, each reserved, filled with u32 stores and committed (or one commit for all). */
function writes(w: Writer, bytes: number, batch: boolean): () => void {
  const words = bytes >> 2;
  return () => {
    const ww = w.words;
    for (let r = 0; r < REPS; r++) {
      const k = w.reserveAt(1, bytes, r) >> 2;
      for (let i = 0; i < words; i++) ww[k + i] = i;
      if (!batch) w.commit();
    }
    if (batch) w.commit();
  };
}

/** Child: measures one side, prints ns per record. */
function side(kind: string, bytes: number, batch: boolean, dir: string): void {
  const w =
    kind === 'sab'
      ? RingBuffer.create({ pageSize: PAGE, pageCount: PAGES, mode: 'overwrite', clock: { name: 'bench' } }).writer()
      : openPersistent(`bench/${process.pid}`, {
          dir,
          create: { size: PAGE * PAGES, pageSize: PAGE, mode: 'overwrite' },
        }).writer();
  const m = measure(kind, writes(w, bytes, batch), { opsPerCall: REPS, samples: 11 });
  process.stdout.write(String(m.nsPerOp));
}

const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1]!;

if (process.argv[2] === '--side') {
  side(process.argv[3]!, Number(process.argv[4]), process.argv[5] === 'batch', process.argv[6]!);
} else {
  const dir = mkdtempSync(join('/dev/shm', 'evtrace-bench-'));
  const rows: Comparison[] = [];
  try {
    for (const [bytes, batch] of [
      [32, false],
      [32, true],
      [256, false],
    ] as const) {
      const ns: Record<string, number[]> = { sab: [], map: [] };
      for (let r = 0; r < ROUNDS; r++) {
        for (const kind of ['sab', 'map']) {
          const args = [new URL(import.meta.url).pathname, '--side', kind, String(bytes), batch ? 'batch' : 'one', dir];
          ns[kind]!.push(Number(execFileSync(process.execPath, args).toString()));
        }
      }
      const label = `${bytes} B record write${batch ? ` (one commit per ${REPS})` : ' + commit'}, overwrite mode`;
      rows.push({
        case: label,
        ours: fromTotal(`shared file mapping ${bytes} B`, median(ns.map!), 1, bytes),
        peer: fromTotal(`SharedArrayBuffer ${bytes} B`, median(ns.sab!), 1, bytes),
        target: '>= 0.67x (within 1.5x)',
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  printComparisons('persistent buffer (tmpfs mapping via koffi) vs SharedArrayBuffer, the same ringbuf writer', rows);
}
