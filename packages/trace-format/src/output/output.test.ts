import { describe, expect, it } from 'vitest';
import { parseFormatFile } from '../ftrace/format-file.ts';
import type { TraceEvent } from '../model/types.ts';
import { eventToJsonLine, jsonValue } from './json.ts';
import { writePerfettoJson } from './perfetto-json.ts';
import { ftraceTimestamp } from './text.ts';

const SWITCH = parseFormatFile(
  `name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;

print fmt: "x"
`,
  { system: 'sched' },
);

const sw = (tsNs: bigint, cpu: number, prev: [string, number], next: [string, number]): TraceEvent => ({
  tsNs,
  cpu,
  eventClass: SWITCH,
  fields: { prev_comm: prev[0], prev_pid: prev[1], next_comm: next[0], next_pid: next[1] },
  scopes: { 'event.context': { common_type: 372, common_pid: prev[1] } },
});

describe('JSON lines', () => {
  it('keeps integers exact: numbers up to 2^53, decimal strings beyond, either sign', () => {
    expect(jsonValue(2n ** 53n - 1n)).toBe(2 ** 53 - 1);
    expect(jsonValue(2n ** 53n)).toBe('9007199254740992');
    expect(jsonValue(-(2n ** 60n))).toBe('-1152921504606846976');
    expect(jsonValue([1n, [2n ** 64n - 1n], { a: 3n }])).toEqual([1, ['18446744073709551615'], { a: 3 }]);
    const line = eventToJsonLine(sw(12345678901234567890n, 1, ['a', 1], ['b', 2]));
    expect(line.endsWith('}\n')).toBe(true);
    expect(JSON.parse(line)).toEqual({
      ts_ns: '12345678901234567890',
      cpu: 1,
      event: 'sched:sched_switch',
      fields: { prev_comm: 'a', prev_pid: 1, next_comm: 'b', next_pid: 2 },
    });
  });
});

describe('Perfetto JSON', () => {
  it('writes instant events, per-CPU running slices from sched_switch, and task names', () => {
    const events = [
      sw(1_000_000n, 0, ['swapper/0', 0], ['bash', 42]),
      sw(1_500_000n, 1, ['swapper/1', 0], ['make', 7]),
      sw(3_000_500n, 0, ['bash', 42], ['swapper/0', 0]),
      sw(4_000_000n, 1, ['make', 7], ['cc', 8]),
    ];
    let text = '';
    const n = writePerfettoJson(events, (chunk) => (text += chunk), { cmdlines: new Map([[8, 'cc1']]) });
    expect(n).toBe(4);
    const json = JSON.parse(text);
    const of = (ph: string) => json.traceEvents.filter((e: { ph: string }) => e.ph === ph);
    expect(of('i').map((e: { ts: number; tid: number }) => [e.ts, e.tid])).toEqual([
      [1000, 0],
      [1500, 0],
      [3000.5, 42],
      [4000, 7],
    ]);
    expect(of('X')).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'bash (42)', ts: 1000, dur: 2000.5, tid: 0x7fff0000 }),
        expect.objectContaining({ name: 'make (7)', ts: 1500, dur: 2500, tid: 0x7fff0001 }),
        expect.objectContaining({ name: 'cc (8)', ts: 4000, dur: 0, tid: 0x7fff0001 }),
      ]),
    );
    const names = of('M')
      .filter((e: { name: string }) => e.name === 'thread_name')
      .map((e: { tid: number; args: { name: string } }) => [e.tid, e.args.name]);
    expect(names).toEqual(
      expect.arrayContaining([
        [42, 'bash (42)'],
        [7, 'make (7)'],
        [0, 'swapper (0)'],
        [0x7fff0000, 'CPU 0'],
      ]),
    );
  });
});

describe('ftrace text pieces', () => {
  it('rounds time stamps to the nearest microsecond as trace-cmd does, carrying into the seconds', () => {
    expect(ftraceTimestamp(12_524_002_600n)).toBe('12.524003');
    expect(ftraceTimestamp(12_524_002_499n)).toBe('12.524002');
    expect(ftraceTimestamp(1_999_999_700n)).toBe('2.000000');
    expect(ftraceTimestamp(1_999_999_700n, true)).toBe('1.999999700');
  });
});
