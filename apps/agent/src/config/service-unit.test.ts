import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const UNIT = new URL('../../systemd/evtrace-agent.service', import.meta.url).pathname;
const text = readFileSync(UNIT, 'utf8');

/** The unit's `[Section]` key=value pairs (repeated keys kept in order), comments left out. */
function parseUnit(unit: string): Map<string, [string, string][]> {
  const sections = new Map<string, [string, string][]>();
  let current: [string, string][] | undefined;
  for (const [i, line] of unit.split('\n').entries()) {
    if (line.trim() === '' || /^[#;]/.test(line)) continue;
    const header = /^\[(\w+)\]$/.exec(line);
    if (header !== null) {
      current = [];
      sections.set(header[1]!, current);
      continue;
    }
    const m = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (m === null || current === undefined) throw new Error(`${UNIT}:${i + 1}: not a unit line: ${line}`);
    current.push([m[1]!, m[2]!]);
  }
  return sections;
}

describe('the systemd unit', () => {
  const unit = parseUnit(text);
  const service = new Map(unit.get('Service'));

  it('runs `evtrace agent` in the foreground, telling systemd when it is ready and feeding its watchdog', () => {
    expect([...unit.keys()]).toEqual(['Unit', 'Service', 'Install']);
    expect(service.get('ExecStart')).toMatch(/\/evtrace agent$/);
    expect(service.get('ExecStartPre')).toMatch(/\/evtrace agent --check-config$/);
    // /etc/evtrace/agent.toml is the agent's default configuration file: nothing needs to name it.
    expect(service.has('Environment')).toBe(false);
    expect(service.get('Type')).toBe('notify');
    expect(service.get('WatchdogSec')).toMatch(/^\d+s$/);
    expect(service.get('RuntimeDirectory')).toBe('evtrace');
    expect(new Map(unit.get('Install')).get('WantedBy')).toBe('multi-user.target');
  });

  it('keeps /sys/kernel/tracing writable (ProtectKernelTunables would make /sys read-only)', () => {
    expect(service.has('ProtectKernelTunables')).toBe(false);
    expect(service.get('User')).toBe('root');
  });

  const analyze = spawnSync('systemd-analyze', ['--version'], { stdio: 'ignore' });
  const missing = analyze.error !== undefined || analyze.status !== 0;
  const work = mkdtempSync(join(tmpdir(), 'evtrace-unit-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it.skipIf(missing)(
    `passes systemd-analyze verify without a warning${missing ? ' (skipped: systemd-analyze is not installed (apt-get install systemd))' : ''}`,
    () => {
      // verify checks that the command exists: point it at a stand-in where the unit expects the installed CLI.
      const bin = join(work, 'evtrace');
      writeFileSync(bin, '#!/bin/sh\nexit 0\n');
      chmodSync(bin, 0o755);
      const copy = join(work, 'evtrace-agent.service');
      writeFileSync(copy, text.replaceAll('/usr/local/bin/evtrace', bin));
      // --man=no: the unit's Documentation= names evtrace-agent(1), which the .deb installs and this host may lack.
      const r = spawnSync('systemd-analyze', ['verify', '--man=no', copy], { encoding: 'utf8' });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      // And it does complain about a mistake, so the silence above means something.
      writeFileSync(
        copy,
        text.replaceAll('/usr/local/bin/evtrace', bin).replace('UMask=0027', 'UMask=0027\nProtectKernelTunable=yes'),
      );
      const bad = spawnSync('systemd-analyze', ['verify', '--man=no', copy], { encoding: 'utf8' });
      expect(bad.stderr).toContain("Unknown key 'ProtectKernelTunable'");
    },
  );
});
