/**
 * convert --to tracedat through the built CLI on inputs larger than what it may hold: a CTF trace written as trace.dat
 * as it is read, a version 7 trace.dat copied as it is. Each is judged by its peak memory (the child's own getrusage
 * maximum) and by what trace-cmd report and babeltrace2 print.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  HEADER_EVENT_TEXT,
  headerPageText,
  kernelPageLayout,
  openTraceDat,
  writeTraceDatPages,
} from '@evtrace/trace-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PEAK_HOOK, peakRss } from '../testing/peak-rss.ts';
import { writeU64Ctf } from '../testing/u64-ctf.ts';

const CLI = new URL('../../dist/cli.js', import.meta.url).pathname;
const MIB = 1024 * 1024;
/**
 * The most a conversion may hold, Node and its modules included: far less than the inputs below would take held
 * whole (every CTF event's record and objects, a trace.dat's every byte).
 */
const BOUND = 150 * MIB;

const dir = mkdtempSync(join(tmpdir(), 'evtrace-convert-dat-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const hasTool = (name: string) => spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;

/** `length` bytes of `file` at `at`. */
function bytesAt(file: string, at: number, length: number): Buffer {
  const fd = openSync(file, 'r');
  try {
    const b = Buffer.alloc(length);
    readSync(fd, b, 0, length, at);
    return b;
  } finally {
    closeSync(fd);
  }
}

/** Runs the built CLI; its stderr without the peak line, and its peak resident set. */
function evtrace(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', PEAK_HOOK, CLI, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, ...peakRss(r.stderr) };
}

describe.skipIf(!existsSync(CLI))(
  `convert --to tracedat in bounded memory${existsSync(CLI) ? '' : ` (skipped: ${CLI} is not built)`}`,
  () => {
    const events = 600_000;
    const ctf = join(dir, 'big.ctf');
    beforeAll(() => writeU64Ctf(ctf, events));

    it('writes a CTF trace of 600 000 events as it reads it, holding a few pages, not the trace', () => {
      const out = join(dir, 'big.dat');
      const r = evtrace('convert', ctf, '--to', 'tracedat', '-o', out);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe(`evtrace: ${events} events written to ${out} (tracedat)\n`);
      expect(r.peakBytes).toBeLessThan(BOUND);
      const cpus = openTraceDat(out).info.buffers[0]!.cpus;
      // Many chunks of pages, not a few.
      expect(cpus[0]!.size).toBeGreaterThan(100_000);
      // The temporary file of the pages is gone.
      expect(readdirSync(dir).filter((f) => f.endsWith('.pages'))).toEqual([]);
    });

    it('copies a 200 MiB version 7 trace.dat holding a block at a time, not the file', () => {
      const input = join(dir, 'big-v7.dat');
      const pageSize = 4096;
      // Empty pages (a timestamp, no commit): what is copied is bytes, whatever they hold.
      const block = Buffer.alloc(MIB);
      for (let at = 0; at < block.length; at += pageSize) block.writeBigUInt64LE(1_000_000n, at);
      const cpu = {
        size: 100 * MIB,
        *chunks() {
          for (let n = 0; n < 100; n++) yield block;
        },
      };
      writeTraceDatPages(
        input,
        {
          pageSize,
          headerPage: headerPageText(kernelPageLayout(pageSize)),
          headerEvent: HEADER_EVENT_TEXT,
          formats: [],
          cpus: [cpu, cpu],
        },
        { version: 7, compression: 'none' },
      );
      const out = join(dir, 'big-v7-copy.dat');
      const r = evtrace('convert', input, '--to', 'tracedat', '--compression', 'none', '-o', out);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/^evtrace: pages of 2 CPUs copied to .*big-v7-copy\.dat \(tracedat v7, \d+ bytes\)\n$/);
      expect(r.peakBytes).toBeLessThan(BOUND);
      const cpus = (f: string) => openTraceDat(f).info.buffers[0]!.cpus;
      expect(cpus(out).map((c) => c.size)).toEqual([100 * MIB, 100 * MIB]);
      // The last pages of the last CPU, where they now lie.
      const [a, b] = [cpus(input)[1]!, cpus(out)[1]!];
      expect(bytesAt(out, b.offset + b.size - MIB, MIB)).toEqual(bytesAt(input, a.offset + a.size - MIB, MIB));
    });
  },
);

const judges = !existsSync(CLI)
  ? `${CLI} is not built`
  : !hasTool('trace-cmd')
    ? 'trace-cmd is not installed (apt-get install trace-cmd)'
    : !hasTool('babeltrace2')
      ? 'babeltrace2 is not installed (apt-get install babeltrace2)'
      : '';

describe.skipIf(judges !== '')(
  `convert CTF --to tracedat, judged by trace-cmd and babeltrace2${judges ? ` (skipped: ${judges})` : ''}`,
  () => {
    it('writes a file trace-cmd report prints with the times, CPUs and values babeltrace2 reads in the CTF', () => {
      const ctf = join(dir, 'judged.ctf');
      writeU64Ctf(ctf, 30_000);
      // zlib is left out: the trace-cmd here reads zstd only (trace-cmd list -c).
      for (const extra of [[], ['--compression', 'none'], ['--file-version', '6']]) {
        const out = join(dir, `judged${extra.join('')}.dat`);
        const r = evtrace('convert', ctf, '--to', 'tracedat', '-o', out, ...extra);
        expect(r.code, r.stderr).toBe(0);
        const theirs = execFileSync('babeltrace2', ['--clock-seconds', ctf], { encoding: 'utf8', maxBuffer: 1 << 28 })
          .trimEnd()
          .split('\n')
          .map((line) => {
            const m = /^\[(\d+\.\d{9})\] \(\S+\) one_u64: \{ cpu_id = (\d+) \}, \{ value = (\d+) \}$/.exec(line);
            if (m === null) throw new Error(`babeltrace2 printed ${line}`);
            return `${m[1]} ${m[2]} ${m[3]}`;
          });
        const ours = execFileSync('trace-cmd', ['report', '-t', out], { encoding: 'utf8', maxBuffer: 1 << 28 })
          .trimEnd()
          .split('\n')
          .slice(1)
          .map((line) => {
            const m = /\[(\d{3})\] (\d+\.\d{9}): one_u64: +value=(\d+)$/.exec(line);
            if (m === null) throw new Error(`trace-cmd report printed ${line}`);
            return `${m[2]} ${Number(m[1])} ${m[3]}`;
          });
        expect(theirs.length).toBe(30_000);
        expect(ours).toEqual(theirs);
      }
    });
  },
);
