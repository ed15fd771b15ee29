/**
 * ftrace benchmarks, each beside trace-cmd on the same file in the same run: trace.dat decoding (events only, and
 * decoding plus trace-cmd-report-style text) against `trace-cmd report`, raw page decoding against `trace-cmd report`
 * of an uncompressed v6 file holding the same pages and against a memory copy, and trace.dat copying (pages as they
 * are) and writing (every event encoded) against `trace-cmd convert` producing the same kind of file.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Comparison, consume, fromTotal, type Measurement, measure, printComparisons } from '@evtrace/bench';
import { FTRACE_COMMON_FIELDS_TEXT } from '../ftrace/common-fields.ts';
import { cpuEvents, EventTable } from '../ftrace/events.ts';
import { parseFormatFile } from '../ftrace/format-file.ts';
import { readPage } from '../ftrace/page.ts';
import { readTraceDat } from '../ftrace/tracedat/read.ts';
import { encodeTraceDat } from '../ftrace/tracedat/write-events.ts';
import { writeTraceDatPages } from '../ftrace/tracedat/write-pages.ts';
import type { EventClass, FieldValue, TraceEvent } from '../model/types.ts';
import { writePerfettoTrace } from '../output/perfetto-proto.ts';
import { createFtraceTextFormatter } from '../output/text.ts';

const EVENTS = 400_000;

const KMALLOC = `name: kmalloc
ID: 658
format:
${FTRACE_COMMON_FIELDS_TEXT}
\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;
\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;
\tfield:size_t bytes_req;\toffset:24;\tsize:8;\tsigned:0;
\tfield:size_t bytes_alloc;\toffset:32;\tsize:8;\tsigned:0;
\tfield:unsigned long gfp_flags;\toffset:40;\tsize:8;\tsigned:0;
\tfield:int node;\toffset:48;\tsize:4;\tsigned:1;

print fmt: "call_site=%pS ptr=%p bytes_req=%zu bytes_alloc=%zu gfp_flags=%lx node=%d", (void *)REC->call_site, REC->ptr, REC->bytes_req, REC->bytes_alloc, REC->gfp_flags, REC->node
`;

const SCHED_SWITCH = `name: sched_switch
ID: 372
format:
${FTRACE_COMMON_FIELDS_TEXT}
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;

print fmt: "prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%ld ==> next_comm=%s next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, REC->prev_state, REC->next_comm, REC->next_pid, REC->next_prio
`;

export const kmalloc = parseFormatFile(KMALLOC, { system: 'kmem' });
export const schedSwitch = parseFormatFile(SCHED_SWITCH, { system: 'sched' });
const KALLSYMS = Array.from(
  { length: 2000 },
  (_, i) => `${(0xffffffff81000000 + i * 0x1000).toString(16)} T func_${i}`,
).join('\n');

/** Three kmallocs per context switch on two CPUs, as under an allocation-heavy load. */
export function* sampleEvents(n: number): Generator<TraceEvent> {
  for (let i = 0; i < n; i++) {
    const pid = 1000 + (i % 17);
    const common = { common_type: 0, common_flags: 0, common_preempt_count: 0, common_pid: pid };
    const cls: EventClass = i % 4 === 3 ? schedSwitch : kmalloc;
    const fields: Record<string, FieldValue> =
      cls === kmalloc
        ? {
            call_site: 0xffffffff81000000n + BigInt((i * 7919) % 0x7d0000),
            ptr: 0xffff888100000000n + BigInt(i * 64),
            bytes_req: BigInt(8 + (i % 500)),
            bytes_alloc: BigInt(16 << (i % 6)),
            gfp_flags: 0xcc0n,
            node: -1,
          }
        : {
            prev_comm: `task-${pid}`,
            prev_pid: pid,
            prev_prio: 120,
            prev_state: 1n,
            next_comm: 'swapper/1',
            next_pid: 0,
            next_prio: 120,
          };
    yield {
      tsNs: 1_000_000_000n + BigInt(i) * 700n,
      cpu: i & 1,
      eventClass: cls,
      fields,
      scopes: { 'event.context': common },
    };
  }
}

function timeProcess(cmd: string, args: string[]): number {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'ignore'] });
  const ns = Number(process.hrtime.bigint() - t0);
  if (r.error !== undefined || r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed`);
  return ns;
}

/** Median of a few runs of an external command. */
function peer(name: string, cmd: string, args: string[], ops: number, bytesPerOp?: number): Measurement {
  const runs = [0, 1, 2].map(() => timeProcess(cmd, args)).sort((a, b) => a - b);
  return fromTotal(name, runs[1]!, ops, bytesPerOp);
}

export function runFtraceBenchmarks(): void {
  const hasTraceCmd = spawnSync('sh', ['-c', 'command -v trace-cmd'], { stdio: 'ignore' }).status === 0;
  if (!hasTraceCmd) {
    console.log('ftrace benchmarks skipped: trace-cmd is not installed (apt install trace-cmd)');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-ftrace-bench-'));
  try {
    const v7 = join(dir, 'v7.dat');
    const v6 = join(dir, 'v6.dat');
    const options = { cmdlines: new Map([[1000, 'task-1000']]), kallsyms: KALLSYMS };
    writeFileSync(
      v7,
      encodeTraceDat([kmalloc, schedSwitch], sampleEvents(EVENTS), { ...options, version: 7, compression: 'zstd' })
        .bytes,
    );
    writeFileSync(v6, encodeTraceDat([kmalloc, schedSwitch], sampleEvents(EVENTS), { ...options, version: 6 }).bytes);
    const v7Bytes = readFileSync(v7);
    const v6Bytes = readFileSync(v6);
    const perEvent7 = statSync(v7).size / EVENTS;
    const report7 = peer('trace-cmd report (v7 zstd)', 'trace-cmd', ['report', v7], EVENTS, perEvent7);

    const decode = (bytes: Buffer) => {
      let n = 0;
      for (const e of readTraceDat(bytes).events()) {
        consume(e);
        n++;
      }
      return n;
    };
    const decodeText = (bytes: Buffer) => {
      const r = readTraceDat(bytes);
      const line = createFtraceTextFormatter({ cmdlines: r.metadata.cmdlines, kallsyms: r.metadata.kallsyms });
      let n = 0;
      for (const e of r.events()) {
        consume(line(e));
        n++;
      }
      return n;
    };
    const rows: Comparison[] = [
      {
        case: `trace.dat v7 zstd decode, ${EVENTS / 1000}k events`,
        ours: measure('evtrace readTraceDat', () => decode(v7Bytes), {
          opsPerCall: EVENTS,
          bytesPerOp: perEvent7,
          samples: 5,
          sampleMs: 500,
        }),
        peer: report7,
        target: '>= 5x',
      },
      {
        case: 'trace.dat v7 zstd decode + report-style text',
        ours: measure('evtrace readTraceDat + text', () => decodeText(v7Bytes), {
          opsPerCall: EVENTS,
          bytesPerOp: perEvent7,
          samples: 3,
          sampleMs: 500,
        }),
        peer: report7,
      },
    ];
    printComparisons('trace.dat decoding beside trace-cmd report (same file, same run)', rows);

    // Raw pages: the flyrecord data of the v6 file, as trace_pipe_raw would give it.
    const r6 = readTraceDat(v6Bytes);
    const cpus = r6.info.buffers[0]!.cpus;
    const pages = cpus.map((c) => v6Bytes.subarray(c.offset, c.offset + c.size));
    const pageBytes = pages.reduce((s, p) => s + p.length, 0);
    const layout = r6.metadata.page;
    const walk = () => {
      let n = 0;
      for (const p of pages) {
        for (let at = 0; at < p.length; at += layout.pageSize) readPage(p, at, layout, () => n++);
      }
      return n;
    };
    const table = new EventTable(r6.metadata);
    const decodePages = () => {
      let n = 0;
      for (const [i, p] of pages.entries()) {
        for (const e of cpuEvents(r6.metadata, table, { cpu: cpus[i]!.cpu, bytes: p }, { warn: () => {} })) {
          consume(e);
          n++;
        }
      }
      return n;
    };
    const copyTarget = Buffer.alloc(pageBytes);
    const copy = () => {
      let at = 0;
      for (const p of pages) {
        copyTarget.set(p, at);
        at += p.length;
      }
    };
    const perEventRaw = pageBytes / EVENTS;
    const report6 = peer('trace-cmd report (v6 raw pages)', 'trace-cmd', ['report', v6], EVENTS, perEventRaw);
    printComparisons('raw ring-buffer page decoding', [
      {
        case: 'page walk (headers, deltas; no fields)',
        ours: measure('evtrace readPage', walk, { opsPerCall: EVENTS, bytesPerOp: perEventRaw, samples: 5 }),
        peer: report6,
      },
      {
        case: 'pages to events with every field',
        ours: measure('evtrace cpuEvents', decodePages, {
          opsPerCall: EVENTS,
          bytesPerOp: perEventRaw,
          samples: 5,
          sampleMs: 500,
        }),
        peer: report6,
      },
      {
        case: 'pages to events with every field, beside a memory copy',
        ours: measure('evtrace cpuEvents', decodePages, {
          opsPerCall: EVENTS,
          bytesPerOp: perEventRaw,
          samples: 3,
          sampleMs: 500,
        }),
        peer: measure('Buffer.set of the same pages', copy, { opsPerCall: EVENTS, bytesPerOp: perEventRaw }),
      },
    ]);

    // Writing: the same events into v6 and v7+zstd files, beside trace-cmd convert producing the same kinds. trace-cmd
    // convert copies pages; so does evtrace convert from a trace.dat (pagesInput + writeTraceDatPages, timed from the
    // file's bytes on disk as trace-cmd reads them), while encodeTraceDat encodes every event from its fields.
    // pagesInput's time includes checking every page and record bound (checkPages), which trace-cmd does not do.
    const events = [...readTraceDat(v6Bytes).events()];
    const out = join(dir, 'out.dat');
    const copyOut = join(dir, 'copy.dat');
    const convert = (name: string, args: string[]) =>
      peer(name, 'trace-cmd', ['convert', ...args, '-o', out], EVENTS, v6Bytes.length / EVENTS);
    const toV6 = convert('trace-cmd convert v7 -> v6', ['--file-version', '6', '-i', v7]);
    const toV7 = convert('trace-cmd convert v6 -> v7 zstd', ['--compression', 'zstd', '-i', v6]);
    const copyPages = (from: string, version: 6 | 7) => () => {
      const pages = readTraceDat(readFileSync(from)).pagesInput();
      if (!('input' in pages)) throw new Error(`not copied: ${pages.reason}`);
      consume(writeTraceDatPages(copyOut, pages.input, { version }));
    };
    const copyOptions = { opsPerCall: EVENTS, bytesPerOp: v6Bytes.length / EVENTS, samples: 5, sampleMs: 300 };
    printComparisons('trace.dat writing', [
      {
        case: 'copy v7 zstd -> v6, pages as they are (evtrace convert of a trace.dat)',
        ours: measure('evtrace pagesInput + writeTraceDatPages v6', copyPages(v7, 6), copyOptions),
        peer: toV6,
      },
      {
        case: 'copy v6 -> v7 zstd, pages as they are (evtrace convert of a trace.dat)',
        ours: measure('evtrace pagesInput + writeTraceDatPages v7 zstd', copyPages(v6, 7), copyOptions),
        peer: toV7,
      },
      {
        case: 'encode every event into v6 (encodeTraceDat)',
        ours: measure(
          'evtrace encodeTraceDat v6',
          () => consume(encodeTraceDat([kmalloc, schedSwitch], events, { version: 6 })),
          {
            opsPerCall: EVENTS,
            bytesPerOp: v6Bytes.length / EVENTS,
            samples: 3,
            sampleMs: 500,
          },
        ),
        peer: toV6,
      },
      {
        case: 'encode every event into v7 zstd (encodeTraceDat)',
        ours: measure(
          'evtrace encodeTraceDat v7 zstd',
          () => consume(encodeTraceDat([kmalloc, schedSwitch], events, { version: 7 })),
          {
            opsPerCall: EVENTS,
            bytesPerOp: v6Bytes.length / EVENTS,
            samples: 3,
            sampleMs: 500,
          },
        ),
        peer: toV7,
      },
    ]);

    // Perfetto's protobuf trace, as evtrace convert --to perfetto writes it (bytes counted, not kept).
    let written = 0;
    const toPerfetto = () => {
      written = 0;
      consume(writePerfettoTrace(events, (b) => (written += b.length)));
    };
    toPerfetto();
    printComparisons('Perfetto protobuf writing', [
      {
        case: 'encode every event into a Perfetto trace (writePerfettoTrace)',
        ours: measure('evtrace writePerfettoTrace', toPerfetto, {
          opsPerCall: EVENTS,
          bytesPerOp: written / EVENTS,
          samples: 3,
          sampleMs: 500,
        }),
        noPeer: 'none here: no other writer of Perfetto traces is packaged for Debian or npm',
      },
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
