import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import { isPerfData } from './header.ts';
import { openPerfData, readPerfData } from './reader.ts';
import { sampleLayout } from './records.ts';
import type { SampleVisitor } from './samples.ts';

/** Why `perf record` of tracepoints cannot run here, or ''. */
function perfUnavailable(): string {
  if (process.getuid?.() !== 0) return 'not root: perf record of tracepoints needs root';
  try {
    execFileSync('sh', ['-c', 'command -v perf'], { stdio: 'ignore' });
  } catch {
    return 'perf is not installed (Debian linux-perf)';
  }
  const mount = /^\S+ (\S+) tracefs /m.exec(readFileSync('/proc/mounts', 'utf8'))?.[1];
  if (mount === undefined || !existsSync(`${mount}/events/kmem/kmalloc`)) return 'no kmem tracepoints in tracefs';
  return '';
}

interface Ways {
  readonly lenient?: boolean;
  /** The order found by another reader's walk, handed over as to another thread (cloned). */
  readonly walked?: boolean;
  /** Each sample handed to a visitor (its time and CPU read at its layout's places) instead of written in columns. */
  readonly visited?: boolean;
}

/**
 * Every sample as `[CPU] TIME EVENT`, in the reader's order: what `perf script -F cpu,time,event --ns` prints, then
 * the size and event id of its RAW data, and its file offset.
 */
function lines(bytes: Uint8Array, options: Ways = {}): string[] {
  return samplesAndWarnings(bytes, options).lines;
}

function samplesAndWarnings(bytes: Uint8Array, options: Ways) {
  const read = () => readPerfData(bytes, { file: 'fuzz.data', batch: 64, lenient: options.lenient === true });
  const reader = read();
  const walk = options.walked ? structuredClone(read().walk()) : undefined;
  const out: string[] = [];
  const line = (
    cpu: number,
    time: number,
    attr: number,
    view: DataView,
    rawAt: number,
    rawSize: number,
    at: number,
  ) => {
    const raw = rawAt < 0 ? 'none' : `${rawSize}:${rawSize >= 2 ? view.getUint16(rawAt, true) : '-'}`;
    out.push(`${cpu} ${time} ${reader.attrClasses[attr]?.name ?? '?'} raw ${raw} @${at}`);
    if (out.length > 1_000_000) throw new Error('runaway sample count');
  };
  const layouts = reader.header.attrs.map(sampleLayout);
  const visit: SampleVisitor = (chunk, at, attr, rawAt, rawSize) => {
    const l = layouts[attr]!;
    const v = chunk.view;
    const time = l.time < 0 ? 0 : v.getUint32(at + l.time, true) + v.getUint32(at + l.time + 4, true) * 2 ** 32;
    line(l.cpu < 0 ? -1 : v.getInt32(at + l.cpu, true), time, attr, v, rawAt, rawSize, chunk.base + at);
  };
  let visited = 0;
  for (const s of reader.samples(walk, options.visited ? visit : undefined)) {
    // Visited, a batch only counts its samples.
    if (options.visited) {
      visited += s.length;
      expect(visited).toBe(out.length);
      continue;
    }
    for (let i = 0; i < s.length; i++)
      line(s.cpu[i]!, s.time[i]!, s.attr[i]!, s.chunk[i]!.view, s.rawAt[i]!, s.rawSize[i]!, s.offset[i]!);
  }
  return { lines: out, warnings: reader.warnings };
}

/** {@link lines} read every way (directly, after a walk, visited, both), or the error each way threw. */
const everyWay = (bytes: Uint8Array, lenient: boolean) =>
  [
    { walked: false, visited: false },
    { walked: true, visited: false },
    { walked: false, visited: true },
    { walked: true, visited: true },
  ].map((way) => {
    try {
      return samplesAndWarnings(bytes, { lenient, ...way });
    } catch (error) {
      return error;
    }
  });

const why = perfUnavailable();

describe.skipIf(why !== '')(`perf.data read beside perf script${why ? ` (skipped: ${why})` : ''}`, () => {
  let dir: string;
  let data: string;
  let bytes: Buffer;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'perf-data-'));
    data = join(dir, 'perf.data');
    // Two tracepoints with callchains (-g: a variable-length field before RAW), every CPU.
    execFileSync(
      'perf',
      [
        'record',
        '-q',
        '-e',
        'kmem:kmalloc',
        '-e',
        'sched:sched_switch',
        '-g',
        '-a',
        '-o',
        data,
        '--',
        'perf',
        'bench',
        'sched',
        'messaging',
        '-g',
        '1',
        '-l',
        '2',
      ],
      { stdio: 'ignore' },
    );
    bytes = readFileSync(data);
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('the samples come in the order perf script prints them, with their CPU, time and event', () => {
    const text = execFileSync('perf', ['script', '-i', data, '-F', 'cpu,time,event', '--ns'], {
      maxBuffer: 1 << 28,
      stdio: ['ignore', 'pipe', 'ignore'],
    }).toString();
    const expected = text
      .trim()
      .split('\n')
      .map((l) => {
        const m = /^\[(\d+)\]\s+(\d+)\.(\d{9}):\s+(\S+):\s*$/.exec(l);
        if (m === null) throw new Error(`unexpected perf script line ${l}`);
        return `${Number(m[1])} ${BigInt(m[2]!) * 1_000_000_000n + BigInt(m[3]!)} ${m[4]}`;
      });
    const ours = lines(bytes).map((l) => l.replace(/ raw .* @\d+$/, ''));
    // Ordered by a walk made on another reader (another thread's), or handed to a visitor: the same.
    expect(lines(bytes, { walked: true })).toEqual(lines(bytes));
    expect(lines(bytes, { walked: true, visited: true })).toEqual(lines(bytes));
    expect(lines(bytes, { visited: true })).toEqual(lines(bytes));
    expect(ours.length).toBeGreaterThan(50);
    expect(ours).toEqual(expected);
  });

  it('names the events, their tracepoint formats and the kernel', () => {
    const reader = openPerfData(data);
    expect(reader.attrClasses.map((c) => c?.name)).toEqual(
      expect.arrayContaining(['kmem:kmalloc', 'sched:sched_switch']),
    );
    const kmalloc = reader.eventClasses.find((c) => c.name === 'kmem:kmalloc')!;
    expect(kmalloc.ftrace?.fields.map((f) => f.name)).toEqual(expect.arrayContaining(['call_site', 'ptr']));
    expect(reader.osRelease).toBe(execFileSync('uname', ['-r']).toString().trim());
    expect(reader.kernelBuildId).toMatch(/^[0-9a-f]{40}$/);
    // The RAW data of a sample starts with its event's ftrace id (common_type).
    for (const s of reader.samples()) {
      const cls = reader.attrClasses[s.attr[0]!]!;
      expect(s.chunk[0]!.view.getUint16(s.rawAt[0]!, true)).toBe(cls.id);
      break;
    }
  });

  it('a file cut short: strict names the file and byte offset; lenient keeps every sample before the cut', () => {
    const full = lines(bytes);
    const header = readPerfData(bytes);
    const cut = header.header.data.offset + Math.floor(header.header.data.size / 2);
    const truncated = bytes.subarray(0, cut);
    let error: unknown;
    try {
      lines(truncated);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(TraceFormatError);
    expect((error as TraceFormatError).code).toBe('ERR_TRACE_PERF_DATA');
    expect((error as TraceFormatError).message).toMatch(/^fuzz\.data: byte \d+: /);
    const reader = readPerfData(truncated, { file: 'cut.data', lenient: true });
    const kept: number[] = [];
    for (const s of reader.samples()) for (let i = 0; i < s.length; i++) kept.push(s.offset[i]!);
    const before = full.map((l) => Number(/@(\d+)$/.exec(l)![1])).filter((o) => o < cut - 65536);
    expect(kept.length).toBeGreaterThan(before.length / 2);
    expect(new Set(kept).size).toBe(kept.length);
    for (const o of before) expect(kept.includes(o), `sample at ${o}`).toBe(true);
    expect(reader.warnings.join('\n')).toMatch(/cut\.data/);
  });

  it('fuzz: cut or mutated files read, or throw ERR_TRACE_PERF_DATA naming the file; lenient reads never hang', () => {
    const full = lines(bytes);
    const offsetOf = (l: string) => /@(\d+)$/.exec(l)![1]!;
    const order = new Map(full.map((l, i) => [offsetOf(l), i]));
    fc.assert(
      fc.property(
        fc.nat(bytes.length),
        fc.array(fc.record({ at: fc.nat(bytes.length - 1), value: fc.nat(255) }), { maxLength: 4 }),
        (cut, pokes) => {
          const copy = Uint8Array.from(bytes.subarray(0, cut));
          for (const p of pokes) if (p.at < copy.length) copy[p.at] = p.value;
          for (const lenient of [false, true]) {
            // Ordered by a walk on another reader, or visited: the same samples, or an error too (strict, the walk,
            // made first, may meet a later damage first); the same warnings but which ten of many skipped samples
            // are named.
            const [direct, ...others] = everyWay(copy, lenient);
            const named = (w: readonly string[]) =>
              w.some((x) => / samples skipped in all$/.test(x)) ? w.filter((x) => !/; skipped$/.test(x)) : w;
            for (const other of others)
              if (direct instanceof Error || other instanceof Error) {
                expect(direct).toBeInstanceOf(TraceFormatError);
                expect(other).toBeInstanceOf(TraceFormatError);
              } else {
                const a = direct as ReturnType<typeof samplesAndWarnings>;
                const b = other as ReturnType<typeof samplesAndWarnings>;
                expect(b.lines).toEqual(a.lines);
                expect(named(b.warnings)).toEqual(named(a.warnings));
              }
            try {
              const got = lines(copy, { lenient });
              // Only cut (no pokes): what is read is perf's order of what is left.
              if (pokes.length === 0) {
                const at = got.map((l) => order.get(offsetOf(l)) ?? -1);
                expect(at.every((i, k) => i >= 0 && (k === 0 || i > at[k - 1]!))).toBe(true);
              }
            } catch (error) {
              if (!(error instanceof TraceFormatError)) throw error;
              expect(['ERR_TRACE_PERF_DATA', 'ERR_TRACE_FTRACE_FORMAT']).toContain(error.code);
              expect(error.message.startsWith('fuzz.data')).toBe(true);
            }
          }
        },
      ),
      // The recording is system-wide: on a busy machine it is large, and each run reads it twice. The runs that fit
      // a minute are made rather than the test timing out.
      { numRuns: 150, interruptAfterTimeLimit: 60_000 },
    );
  }, 120_000);
});

describe('perf.data that is not one', () => {
  it('bytes without the magic, or a pipe-mode header, are refused with the reason and offset', () => {
    expect(isPerfData(Buffer.from('PERFILE2'))).toBe(true);
    expect(() => readPerfData(Buffer.from('not a perf.data at all'), { file: 'x' })).toThrow(
      /^x: byte 0: not a perf.data file/,
    );
    const pipe = Buffer.alloc(16);
    pipe.write('PERFILE2');
    pipe.writeBigUInt64LE(16n, 8);
    expect(() => readPerfData(pipe, { file: 'p' })).toThrow(/^p: byte 8: a perf.data in pipe mode/);
  });
});
