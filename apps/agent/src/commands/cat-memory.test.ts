/**
 * `cat` of a trace.dat larger than what it may hold, through the built CLI: the reader takes the file's bytes as it
 * goes (a few MiB of a CPU's pages at a time), so its peak memory (the child's own getrusage maximum) does not grow
 * with the file. Versions 6 and 7 uncompressed, and 7 in zstd chunks: a small file, whose chunks decompress to more
 * than 200 MiB, one reused buffer at a time.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openTraceDat, writeTraceDatPages } from '@evtrace/trace-format';
import { afterAll, describe, expect, it } from 'vitest';
import { PEAK_HOOK, peakRss } from '../testing/peak-rss.ts';
import { sampleInputs } from '../testing/sample-traces.ts';

const CLI = new URL('../../dist/cli.js', import.meta.url).pathname;
const MIB = 1024 * 1024;
/** Empty pages between CPU 0's events and the same events again, later. */
const PADDING = 200 * MIB;
/** The most `cat` may hold, Node and its modules included: less than the file alone would take held whole. */
const BOUND = 120 * MIB;
/** How far the second copy of CPU 0's pages is moved in time. */
const SHIFT = 1_000_000_000n;

const dir = mkdtempSync(join(tmpdir(), 'evtrace-cat-memory-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function evtrace(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', PEAK_HOOK, CLI, ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    maxBuffer: 1 << 26,
  });
  return { code: r.status, stdout: r.stdout, ...peakRss(r.stderr) };
}

/** `pages` with each non-empty page's time stamp moved by {@link SHIFT} (its events' times are relative to it). */
function shifted(pages: Buffer, pageSize: number): Buffer {
  const out = Buffer.from(pages);
  for (let at = 0; at < out.length; at += pageSize) {
    if (out.readBigUInt64LE(at + 8) !== 0n) out.writeBigUInt64LE(out.readBigUInt64LE(at) + SHIFT, at);
  }
  return out;
}

/**
 * The sample recording with CPU 0's pages followed by {@link PADDING} of empty pages and those pages again, moved
 * later: a file of more than 200 MiB whose events are the sample's and CPU 0's once more.
 */
function bigTraceDat(sample: string, version: 6 | 7, compression: 'none' | 'zstd'): string {
  const copy = openTraceDat(sample).pagesInput();
  if (!('input' in copy)) throw new Error(copy.reason);
  const { input } = copy;
  const cpu0 = Buffer.concat([...input.cpus[0]!.chunks()]);
  const later = shifted(cpu0, input.pageSize);
  const empty = Buffer.alloc(MIB);
  const padded = {
    size: cpu0.length + PADDING + later.length,
    *chunks() {
      yield cpu0;
      for (let n = 0; n < PADDING / MIB; n++) yield empty;
      yield later;
    },
  };
  const file = join(dir, `big-v${version}-${compression}.dat`);
  writeTraceDatPages(file, { ...input, cpus: [padded, ...input.cpus.slice(1)] }, { version, compression });
  return file;
}

describe.skipIf(!existsSync(CLI))(
  `cat of a trace.dat larger than its memory bound${existsSync(CLI) ? '' : ` (skipped: ${CLI} is not built)`}`,
  { timeout: 120_000 },
  () => {
    const { dat } = sampleInputs();
    const sample = evtrace('cat', dat);
    const lines = (text: string) => text.split('\n').filter((l) => l !== '');
    const cpu0Lines = lines(sample.stdout).filter((l) => /\[000\]/.test(l));

    for (const [version, compression] of [
      [6, 'none'],
      [7, 'none'],
      [7, 'zstd'],
    ] as const) {
      it(`reads a version ${version} file (${compression}) of more than 200 MiB of pages in bounded memory, every event kept`, () => {
        expect(sample.code, sample.stderr).toBe(0);
        expect(cpu0Lines.length).toBeGreaterThan(0);
        const file = bigTraceDat(dat, version, compression);
        if (compression === 'none') expect(statSync(file).size).toBeGreaterThan(PADDING);
        const r = evtrace('cat', file);
        expect(r.code, r.stderr).toBe(0);
        // The sample's events, then CPU 0's again: the pages after the padding were read too.
        expect(r.stdout.startsWith(sample.stdout)).toBe(true);
        expect(lines(r.stdout)).toHaveLength(lines(sample.stdout).length + cpu0Lines.length);
        expect(r.peakBytes).toBeLessThan(BOUND);
        rmSync(file);
      });
    }
  },
);
