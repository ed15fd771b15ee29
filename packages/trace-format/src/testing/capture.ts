/**
 * Test support: records events in a private tracefs instance, keeps its `trace` text in raw (pid, cpu, exact
 * timestamp) and fields (name=value) modes, then drains every CPU's `trace_pipe_raw` into a raw-pages directory.
 */
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  constants,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withInstance } from './tracefs.ts';

export interface Capture {
  /** The raw-pages directory written. */
  readonly dir: string;
  /** `trace` with the `raw` option: `PID CPU TS_NS type: ID` per event. */
  readonly rawText: string;
  /** `trace` with the `fields` option: `name=value` per field. */
  readonly fieldsText: string;
  /** `trace` as the kernel prints it by default, but with `hash-ptr` off (real addresses). */
  readonly plainText: string;
  readonly pageSize: number;
  /** `per_cpu/cpuN/stats` by CPU, read before draining. */
  readonly stats: Map<number, string>;
}

const write = (file: string, text: string) => writeFileSync(file, text);

/**
 * Records `events` (`system/event`) while `workload` runs, in a fresh instance with `subbufKb` sub-buffers and
 * `bufferKb` per CPU (a small buffer in the default overwrite mode loses events on purpose).
 */
export async function captureRawPages(
  tracefs: string,
  events: readonly string[],
  workload: () => void,
  subbufKb?: number,
  bufferKb?: number,
): Promise<Capture> {
  const out = mkdtempSync(join(tmpdir(), 'evtrace-raw-'));
  return withInstance(tracefs, (inst) => {
    if (subbufKb !== undefined) write(`${inst}/buffer_subbuf_size_kb`, String(subbufKb));
    if (bufferKb !== undefined) write(`${inst}/buffer_size_kb`, String(bufferKb));
    const pageSize = Number(readFileSync(`${inst}/buffer_subbuf_size_kb`, 'utf8').trim()) * 1024;
    for (const e of events) write(`${inst}/events/${e}/enable`, '1');
    write(`${inst}/tracing_on`, '1');
    workload();
    write(`${inst}/tracing_on`, '0');
    write(`${inst}/options/raw`, '1');
    const rawText = readFileSync(`${inst}/trace`, 'utf8');
    write(`${inst}/options/raw`, '0');
    write(`${inst}/options/fields`, '1');
    const fieldsText = readFileSync(`${inst}/trace`, 'utf8');
    write(`${inst}/options/fields`, '0');
    write(`${inst}/options/hash-ptr`, '0');
    const plainText = readFileSync(`${inst}/trace`, 'utf8');
    mkdirSync(join(out, 'events'));
    for (const f of ['header_page', 'header_event'])
      write(join(out, 'events', f), readFileSync(`${inst}/events/${f}`, 'utf8'));
    for (const e of events) {
      mkdirSync(join(out, 'events', e), { recursive: true });
      write(join(out, 'events', e, 'format'), readFileSync(`${inst}/events/${e}/format`, 'utf8'));
    }
    write(join(out, 'buffer_subbuf_size_kb'), readFileSync(`${inst}/buffer_subbuf_size_kb`, 'utf8'));
    write(join(out, 'saved_cmdlines'), readFileSync(`${tracefs}/saved_cmdlines`, 'utf8'));
    write(join(out, 'trace_clock'), readFileSync(`${inst}/trace_clock`, 'utf8'));
    write(join(out, 'kallsyms'), readFileSync('/proc/kallsyms', 'utf8'));
    const stats = new Map<number, string>();
    for (const cpuDir of readdirSync(`${inst}/per_cpu`)) {
      stats.set(Number(cpuDir.slice(3)), readFileSync(`${inst}/per_cpu/${cpuDir}/stats`, 'utf8'));
    }
    const page = Buffer.alloc(pageSize);
    for (const cpuDir of readdirSync(`${inst}/per_cpu`)) {
      const fd = openSync(`${inst}/per_cpu/${cpuDir}/trace_pipe_raw`, constants.O_RDONLY | constants.O_NONBLOCK);
      const chunks: Buffer[] = [];
      try {
        for (;;) {
          page.fill(0);
          let n: number;
          try {
            n = readSync(fd, page, 0, pageSize, null);
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code === 'EAGAIN') break;
            throw e;
          }
          if (n === 0) break;
          chunks.push(Buffer.from(page));
        }
      } finally {
        closeSync(fd);
      }
      writeFileSync(join(out, `${cpuDir}.raw`), Buffer.concat(chunks));
    }
    return { dir: out, rawText, fieldsText, plainText, pageSize, stats };
  });
}

/** A small workload that allocates and context-switches. */
export function smallWorkload(): void {
  for (let i = 0; i < 5; i++) execFileSync('ls', ['/proc/self'], { stdio: 'ignore' });
}

/** One event as the kernel prints it in its `trace` file. */
export interface KernelEvent {
  pid: number;
  cpu: number;
  ts: bigint;
  id: number;
  name: string;
  fields: Map<string, string>;
}

/** Joins the `raw` and `fields` renderings of the same `trace` file, line by line. */
export function kernelEvents(c: Capture): KernelEvent[] {
  const raw = c.rawText.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
  const fields = c.fieldsText.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
  if (raw.length !== fields.length)
    throw new Error(`raw and fields renderings differ: ${raw.length} vs ${fields.length} lines`);
  return raw.map((line, i) => {
    const r = /^\s*(\d+) (\d+) (\d+) type: (\d+)/.exec(line);
    const f = /\s(\w+): (.*)$/.exec(fields[i]!.replace(/^.*?\[\d+\]\s+\S+\s+[\d.]+:/, ''));
    if (r === null || f === null) throw new Error(`unexpected trace lines: ${line} / ${fields[i]}`);
    const map = new Map<string, string>();
    for (const m of f[2]!.matchAll(/(\w+)=(.*?)(?= \w+=|$)/g)) map.set(m[1]!, m[2]!);
    return { pid: Number(r[1]), cpu: Number(r[2]), ts: BigInt(r[3]!), id: Number(r[4]), name: f[1]!, fields: map };
  });
}
