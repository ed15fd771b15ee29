/**
 * Damage keeps what came before it, whatever reads the input: `cat` and `convert` to every format take the whole
 * pages before a cut with --lenient and name the cut (file and byte offset), and fail naming it without (the built
 * CLI in a child process).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openTraceDat } from '@evtrace/trace-format';
import { beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { sampleInputs } from '../testing/sample-traces.ts';

const CLI = new URL('../../dist/cli.js', import.meta.url).pathname;

function evtrace(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { maxBuffer: 1 << 26 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe.skipIf(!existsSync(CLI))(
  `a trace.dat cut in CPU 1's data (built CLI${existsSync(CLI) ? '' : ': skipped, not built'})`,
  { timeout: 60_000 },
  () => {
    const { dat } = sampleInputs();
    const dir = mkdtempSync(join(tmpdir(), 'evtrace-damage-'));
    const cuts: Record<string, string> = {};
    let cpu0: string[] = [];

    beforeAll(async () => {
      const v6 = join(dir, 'v6.dat');
      expect((await evtrace('convert', dat, '-o', v6, '--to', 'tracedat', '--file-version', '6')).code).toBe(0);
      for (const [name, file] of [
        ['v6', v6],
        ['v7', dat],
      ]) {
        const cpu1 = openTraceDat(file!).info.buffers[0]!.cpus.find((c) => c.cpu === 1)!;
        cuts[name!] = join(dir, `${name}-cut.dat`);
        writeFileSync(cuts[name!]!, readFileSync(file!).subarray(0, cpu1.offset + 10));
      }
      const whole = await evtrace('cat', dat);
      cpu0 = whole.stdout.split('\n').filter((l) => / \[000\] /.test(l));
      expect(cpu0.length).toBeGreaterThan(0);
    });

    for (const version of ['v6', 'v7']) {
      it(`${version}: cat fails naming the cut; cat --lenient prints CPU 0's whole pages and warns naming it`, async () => {
        const cut = cuts[version]!;
        const strict = await evtrace('cat', cut);
        expect(strict.code).toBe(ExitCode.Failure);
        expect(strict.stderr).toMatch(new RegExp(`evtrace: ERR_TRACE_DAT: ${cut}: byte \\d+: `));
        const lenient = await evtrace('cat', '--lenient', cut);
        expect(lenient.code).toBe(ExitCode.Ok);
        expect(lenient.stdout.split('\n').filter((l) => / \[\d{3}\] /.test(l))).toEqual(cpu0);
        expect(lenient.stderr).toMatch(new RegExp(`evtrace: warning: ${cut}: byte \\d+: `));
      });

      it(`${version}: convert --lenient to every format keeps the same events`, async () => {
        const cut = cuts[version]!;
        for (const to of ['jsonl', 'text', 'perfetto', 'ctf']) {
          const r = await evtrace('convert', '--lenient', cut, '-o', join(dir, `${version}.${to}`), '--to', to);
          expect(r.code, to).toBe(ExitCode.Ok);
          expect(r.stderr, to).toContain(`${cpu0.length} events written`);
        }
        const copy = join(dir, `${version}-copy.dat`);
        expect((await evtrace('convert', '--lenient', cut, '-o', copy, '--to', 'tracedat')).code).toBe(ExitCode.Ok);
        const again = await evtrace('cat', copy);
        expect(again.stdout.split('\n').filter((l) => / \[\d{3}\] /.test(l))).toEqual(cpu0);
        const jsonl = readFileSync(join(dir, `${version}.jsonl`), 'utf8')
          .trimEnd()
          .split('\n');
        expect(jsonl.map((l) => JSON.parse(l).cpu)).toEqual(cpu0.map(() => 0));
      });
    }
  },
);
