import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeProbe, probeBts, probeLbr } from './perf-event.ts';
import { hasTool } from './testing/programs.ts';

describe('asking the kernel through perf_event_open', () => {
  it('intel_bts: opens where sysfs has the PMU, and where it has none says so without asking', () => {
    const p = probeBts();
    if (existsSync('/sys/bus/event_source/devices/intel_bts')) expect(p.errno ?? 'ok').not.toBe('ENOENT');
    else {
      expect(p.ok).toBe(false);
      expect(p.why).toMatch(/no intel_bts PMU type: .*intel_bts\/type: ENOENT/);
    }
  });

  it.skipIf(!hasTool('perf'))('LBR branch stacks: the kernel answers as it answers perf record -b', () => {
    const p = probeLbr();
    expect(p.why).toBeUndefined();
    const out = join(mkdtempSync(join(tmpdir(), 'hw-bts-lbr-')), 'lbr.data');
    const perf = spawnSync('perf', ['record', '-q', '-b', '-e', 'cycles', '-o', out, '--', 'true'], {
      encoding: 'utf8',
    });
    // perf falls back from cycles to cpu-clock when there is no hardware cycles event; both then refuse branch stacks.
    const perfRefused = /doesn't support branch stack sampling|not supported|No such device/i.test(perf.stderr);
    expect(p.ok).toBe(!perfRefused);
    if (!p.ok) {
      expect(['ENOENT', 'EOPNOTSUPP', 'ENODEV', 'EINVAL']).toContain(p.errno);
      expect(describeProbe(p)).toMatch(
        /^perf_event_open\(cycles sampling branch stacks, user space\): the kernel says E/,
      );
    }
  });
});
