/** Test support: sample ftrace events written as a trace.dat file and as a raw-pages directory. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  compileRecordEncoder,
  type EventClass,
  FTRACE_COMMON_FIELDS_TEXT,
  HEADER_EVENT_TEXT,
  headerPageText,
  kernelPageLayout,
  packPages,
  parseFormatFile,
  type TraceEvent,
  writeTraceDat,
} from '@evtrace/trace-format';
import { runCli } from '../program.ts';

export const KMALLOC_FORMAT = `name: kmalloc
ID: 658
format:
${FTRACE_COMMON_FIELDS_TEXT}
\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;
\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;
\tfield:size_t bytes_req;\toffset:24;\tsize:8;\tsigned:0;
\tfield:size_t bytes_alloc;\toffset:32;\tsize:8;\tsigned:0;
\tfield:unsigned long gfp_flags;\toffset:40;\tsize:8;\tsigned:0;
\tfield:int node;\toffset:48;\tsize:4;\tsigned:1;

print fmt: "call_site=%pS ptr=%p bytes_req=%zu bytes_alloc=%zu node=%d", (void *)REC->call_site, REC->ptr, REC->bytes_req, REC->bytes_alloc, REC->node
`;

export const EXEC_FORMAT = `name: sched_process_exec
ID: 311
format:
${FTRACE_COMMON_FIELDS_TEXT}
\tfield:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:0;
\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;
\tfield:pid_t old_pid;\toffset:16;\tsize:4;\tsigned:1;

print fmt: "filename=%s pid=%d old_pid=%d", __get_str(filename), REC->pid, REC->old_pid
`;

export const kmalloc: EventClass = parseFormatFile(KMALLOC_FORMAT, { system: 'kmem' });
export const exec: EventClass = parseFormatFile(EXEC_FORMAT, { system: 'sched' });
export const KALLSYMS = 'ffffffff81000000 T _stext\nffffffff81200000 T kmalloc_caller\nffffffff81300000 T other\n';

/** 40 events on 2 CPUs: kmalloc with growing sizes (one 64-bit value beyond 2^53) and execs. */
export function sampleEvents(): TraceEvent[] {
  return Array.from({ length: 40 }, (_, i): TraceEvent => {
    const common = { common_type: 0, common_flags: 0, common_preempt_count: 0, common_pid: 100 + (i % 3) };
    const tsNs = 1_000_000_000n + BigInt(i) * 1000n;
    if (i % 4 === 3) {
      return {
        tsNs,
        cpu: i % 2,
        eventClass: exec,
        fields: { filename: `/bin/t${i}`, pid: 100 + i, old_pid: 100 + i },
        scopes: { 'event.context': common },
      };
    }
    return {
      tsNs,
      cpu: i % 2,
      eventClass: kmalloc,
      fields: {
        call_site: 0xffffffff81200010n,
        ptr: 0xffff888100000000n + BigInt(i),
        bytes_req: BigInt(i * 10),
        bytes_alloc: BigInt(i * 16),
        gfp_flags: 0xcc0n,
        node: -1,
      },
      scopes: { 'event.context': common },
    };
  });
}

/** A trace.dat and a raw-pages directory holding the same sample events. */
export function sampleInputs(): { dat: string; raw: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-cli-'));
  const dat = join(dir, 'trace.dat');
  writeTraceDat(dat, [kmalloc, exec], sampleEvents(), {
    cmdlines: new Map([
      [100, 'worker'],
      [101, 'shell'],
    ]),
    kallsyms: KALLSYMS,
  });
  const raw = join(dir, 'raw');
  const layout = kernelPageLayout(4096);
  mkdirSync(join(raw, 'events', 'kmem', 'kmalloc'), { recursive: true });
  mkdirSync(join(raw, 'events', 'sched', 'sched_process_exec'), { recursive: true });
  writeFileSync(join(raw, 'events', 'header_page'), headerPageText(layout));
  writeFileSync(join(raw, 'events', 'header_event'), HEADER_EVENT_TEXT);
  writeFileSync(join(raw, 'events', 'kmem', 'kmalloc', 'format'), KMALLOC_FORMAT);
  writeFileSync(join(raw, 'events', 'sched', 'sched_process_exec', 'format'), EXEC_FORMAT);
  writeFileSync(join(raw, 'saved_cmdlines'), '100 worker\n101 shell\n');
  writeFileSync(join(raw, 'kallsyms'), KALLSYMS);
  for (const cpu of [0, 1]) {
    const records = sampleEvents()
      .filter((e) => e.cpu === cpu)
      .map((e) => ({ tsNs: e.tsNs, data: compileRecordEncoder(e.eventClass)(e.fields, e.scopes!['event.context']!) }));
    writeFileSync(join(raw, `cpu${cpu}.raw`), packPages(records, layout));
  }
  return { dat, raw, dir };
}

export async function run(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}
