/**
 * The Hardware view over a store of mce:mce_record and ras:mc_event events (this VM has no machine-check support: the
 * events are built here with the tracepoints' field names, as a recording of them decodes).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptyRecord, HardwareSource, MC_EVENT_FORMAT, MCE_RECORD_FORMAT, mceTraceFields } from '@evtrace/hw-mce';
import {
  compileRecordEncoder,
  type EventClass,
  kernelPageLayout,
  openTrace,
  packPages,
  parseFormatFile,
  type TraceEvent,
} from '@evtrace/trace-format';
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import type { ViewerSource } from '../data/source.ts';
import { arrayStore } from '../data/store.ts';
import { KeyContext, type KeyHandler } from '../ui/keys.ts';
import { hardwareSummary, hardwareView } from './hardware.tsx';

const mceClass = { name: 'mce:mce_record' } as EventClass;
const rasClass = { name: 'ras:mc_event' } as EventClass;
const other = { name: 'kmem:kmalloc' } as EventClass;

function mce(ts: number, status: bigint, bank: number, misc: bigint): TraceEvent {
  return {
    tsNs: BigInt(ts),
    cpu: 0,
    eventClass: mceClass,
    fields: {
      status,
      bank,
      misc,
      addr: 0x1234000n,
      mcgstatus: 0n,
      mcgcap: 0n,
      cpu: 3,
      cpuid: 0x106a0,
      cpuvendor: 0,
      socketid: 1,
      apicid: 0,
      walltime: 1763781121n + BigInt(ts),
    },
  };
}

const events: TraceEvent[] = [
  mce(1, 0x8c00000000000091n, 8, (2n << 18n) | (1n << 16n)), // corrected, Nehalem channel 2 DIMM 1
  { tsNs: 2n, cpu: 0, eventClass: other, fields: { bytes_req: 64 } },
  mce(3, 0x8c00000000000091n, 8, (2n << 18n) | (1n << 16n)),
  mce(4, 0xbd80000000100134n, 1, 0x86n), // SRAR data load
  {
    tsNs: 5n,
    cpu: 1,
    eventClass: rasClass,
    fields: {
      error_type: 1,
      error_count: 1,
      msg: 'memory read error',
      label: 'DIMM_A1',
      mc_index: 0,
      top_layer: 0,
      middle_layer: 1,
      lower_layer: -1,
      address: 0x55aa000n,
      grain_bits: 6,
      syndrome: 0n,
      driver_detail: '',
    },
  },
];

const thresholdClass = { name: 'evtrace:mce_threshold' } as EventClass;
const crossing = (ts: number, action: string, result: string): TraceEvent => ({
  tsNs: BigInt(ts),
  cpu: 0,
  eventClass: thresholdClass,
  fields: {
    kind: 'page',
    location: 'page 0x1234000 SOCKET:1 CHANNEL:2 DIMM:1 []',
    message: 'Corrected memory errors on page 1234000 exceed threshold 2 in 1d',
    threshold: '2 in 1d',
    action,
    result,
    count: 2,
    cpu: 3,
    bank: 8,
    addr: 0x1234000n,
  },
});

describe('Hardware view', () => {
  it('counts errors by severity and per DIMM against the threshold', () => {
    const s = hardwareSummary(arrayStore(events));
    expect(s.crossings).toEqual([]);
    expect(s.bySeverity).toEqual({ corrected: 2, deferred: 0, ucna: 1, srao: 0, srar: 1, fatal: 0 });
    expect(s.dimms).toEqual([{ socket: 1, channel: 2, dimm: 1, ce: 2, uc: 0, ceWindow: 2, ceCapacity: 100 }]);
    expect(s.errors.length).toBe(4);
  });

  it('does not scan the store while another view is on screen', () => {
    const store = {
      ...arrayStore(events),
      eventClass: () => {
        throw new Error('scanned while hidden');
      },
    };
    const View = hardwareView.Component;
    const app = render(
      <View
        source={{} as ViewerSource}
        store={store}
        tick={0}
        paused={false}
        active={false}
        width={80}
        height={10}
        onStatus={() => {}}
      />,
    );
    expect(app.lastFrame()?.trim()).toBe('');
    app.unmount();
  });

  it('lists the errors and shows the decoded record on Enter', async () => {
    let handler: KeyHandler = () => false;
    const routing = {
      register: (h: KeyHandler) => {
        handler = h;
        return () => {};
      },
    };
    const View = hardwareView.Component;
    const app = render(
      <KeyContext.Provider value={routing}>
        <View
          source={{} as ViewerSource}
          store={arrayStore(events)}
          tick={0}
          paused={false}
          active
          width={140}
          height={20}
          onStatus={() => {}}
        />
      </KeyContext.Provider>,
    );
    const frame = async (ok: (f: string) => boolean) => {
      for (let i = 0; i < 200; i++) {
        const f = app.lastFrame() ?? '';
        if (ok(f)) return f;
        await new Promise((r) => setTimeout(r, 25));
      }
      return app.lastFrame() ?? '';
    };
    let f = await frame((x) => x.includes('SUMMARY'));
    expect(f).toMatch(/corrected 2 +deferred 0 +ucna 1 +srao 0 +srar 1 +fatal 0/);
    expect(f).toMatch(/1\/2\/1 +2 +0 .* 2\/100/);
    expect(f).toMatch(/^>corrected +corrected memory error/m);
    handler('down');
    handler('down');
    f = await frame((x) => /^>srar/m.test(x));
    expect(f).toMatch(/^>srar +uncorrected, recovery action required \(SRAR\) cache error/m);
    handler('enter');
    f = await frame((x) => x.includes('error 3 of 4'));
    expect(f).toContain('how bad: srar (SRAR): Action required: data load error');
    expect(f).toContain('do:      A program consumed damaged data');
    handler('escape');
    f = await frame((x) => x.includes('SUMMARY'));
    expect(f).toMatch(/^>srar/m);
    expect(f).not.toContain('thresholds crossed');
    app.unmount();
  });

  it('says how many thresholds the agent saw crossed, and the latest with what it did', async () => {
    const withCrossings = [
      ...events,
      crossing(6, 'soft-offline', 'ok'),
      crossing(7, 'soft-offline', 'failed: soft offline of page 0x1234000 refused: EBUSY'),
    ];
    expect(hardwareSummary(arrayStore(withCrossings)).crossings.map((c) => c.failed)).toEqual([false, true]);
    const View = hardwareView.Component;
    const app = render(
      <View
        source={{} as ViewerSource}
        store={arrayStore(withCrossings)}
        tick={0}
        paused={false}
        active
        width={260}
        height={20}
        onStatus={() => {}}
      />,
    );
    for (let i = 0; i < 200 && !(app.lastFrame() ?? '').includes('SUMMARY'); i++)
      await new Promise((r) => setTimeout(r, 25));
    expect(app.lastFrame()).toContain(
      'thresholds crossed 2, latest: Corrected memory errors on page 1234000 exceed threshold 2 in 1d at page 0x1234000 SOCKET:1 CHANNEL:2 DIMM:1 []; soft-offline: failed: soft offline of page 0x1234000 refused: EBUSY',
    );
    // The errors are still all listed: a crossing is not an error.
    expect(app.lastFrame()).toMatch(/^>corrected/m);
    app.unmount();
  });
});

/**
 * What the agent's hardware session records (`evtrace agent --hardware`: @evtrace/hw-mce's HardwareSource) is what
 * this view reads. This VM has no machine-check support, so the source reads a tracefs-shaped tree built here whose
 * instance's trace_pipe_raw holds ring-buffer pages encoded from the real format files; its pages are written out as
 * a raw-pages directory and opened with @evtrace/trace-format like any recording.
 */
describe('Hardware view over a recording of the agent’s hardware source', () => {
  it('counts the machine checks and memory errors the source decoded and wrote', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tui-hardware-'));
    try {
      const root = join(dir, 'tracefs');
      for (const [system, event, text] of [
        ['mce', 'mce_record', MCE_RECORD_FORMAT],
        ['ras', 'mc_event', MC_EVENT_FORMAT],
      ] as const) {
        mkdirSync(join(root, 'events', system, event), { recursive: true });
        writeFileSync(join(root, 'events', system, event, 'format'), text);
        mkdirSync(join(root, 'instances', 'hw', 'events', system, event), { recursive: true });
        writeFileSync(join(root, 'instances', 'hw', 'events', system, event, 'enable'), '0');
      }
      writeFileSync(join(root, 'instances', 'hw', 'tracing_on'), '0');
      mkdirSync(join(root, 'instances', 'hw', 'per_cpu', 'cpu0'), { recursive: true });
      // Two corrected Nehalem memory errors on socket 1 channel 2 DIMM 1, and an SRAR data load error.
      const nehalem = (status: bigint, bank: number, misc: bigint) =>
        Object.assign(emptyRecord({ kind: 'trace' }), {
          cpu: 3,
          bank,
          status,
          misc,
          addr: 0x1234000n,
          cpuvendor: 0,
          cpuid: 0x106a0,
          socketid: 1,
        });
      const encode = compileRecordEncoder(parseFormatFile(MCE_RECORD_FORMAT, { system: 'mce' }));
      const records = [
        nehalem(0x8c00000000000091n, 8, (2n << 18n) | (1n << 16n)),
        nehalem(0x8c00000000000091n, 8, (2n << 18n) | (1n << 16n)),
        nehalem(0xbd80000000100134n, 1, 0x86n),
      ].map((r, i) => ({ tsNs: BigInt(1000 + i), data: encode(mceTraceFields(r), { common_pid: 0 }) }));
      writeFileSync(
        join(root, 'instances', 'hw', 'per_cpu', 'cpu0', 'trace_pipe_raw'),
        packPages(records, kernelPageLayout()),
      );
      const pages: Buffer[] = [];
      const source = new HardwareSource({ tracefs: root, instance: 'hw', mcelog: false, edacSysfs: false });
      source.prepare();
      source.start([{ writeBytes: (_t, page) => pages.push(Buffer.from(page)) > 0, flush: () => {} }]);
      source.poll();
      source.close();
      const out = join(dir, 'recording');
      mkdirSync(out);
      source.writeMetadata(out);
      writeFileSync(join(out, 'cpu0.raw'), Buffer.concat(pages));
      const s = hardwareSummary(arrayStore([...openTrace(out).events()]));
      expect(s.bySeverity).toEqual({ corrected: 2, deferred: 0, ucna: 0, srao: 0, srar: 1, fatal: 0 });
      expect(s.dimms).toEqual([{ socket: 1, channel: 2, dimm: 1, ce: 2, uc: 0, ceWindow: 2, ceCapacity: 100 }]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
