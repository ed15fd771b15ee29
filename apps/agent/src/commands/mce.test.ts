import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { runCli } from '../program.ts';
import { expectValid } from '../testing/schemas.ts';

const CASES = new URL('../../../../../shared/fixtures/mce-mcelog-cases/', import.meta.url).pathname;
if (!existsSync(CASES)) throw new Error(`shared fixture missing: ${CASES}`);

async function run(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

describe('evtrace mce decode', () => {
  it('--json prints one object per record with the keys of the issue', async () => {
    const r = await run('mce', 'decode', '--json', join(CASES, 'm-dmr_dcu_srar.inp'));
    expect([r.code, r.stderr]).toEqual([ExitCode.Ok, '']);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines.length).toBe(1);
    const o = JSON.parse(lines[0]!);
    expectValid('@evtrace/hw-mce/schemas/record.json', o);
    expect(o).toMatchObject({
      cpu: 0,
      bank: 1,
      status: '0xbd80000010100134',
      addr: '0x0',
      misc: '0x0',
      mcgstatus: '0x0',
      severity: 'srar',
      class: 'cache',
    });
    expect(o.summary).toMatch(/recovery action required.*Data CACHE Level-0 Data-Read Error/);
  });

  it('journalctl -o json of an AMD Zen UMC error: a memory error with channel, chip select and DIMM advice', async () => {
    // What `journalctl -k -o json` prints for the kernel's report of a corrected DRAM ECC error (two entries shown).
    const entries = [
      'mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 16: 9c2040000000011b',
      'mce: [Hardware Error]: TSC 0 ADDR 1f4a3c000 MISC d01a000000000000 SYND 5d0006201f IPID 9600150f00 ',
      'mce: [Hardware Error]: PROCESSOR 2:a00f11 TIME 1763781200 SOCKET 1 APIC 6 microcode a0011d1',
    ].map((MESSAGE, i) =>
      JSON.stringify({
        __CURSOR: `s=1;i=${i}`,
        __REALTIME_TIMESTAMP: '1763781200000000',
        _TRANSPORT: 'kernel',
        MESSAGE,
      }),
    );
    const dir = mkdtempSync(join(tmpdir(), 'evtrace-mce-'));
    try {
      const file = join(dir, 'kernel.json');
      writeFileSync(file, `${entries.join('\n')}\n`);
      for (const args of [[file], ['--input-format', 'journal-json', file]]) {
        const r = await run('mce', 'decode', '--json', ...args);
        expect([r.code, r.stderr]).toEqual([ExitCode.Ok, '']);
        const o = JSON.parse(r.stdout);
        expect([o.class, o.socket, o.channel, o.unit, o.source.kind, o.source.line]).toEqual([
          'memory-controller',
          1,
          1,
          'Unified Memory Controller',
          'journal-json',
          1,
        ]);
        expect(o.summary).toMatch(
          /^corrected memory error: DRAM ECC error \(socket 1, Unified Memory Controller, channel 1, chip select 7/,
        );
        expect(o.advice).toMatch(/DIMM/);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('decodes every mcelog case with a summary, and addr null when ADDRV is clear', async () => {
    for (const f of readdirSync(CASES).filter((n) => n.endsWith('.inp'))) {
      const r = await run('mce', 'decode', '--json', join(CASES, f));
      expect(r.code).toBe(ExitCode.Ok);
      const o = JSON.parse(r.stdout);
      expectValid('@evtrace/hw-mce/schemas/record.json', o, f);
      expect(['corrected', 'ucna', 'srao', 'srar', 'fatal', 'deferred']).toContain(o.severity);
      expect(typeof o.summary).toBe('string');
      if (f === 'm-dimm0.inp') expect([o.addr, o.class, o.channel, o.dimm]).toEqual([null, 'memory-controller', 0, 0]);
    }
  });

  it('reads /dev/mcelog through the device ioctls, and says clearly when this host has none (this VM has not)', async () => {
    const r = await run('mce', 'decode', '/dev/null');
    expect(r.code).toBe(ExitCode.Failure);
    expect(r.stderr).toMatch(
      /ERR_MCE_SOURCE: \/dev\/null: ioctl MCE_GET_RECORD_LEN failed: ENOTTY \(not an mcelog device\)/,
    );
    if (!existsSync('/dev/mcelog')) {
      const absent = await run('mce', 'decode', '/dev/mcelog');
      expect(absent.code).toBe(ExitCode.Failure);
      expect(absent.stderr).toMatch(/\/dev\/mcelog: no mcelog device: this kernel has no CONFIG_X86_MCELOG_LEGACY/);
    }
  });

  it('prints operator text: what, where, how bad, what to do', async () => {
    const r = await run('mce', 'decode', join(CASES, 'm-dimm0.inp'));
    expect(r.code).toBe(ExitCode.Ok);
    expect(r.stdout).toMatch(
      /^CORRECTED: corrected memory error: MEMORY CONTROLLER GEN_CHANNEL0_ERR \(channel 0, DIMM 0, CPU 0 bank 2\)$/m,
    );
    for (const k of ['what:', 'where:', 'how bad:', 'do:']) expect(r.stdout).toContain(`  ${k}`);
  });

  it('--cpu decodes as another CPU; an unknown name is a usage error', async () => {
    const r = await run('mce', 'decode', '--json', '--cpu', 'skylake_server', join(CASES, 'm-bdw_mirror1.inp'));
    const o = JSON.parse(r.stdout);
    expect([o.cpu_type, o.unit]).toEqual(['skylake-server', 'M2M']);
    const bad = await run('mce', 'decode', '--cpu', 'pentium9', join(CASES, 'm-dimm0.inp'));
    expect(bad.code).toBe(ExitCode.Usage);
    expect(bad.stderr).toMatch(/unknown CPU type 'pentium9'/);
  });

  it('--input-format forces the kind; a wrong one is a usage error, an input without records fails', async () => {
    expect((await run('mce', 'decode', '--input-format', 'jpeg', join(CASES, 'm-dimm0.inp'))).code).toBe(
      ExitCode.Usage,
    );
    const none = await run('mce', 'decode', '--input-format', 'trace-text', join(CASES, 'm-dimm0.inp'));
    expect(none.code).toBe(ExitCode.Failure);
    expect(none.stderr).toMatch(/no machine-check record/);
    const missing = await run('mce', 'decode', '/nonexistent/file');
    expect(missing.code).toBe(ExitCode.Failure);
    expect(missing.stderr).toMatch(/ERR_MCE_INPUT: \/nonexistent\/file: cannot read: ENOENT/);
  });

  it("--json on an EDAC sysfs tree prints each controller's counters in the schema's form", async () => {
    const root = mkdtempSync(join(tmpdir(), 'mce-edac-'));
    const put = (path: string, text: string) => {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), `${text}\n`);
    };
    put('mc/mc0/mc_name', 'Skylake Socket#0 IMC#0');
    for (const [f, v] of [
      ['ce_count', 7],
      ['ue_count', 1],
      ['ce_noinfo_count', 0],
      ['ue_noinfo_count', 0],
    ] as const)
      put(`mc/mc0/${f}`, String(v));
    put('mc/mc0/dimm0/dimm_label', 'CPU_SrcID#0_MC#0_Chan#0_DIMM#0');
    put('mc/mc0/dimm0/dimm_location', 'channel 0 slot 0');
    put('mc/mc0/dimm0/dimm_ce_count', '5');
    put('mc/mc0/dimm0/dimm_ue_count', '1');
    const r = await run('mce', 'decode', '--json', root);
    expect([r.code, r.stderr]).toEqual([ExitCode.Ok, '']);
    const o = JSON.parse(r.stdout);
    expectValid('@evtrace/hw-mce/schemas/record.json', o);
    expect(o.edac_controller).toMatchObject({ mc: 0, ce: 7, ue: 1, dimms: [{ name: 'dimm0', ce: 5, ue: 1 }] });
    rmSync(root, { recursive: true, force: true });
  });

  it('reads stdin with - and reports bad lines on stderr with line and column', () => {
    const cli = new URL('../cli.ts', import.meta.url).pathname;
    const input = `${readFileSync(join(CASES, 'm-iomca.inp'), 'utf8')}\nnot mcelog at all\n`;
    const stdout = execFileSync(process.execPath, [cli, 'mce', 'decode', '--json', '-'], { input }).toString();
    expect(JSON.parse(stdout).mca.mnemonic).toBe('BUSLG_ERR_IO_NOTIMEOUT_ERR');
    const err = execFileSync('/bin/sh', ['-c', `"${process.execPath}" "${cli}" mce decode - 2>&1 >/dev/null`], {
      input,
    }).toString();
    expect(err).toBe('evtrace: <stdin>:6:1: not a machine-check line, ignored: not mcelog at all\n');
  });
});

describe('evtrace mce track', () => {
  it('reports threshold crossings with the semantics of an mcelog configuration', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'mce-track-'));
    const conf = join(dir, 'mcelog.conf');
    writeFileSync(
      conf,
      '[dimm]\ndimm-tracking-enabled = yes\nce-error-threshold = 2 / 1h\nce-error-trigger = /bin/true\n',
    );
    const input = join(dir, 'in.txt');
    const rec = 'CPU 0 BANK 8\nPROCESSOR 0:0x106a0\nSOCKETID 1\nSTATUS 0x8800000000000091\nMISC 0x90000\n\n';
    writeFileSync(input, rec.repeat(5));
    const r = await run('mce', 'track', '-c', conf, '--json', input);
    expect([r.code, r.stderr]).toEqual([ExitCode.Ok, '']);
    const events = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    for (const e of events) expectValid('@evtrace/hw-mce/schemas/track-event.json', e);
    // Five errors on one DIMM, capacity 2: the bucket overflows at the 2nd and the 4th.
    expect(events.map((e) => [e.kind, e.env.LOCATION, e.env.TOTALCOUNT])).toEqual([
      ['dimm-ce', 'SOCKET:1 CHANNEL:2 DIMM:1 []', '2'],
      ['dimm-ce', 'SOCKET:1 CHANNEL:2 DIMM:1 []', '4'],
    ]);
    writeFileSync(conf, '[page]\nmemory-ce-threshold = many\n');
    const bad = await run('mce', 'track', '-c', conf, input);
    expect(bad.code).toBe(ExitCode.Usage);
    expect(bad.stderr).toMatch(/mcelog\.conf:2: bad rate 'many'/);
  });
});
