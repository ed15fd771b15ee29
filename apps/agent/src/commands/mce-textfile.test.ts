/**
 * `evtrace mce track --textfile DIR` read by node_exporter's textfile collector, scraped by Prometheus: the counts
 * arrive under their names and node_exporter reports no error reading the file.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { runCli } from '../program.ts';
import {
  type NodeExporter,
  nodeExporterMissing,
  type Prometheus,
  prometheusMissing,
  startNodeExporter,
  startPrometheus,
} from '../testing/prometheus.ts';
import { TEXTFILE_NAME } from './mce.ts';

const missing = prometheusMissing() ?? nodeExporterMissing();

async function run(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

/** A corrected memory error on socket 1, bank 8 (a Nehalem-EP memory controller), in mcelog's input format. */
const RECORD = 'CPU 0 BANK 8\nPROCESSOR 0:0x106a0\nSOCKETID 1\nSTATUS 0x8800000000000091\nMISC 0x90000\n\n';

describe.skipIf(missing !== undefined)(
  `evtrace mce track --textfile, read by node_exporter and scraped by Prometheus${missing ? ` (${missing})` : ''}`,
  () => {
    let dir: string;
    let textfiles: string;
    let exporter: NodeExporter;
    let prometheus: Prometheus;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'mce-textfile-'));
      textfiles = join(dir, 'textfiles');
      writeFileSync(join(dir, 'mcelog.conf'), '[dimm]\ndimm-tracking-enabled = yes\nce-error-threshold = 2 / 1h\n');
      mkdirSync(textfiles);
      exporter = await startNodeExporter(textfiles);
      prometheus = await startPrometheus([exporter.address]);
    }, 60_000);

    afterAll(async () => {
      await prometheus?.stop();
      await exporter?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('writes the counts where the collector reads them, replaced whole at each run', async () => {
      writeFileSync(join(dir, 'in.txt'), RECORD.repeat(5));
      const r = await run('mce', 'track', '-c', join(dir, 'mcelog.conf'), '--textfile', textfiles, join(dir, 'in.txt'));
      expect([r.code, r.stderr]).toEqual([ExitCode.Ok, '']);
      // Only the .prom file is left: the temporary one was renamed over it.
      expect(readdirSync(textfiles)).toEqual([TEXTFILE_NAME]);
      expect(readFileSync(join(textfiles, TEXTFILE_NAME), 'utf8')).toContain('# TYPE evtrace_mce_errors_total counter');

      const errors = await prometheus.waitFor('evtrace_mce_errors_total', (s) => s.length > 0);
      expect(errors.map((s) => [s.metric.socket, s.metric.bank, s.metric.severity, s.value])).toEqual([
        ['1', '8', 'corrected', 5],
      ]);
      const dimms = await prometheus.query('evtrace_mce_dimm_errors_total');
      expect(dimms.map((s) => s.value)).toEqual([5]);
      // Five errors on one DIMM, capacity 2: the bucket overflows at the 2nd and the 4th.
      const crossed = await prometheus.query('evtrace_mce_track_threshold_crossings_total');
      expect(crossed.map((s) => [s.metric.kind, s.value])).toEqual([['dimm-ce', 2]]);
      expect((await prometheus.query('node_textfile_scrape_error'))[0]?.value).toBe(0);

      // A second run replaces the counts.
      writeFileSync(join(dir, 'in.txt'), RECORD.repeat(7));
      const again = await run(
        'mce',
        'track',
        '-c',
        join(dir, 'mcelog.conf'),
        '--textfile',
        textfiles,
        join(dir, 'in.txt'),
      );
      expect(again.code).toBe(ExitCode.Ok);
      await prometheus.waitFor('evtrace_mce_errors_total', (s) => s[0]?.value === 7);
      expect(readdirSync(textfiles)).toEqual([TEXTFILE_NAME]);
    });

    it('refuses a directory that is not there, naming it', async () => {
      writeFileSync(join(dir, 'in.txt'), RECORD);
      const absent = join(dir, 'absent');
      const r = await run('mce', 'track', '-c', join(dir, 'mcelog.conf'), '--textfile', absent, join(dir, 'in.txt'));
      expect(r.code).toBe(ExitCode.Usage);
      expect(r.stderr).toContain(`--textfile: ${absent} is not a directory`);
    });
  },
);
