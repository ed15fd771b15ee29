/**
 * Metrics. The EDAC names are judged against node_exporter itself (Debian's prometheus-node-exporter, its edac
 * collector over a sysfs tree built in a temporary directory: this VM has no EDAC driver).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cpuidOf } from './cpu.ts';
import { decodeMce } from './decode.ts';
import { edacMetrics, exposition, MceCounters } from './metrics.ts';
import { emptyRecord } from './record.ts';
import { edacTree } from './testing/edac-tree.ts';

const dir = mkdtempSync(join(tmpdir(), 'hw-mce-metrics-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill();
  rmSync(dir, { recursive: true, force: true });
});

function nodeExporter(): string | undefined {
  for (const bin of ['prometheus-node-exporter', 'node_exporter']) {
    try {
      execFileSync('sh', ['-c', `command -v ${bin}`]);
      return bin;
    } catch {}
  }
  return undefined;
}
const exporter = nodeExporter();

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** `name{labels} value` lines of the node_edac_* families, sorted, label order normalised. */
function edacLines(text: string): string[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('node_edac_'))
    .map((l) => {
      const m = /^(\w+)\{([^}]*)\} (\S+)$/.exec(l);
      if (!m) return l;
      const labels = m[2]!.split(',').sort().join(',');
      return `${m[1]}{${labels}} ${Number(m[3])}`;
    })
    .sort();
}

describe.skipIf(exporter === undefined)(
  `node_edac_* as node_exporter exports them${exporter ? '' : ' (skipped: prometheus-node-exporter is not installed (apt-get install prometheus-node-exporter))'}`,
  () => {
    it('gives the same families, labels and values for both EDAC layouts', async () => {
      const sysfs = join(dir, 'sys');
      edacTree(join(sysfs, 'devices', 'system', 'edac'));
      const port = await freePort();
      const child = spawn(
        exporter!,
        [
          `--path.sysfs=${sysfs}`,
          '--collector.disable-defaults',
          '--collector.edac',
          `--web.listen-address=127.0.0.1:${port}`,
        ],
        {
          stdio: 'ignore',
        },
      );
      children.push(child);
      let theirs = '';
      for (let i = 0; i < 100 && theirs === ''; i++) {
        try {
          theirs = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        } catch {
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      child.kill();
      const ours = exposition(edacMetrics({ sysfs: join(sysfs, 'devices', 'system', 'edac') }));
      expect(edacLines(theirs).length).toBeGreaterThan(4);
      expect(edacLines(ours)).toEqual(edacLines(theirs));
      expect(ours).toContain(
        'evtrace_edac_dimm_correctable_errors_total{controller="0",dimm="dimm0",label="CPU_SrcID#0_MC#0_Chan#0_DIMM#0",location="channel 0 slot 0"} 5',
      );
      expect(ours).toContain(
        'evtrace_edac_dimm_correctable_errors_total{controller="1",dimm="csrow0/ch0",label="DIMM_A1",location="csrow 0 channel 0"} 2',
      );
    }, 30_000);
  },
);

describe('machine-check counters', () => {
  it('counts records per socket/bank/severity/class and per DIMM', () => {
    const c = new MceCounters();
    const rec = (bank: number, status: bigint, misc: bigint) =>
      decodeMce(
        Object.assign(emptyRecord({ kind: 'struct-mce' }), {
          bank,
          status,
          misc,
          socketid: 1,
          cpuvendor: 0,
          cpuid: cpuidOf(6, 0x1a),
        }),
      );
    c.observe(rec(8, 0x8800000000000091n, (2n << 18n) | (1n << 16n)));
    c.observe(rec(8, 0x8800000000000091n, (2n << 18n) | (1n << 16n)));
    c.observe(rec(1, 0x9000000000000150n, 0n));
    const text = exposition(c.metrics());
    expect(text).toContain(
      'evtrace_mce_errors_total{socket="1",bank="8",severity="corrected",class="memory-controller"} 2',
    );
    expect(text).toContain('evtrace_mce_errors_total{socket="1",bank="1",severity="corrected",class="cache"} 1');
    expect(text).toContain('evtrace_mce_dimm_errors_total{socket="1",channel="2",dimm="1",severity="corrected"} 2');
  });
});
