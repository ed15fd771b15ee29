/**
 * `evtrace agent --hardware`: the real agent (a child process on a real socket) with its hardware session and its
 * metrics endpoint, scraped by a real Prometheus. This VM has no machine-check support (no `mce` tracepoint, no
 * /dev/mcelog, no EDAC driver), so the agent is pointed at inputs built in a temporary directory: a tracefs-shaped
 * tree whose instance `hw` has a `trace_pipe_raw` holding ring-buffer pages encoded from the real format files
 * (mce_record's as Linux 6.x generates it, this kernel's ras:mc_event when tracefs is readable), and an EDAC sysfs
 * tree in the per-DIMM layout.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { emptyRecord, MC_EVENT_FORMAT, MCE_RECORD_FORMAT, mceTraceFields } from '@evtrace/hw-mce';
import {
  compileRecordEncoder,
  type FieldValue,
  kernelPageLayout,
  packPages,
  parseFormatFile,
} from '@evtrace/trace-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, eventually, type RunningAgent, startAgent, workDir } from '../testing/agent-daemon.ts';
import { freePort, type Prometheus, prometheusMissing, startPrometheus } from '../testing/prometheus.ts';
import { expectValid } from '../testing/schemas.ts';
import { Hardware } from './hardware.ts';

/** What the tests need besides the agent: the real Prometheus, and trace-cmd to read the trace-shots. */
function traceCmdMissing(): string | undefined {
  try {
    execFileSync('sh', ['-c', 'command -v trace-cmd'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'trace-cmd is not installed (apt-get install trace-cmd)';
  }
}
const missing = prometheusMissing() ?? traceCmdMissing();

function put(path: string, text: string): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, `${text}\n`);
}

/** A tracefs-shaped tree with the real format files and an instance `hw`; returns its cpu0 trace_pipe_raw. */
function tracefsTree(root: string): string {
  for (const [system, event, text] of [
    ['mce', 'mce_record', MCE_RECORD_FORMAT],
    ['ras', 'mc_event', MC_EVENT_FORMAT],
  ] as const) {
    put(join(root, 'events', system, event, 'format'), text);
    put(join(root, 'instances', 'hw', 'events', system, event, 'enable'), '0');
  }
  put(join(root, 'instances', 'hw', 'tracing_on'), '0');
  const pipe = join(root, 'instances', 'hw', 'per_cpu', 'cpu0', 'trace_pipe_raw');
  mkdirSync(join(pipe, '..'), { recursive: true });
  writeFileSync(pipe, '');
  return pipe;
}

/** Appends ring-buffer pages of these events, encoded through the format files, as the kernel would fill them. */
function appendPages(pipe: string, events: { event: 'mce_record' | 'mc_event'; fields: Record<string, FieldValue> }[]) {
  const mce = compileRecordEncoder(parseFormatFile(MCE_RECORD_FORMAT, { system: 'mce' }));
  const ras = compileRecordEncoder(parseFormatFile(MC_EVENT_FORMAT, { system: 'ras' }));
  const common = { common_flags: 0, common_preempt_count: 0, common_pid: 0 };
  const records = events.map((e, i) => ({
    tsNs: 5_000_000n + BigInt(i) * 1000n,
    data: (e.event === 'mce_record' ? mce : ras)(e.fields, common),
  }));
  appendFileSync(pipe, packPages(records, kernelPageLayout()));
}

/** EDAC sysfs in the per-DIMM layout (skx_edac): mc0 with two DIMMs. */
function edacTree(root: string): void {
  put(join(root, 'mc', 'mc0', 'mc_name'), 'Skylake Socket#0 IMC#0');
  put(join(root, 'mc', 'mc0', 'ce_count'), '7');
  put(join(root, 'mc', 'mc0', 'ue_count'), '1');
  put(join(root, 'mc', 'mc0', 'ce_noinfo_count'), '0');
  put(join(root, 'mc', 'mc0', 'ue_noinfo_count'), '0');
  for (const [i, ce, ue] of [
    [0, 5, 1],
    [1, 2, 0],
  ] as const) {
    put(join(root, 'mc', 'mc0', `dimm${i}`, 'dimm_label'), `CPU_SrcID#0_MC#0_Chan#${i}_DIMM#0`);
    put(join(root, 'mc', 'mc0', `dimm${i}`, 'dimm_location'), `channel ${i} slot 0`);
    put(join(root, 'mc', 'mc0', `dimm${i}`, 'dimm_ce_count'), String(ce));
    put(join(root, 'mc', 'mc0', `dimm${i}`, 'dimm_ue_count'), String(ue));
  }
}

/** A corrected memory read error on a Skylake server, socket 1, memory controller bank 13 (channel 0). */
const corrected = (i: number) =>
  mceTraceFields(
    Object.assign(emptyRecord({ kind: 'trace' }), {
      cpu: 3,
      bank: 13,
      status: 0x8c00004000010090n,
      addr: 0x7f3a2000n + BigInt(i) * 0x1000n,
      misc: 0x86n,
      mcgcap: 0x1000c16n,
      cpuvendor: 0,
      cpuid: 0x50654,
      socketid: 1,
      apicid: 6,
    }),
  );

/** A corrected memory read error (Skylake server, socket 1) at `addr`, seen by `cpu` in memory-controller bank `bank`. */
const correctedAt = (addr: bigint, cpu: number, bank: number) =>
  mceTraceFields(
    Object.assign(emptyRecord({ kind: 'trace' }), {
      cpu,
      bank,
      status: 0x8c00004000010090n,
      addr,
      misc: 0x86n,
      mcgcap: 0x1000c16n,
      cpuid: 0x50654,
      socketid: 1,
    }),
  );

describe.skipIf(missing !== undefined)(
  `evtrace agent --hardware over a tracefs tree and EDAC sysfs built in a temporary directory (this VM has no MCE support)${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    let dir: string;
    let port: number;
    let agent: RunningAgent;
    let prometheus: Prometheus;
    let pipe: string;
    let root: string;
    let edac: string;
    let trigger: string;
    let pageTrigger: string;
    let memory: string;

    beforeAll(async () => {
      dir = workDir('agent-hardware-');
      root = join(dir, 'tracefs');
      pipe = tracefsTree(root);
      edac = join(dir, 'edac');
      edacTree(edac);
      const config = join(dir, 'mcelog.conf');
      // The trigger writes the environment mcelog gives it: the agent runs it with --run-triggers.
      trigger = join(dir, 'dimm-trigger.sh');
      writeFileSync(trigger, `#!/bin/sh\nenv > ${join(dir, 'trigger.env')}\n`, { mode: 0o755 });
      // The page trigger runs as well as the page action, as mcelog runs both.
      pageTrigger = join(dir, 'page-trigger.sh');
      writeFileSync(pageTrigger, `#!/bin/sh\nenv >> ${join(dir, 'page.env')}\n`, { mode: 0o755 });
      writeFileSync(
        config,
        `[dimm]\ndimm-tracking-enabled = yes\nce-error-threshold = 2 / 24h\nce-error-trigger = ${trigger}\n` +
          `[page]\nmemory-ce-threshold = 2 / 24h\nmemory-ce-action = soft\nmemory-ce-trigger = ${pageTrigger}\n`,
      );
      // Page offline requests go to this tree, never to the real /sys/devices/system/memory.
      memory = join(dir, 'memory');
      put(join(memory, 'soft_offline_page'), '');
      put(join(memory, 'hard_offline_page'), '');
      port = await freePort();
      agent = await startAgent(dir, [
        '--hardware',
        '--tracefs',
        root,
        '--mce-instance',
        'hw',
        '--edac-sysfs',
        edac,
        '--node-edac-metrics',
        '--mcelog',
        join(dir, 'no-mcelog'),
        '--mcelog-config',
        config,
        '--run-triggers',
        '--memory-sysfs',
        memory,
        '--metrics',
        `127.0.0.1:${port}`,
      ]);
      prometheus = await startPrometheus([`127.0.0.1:${port}`]);
    }, 60_000);

    afterAll(async () => {
      await prometheus?.stop();
      if (agent?.proc.exitCode === null) await agent.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('runs the hardware session on the inputs this host has, saying which it reads and which not', async () => {
      const line = await agent.waitForLog(/hardware: session hardware created and started;[^\n]*/);
      expect(line).toContain('reading tracefs mce:mce_record, tracefs ras:mc_event');
      expect(line).toMatch(/no-mcelog: not read \(mce:mce_record reports the same records\)/);
      expect(readFileSync(join(root, 'instances', 'hw', 'events', 'mce', 'mce_record', 'enable'), 'utf8')).toBe('1');
      const list = await cli(agent, ['session', 'list', '--json']);
      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(/"name":\s*"hardware"[^}]*"source":\s*"mce"/);
    });

    it("exports node_exporter's node_edac_* and the per-DIMM EDAC counters to Prometheus, read live from sysfs", {
      timeout: 30_000,
    }, async () => {
      const ce = await prometheus.waitFor('node_edac_correctable_errors_total{job="evtrace"}', (s) => s.length === 1);
      expect(ce.map((s) => [s.metric.controller, s.value])).toEqual([['0', 7]]);
      const ue = await prometheus.query('node_edac_uncorrectable_errors_total');
      expect(ue.map((s) => s.value)).toEqual([1]);
      const csrow = await prometheus.query('node_edac_csrow_correctable_errors_total');
      expect(csrow.map((s) => [s.metric.csrow, s.value])).toEqual([['unknown', 0]]);
      const dimms = await prometheus.query('evtrace_edac_dimm_correctable_errors_total');
      expect(new Map(dimms.map((s) => [s.metric.label, s.value]))).toEqual(
        new Map([
          ['CPU_SrcID#0_MC#0_Chan#0_DIMM#0', 5],
          ['CPU_SrcID#0_MC#0_Chan#1_DIMM#0', 2],
        ]),
      );
      // The driver counts an error: the next scrapes see it.
      writeFileSync(join(edac, 'mc', 'mc0', 'dimm1', 'dimm_ce_count'), '6\n');
      writeFileSync(join(edac, 'mc', 'mc0', 'ce_count'), '11\n');
      await prometheus.waitFor(
        'evtrace_edac_dimm_correctable_errors_total{label="CPU_SrcID#0_MC#0_Chan#1_DIMM#0"}',
        (s) => s[0]?.value === 6,
      );
      await prometheus.waitFor('node_edac_correctable_errors_total', (s) => s[0]?.value === 11);
    });

    it('decodes machine checks from the ring-buffer pages into per-bank and per-DIMM counters; a threshold takes trace-shots', async () => {
      appendPages(pipe, [
        { event: 'mce_record', fields: corrected(0) },
        { event: 'mce_record', fields: corrected(1) },
        {
          event: 'mc_event',
          fields: {
            error_type: 0,
            msg: 'memory read error',
            label: 'CPU_SrcID#1_MC#0_Chan#0_DIMM#0',
            error_count: 1,
            mc_index: 2,
            top_layer: 0,
            middle_layer: 0,
            lower_layer: -1,
            address: 0x7f3a2000n,
            grain_bits: 5,
            syndrome: 0n,
            driver_detail: '',
          },
        },
      ]);
      const dimm = await prometheus.waitFor('evtrace_mce_dimm_errors_total', (s) => s[0]?.value === 2);
      expect(dimm[0]?.metric).toMatchObject({ socket: '1', channel: '0', dimm: 'unknown', severity: 'corrected' });
      const banks = await prometheus.query('evtrace_mce_errors_total');
      expect(banks.map((s) => [s.metric.socket, s.metric.bank, s.metric.severity, s.metric.class, s.value])).toEqual([
        ['1', '13', 'corrected', 'memory-controller', 2],
      ]);
      const events = await prometheus.waitFor('evtrace_edac_events_errors_total', (s) => s.length === 1);
      expect(events[0]?.metric).toMatchObject({
        controller: '2',
        label: 'CPU_SrcID#1_MC#0_Chan#0_DIMM#0',
        type: 'corrected',
      });
      // The second error on the channel crossed "2 / 24h": the tracker says so and every running session is shot.
      const crossed = await agent.waitForLog(/hardware: Corrected dimm memory error count exceeded threshold[^\n]*/);
      expect(crossed).toContain('(SOCKET:1 CHANNEL:0 DIMM:? [])');
      await agent.waitForLog(new RegExp(`hardware: trigger ${trigger} exited 0`));
      const env = readFileSync(join(dir, 'trigger.env'), 'utf8');
      expect(env).toMatch(/^THRESHOLD=\S/m);
      expect(env).toMatch(/^TOTALCOUNT=2$/m);
      expect(env).toMatch(/^SOCKETID=1$/m);
      expect(env).toMatch(/^CHANNEL=0$/m);
      const shot = await agent.waitForLog(/session hardware: trace-shot (\S+) \(\d+ events\)/);
      const path = /trace-shot (\S+)/.exec(shot)![1]!;
      expect(existsSync(path)).toBe(true);
      // The trace-shot is a recording like any other: `evtrace mce decode` reads the machine checks back out of it.
      const decoded = await eventually(async () => {
        const r = await cli(agent, ['mce', 'decode', path, '--json']);
        const lines = r.stdout.trim().split('\n').filter(Boolean);
        return r.code === 0 && lines.length >= 2 ? lines.map((l) => JSON.parse(l)) : undefined;
      });
      expect(decoded.slice(0, 2).map((d) => [d.cpu, d.bank, d.status, d.severity, d.class])).toEqual([
        [3, 13, '0x8c00004000010090', 'corrected', 'memory-controller'],
        [3, 13, '0x8c00004000010090', 'corrected', 'memory-controller'],
      ]);
    });

    it('offlines a page whose corrected errors cross [page] memory-ce-threshold through the sysfs it was given, and records each crossing as an evtrace:mce_threshold event', {
      timeout: 30_000,
    }, async () => {
      const before = agent.log().length;
      const onPage = (page: bigint, i: number) => correctedAt(page + BigInt(i) * 0x40n, 2, 13);
      // Two corrected errors on page 0x55aa1000: "2 / 24h" crossed, memory-ce-action = soft.
      appendPages(pipe, [
        { event: 'mce_record', fields: onPage(0x55aa1000n, 0) },
        { event: 'mce_record', fields: onPage(0x55aa1000n, 1) },
      ]);
      await agent.waitForLog(/hardware: page 0x55aa1000 soft-offlined/);
      await agent.waitForLog(new RegExp(`hardware: trigger ${pageTrigger} exited 0`));
      expect(readFileSync(join(dir, 'page.env'), 'utf8')).toMatch(/^TOTALCOUNT=2$/m);
      expect(readFileSync(join(memory, 'soft_offline_page'), 'utf8')).toBe('0x55aa1000');
      expect(readFileSync(join(memory, 'hard_offline_page'), 'utf8')).toBe('\n');
      // The kernel refuses the next page (here: the file is a directory, EISDIR): logged, counted, the agent goes on.
      rmSync(join(memory, 'soft_offline_page'));
      mkdirSync(join(memory, 'soft_offline_page'));
      appendPages(pipe, [
        { event: 'mce_record', fields: onPage(0x66bb2000n, 0) },
        { event: 'mce_record', fields: onPage(0x66bb2000n, 1) },
      ]);
      await agent.waitForLog(/soft offline of page 0x66bb2000 refused: EISDIR/);
      const ok = await prometheus.waitFor(
        'evtrace_mce_threshold_crossings_total{action="soft-offline",result="ok"}',
        (r) => r[0]?.value === 1,
      );
      expect(ok).toHaveLength(1);
      await prometheus.waitFor(
        'evtrace_mce_threshold_crossings_total{action="soft-offline",result="failed"}',
        (r) => r[0]?.value === 1,
      );
      // The crossings are events of the session: the newest trace-shot holds them after the records that crossed.
      const shots = await eventually(async () => {
        const found = [
          ...agent
            .log()
            .slice(before)
            .matchAll(/session hardware: trace-shot (\S+) \(\d+ events\)/g),
        ];
        return found.length >= 2 ? found.map((m) => m[1]!) : undefined;
      });
      const events = await eventually(async () => {
        const r = await cli(agent, ['cat', shots.at(-1)!, '--json']);
        const all = r.stdout
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l));
        const t = all.filter((e) => e.event === 'evtrace:mce_threshold' && e.fields.kind === 'page');
        return t.length >= 2 ? { all, t } : undefined;
      });
      expect(events.t.map((e) => [e.fields.location, e.fields.action, e.fields.result.split(':')[0]])).toEqual([
        ['page 0x55aa1000 SOCKET:1 CHANNEL:0 DIMM:? []', 'soft-offline', 'ok'],
        ['page 0x66bb2000 SOCKET:1 CHANNEL:0 DIMM:? []', 'soft-offline', 'failed'],
      ]);
      expect(events.t[1].fields.result).toMatch(
        /^failed: \S+soft_offline_page: soft offline of page 0x66bb2000 refused: EISDIR$/,
      );
      expect(events.t[0].fields).toMatchObject({ count: 2, cpu: 2, bank: 13, threshold: expect.stringMatching(/2/) });
      // Crossings come right after the machine check that caused them (here the DIMM's "2 / 24h" crossed again too).
      const at = events.all.indexOf(events.t[0]);
      let cause = at - 1;
      while (events.all[cause].event === 'evtrace:mce_threshold') cause--;
      for (const e of events.all) expectValid('@evtrace/trace-format/schemas/event.json', e);
      // mce_record's print fmt shows addr with %016Lx: an address in JSON.
      expect(events.all[cause]).toMatchObject({ event: 'mce:mce_record', fields: { addr: '0x55aa1040' } });
      expect(events.all.slice(cause + 1, at).map((e: { fields: { kind: string } }) => e.fields.kind)).toEqual([
        'dimm-ce',
      ]);
      expect(events.all[cause + 1].fields).toMatchObject({ action: 'trigger', result: 'started' });
      // trace-cmd reads the event through its format file (CI installs trace-cmd; the event is ours, not the kernel's).
      const report = execFileSync('trace-cmd', ['report', shots.at(-1)!], { maxBuffer: 1 << 26 }).toString();
      expect(report).toMatch(
        /mce_threshold: +page page 0x55aa1000 SOCKET:1 CHANNEL:0 DIMM:\? \[\]: Corrected memory errors on page 55aa1000 exceed threshold 2 in 1d, count 2, threshold 2 in 1d, cpu 2 bank 13 addr 55aa1000, action soft-offline: ok/,
      );
    });

    it('leaves the instance it read as it found it when the agent stops', async () => {
      expect(await agent.stop()).toBe(0);
      expect(readFileSync(join(root, 'instances', 'hw', 'events', 'mce', 'mce_record', 'enable'), 'utf8')).toBe('0');
      expect(existsSync(join(root, 'instances', 'hw'))).toBe(true);
    });
  },
);

describe("node_exporter's node_edac_* names", () => {
  const names = (options: { nodeEdacMetrics?: boolean }) => {
    const dir = workDir('agent-hardware-names-');
    try {
      edacTree(join(dir, 'edac'));
      const hardware = new Hardware({ edacSysfs: join(dir, 'edac'), log: () => {}, ...options });
      return hardware.metrics().map((m) => m.name);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it('are left to node_exporter unless asked for: the per-DIMM counters stay', () => {
    const plain = names({});
    expect(plain.filter((n) => n.startsWith('node_'))).toEqual([]);
    expect(plain).toContain('evtrace_edac_dimm_correctable_errors_total');
  });

  it('are exported with --node-edac-metrics', () => {
    expect(names({ nodeEdacMetrics: true })).toEqual(
      expect.arrayContaining(['node_edac_correctable_errors_total', 'node_edac_csrow_uncorrectable_errors_total']),
    );
  });
});

describe('evtrace agent with a [hardware] table in its config file (a flag given wins over its key)', () => {
  let dir: string;
  let agent: RunningAgent;
  let pipe: string;
  let memory: string;

  beforeAll(async () => {
    dir = workDir('agent-hardware-config-');
    const root = join(dir, 'tracefs');
    pipe = tracefsTree(root);
    memory = join(dir, 'memory');
    put(join(memory, 'soft_offline_page'), '');
    writeFileSync(join(dir, 'mcelog.conf'), '[page]\nmemory-ce-threshold = 2 / 24h\nmemory-ce-action = soft\n');
    // Paths relative to the config file; page_offline = "soft" is overridden by --page-offline account.
    writeFileSync(
      join(dir, 'agent.toml'),
      '[hardware]\nenabled = true\nmce_instance = "hw"\nmcelog = "no-mcelog"\nedac_sysfs = "no-edac"\n' +
        'mcelog_config = "mcelog.conf"\npage_offline = "soft"\nmemory_sysfs = "memory"\n',
    );
    agent = await startAgent(dir, [
      '--config',
      join(dir, 'agent.toml'),
      '--tracefs',
      root,
      '--page-offline',
      'account',
    ]);
  }, 60_000);

  afterAll(async () => {
    if (agent?.proc.exitCode === null) await agent.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs the hardware session from the file alone, with the flag overriding page_offline', async () => {
    const line = await agent.waitForLog(/hardware: session hardware created and started;[^\n]*/);
    expect(line).toContain('reading tracefs mce:mce_record');
    expect(line).toContain(`${join(dir, 'no-mcelog')}: not read`);
    const page = 0x77cc3000n;
    const on = (i: number) => correctedAt(page + BigInt(i) * 0x40n, 1, 7);
    appendPages(pipe, [
      { event: 'mce_record', fields: on(0) },
      { event: 'mce_record', fields: on(1) },
    ]);
    await agent.waitForLog(/hardware: Corrected memory errors on page 77cc3000 exceed threshold/);
    // account: counted, never offlined (the file would have said soft).
    expect(agent.log()).not.toMatch(/offlined/);
    expect(readFileSync(join(memory, 'soft_offline_page'), 'utf8')).toBe('\n');
    const checked = await cli(agent, ['agent', '--config', join(dir, 'agent.toml'), '--check-config']);
    expect(checked.code).toBe(0);
    expect(checked.stdout).toContain(
      `hardware: enabled; edac_sysfs ${join(dir, 'no-edac')}; mcelog ${join(dir, 'no-mcelog')}; mce_instance hw; mcelog_config ${join(dir, 'mcelog.conf')}; page_offline soft; memory_sysfs ${memory}`,
    );
  });
});
