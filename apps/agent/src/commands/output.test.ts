/**
 * What `convert` and `record` leave behind, seen as a user sees it (the built CLI in a child process): an output is
 * whole or absent, a failed run leaves an existing one as it was, a non-empty CTF directory is not written into,
 * outputs are private unless --share, and every output error names the path and the reason.
 */
import { type ChildProcess, execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openTraceDat } from '@evtrace/trace-format';
import { beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { sampleInputs } from '../testing/sample-traces.ts';

const CLI = new URL('../../dist/cli.js', import.meta.url).pathname;
const hasTool = (name: string) => spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;
const root = process.getuid?.() === 0;
/** The unprivileged user files are tried as (Debian's nobody). */
const NOBODY = 65534;

function evtrace(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { maxBuffer: 1 << 26 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const mode = (path: string) => statSync(path).mode & 0o777;

/** A directory every user may enter, so that only an output's own mode decides who reads it. */
function openDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-output-'));
  chmodSync(dir, 0o755);
  return dir;
}

/** Whether the unprivileged user can read `file`. */
const nobodyReads = (file: string) => spawnSync('cat', [file], { uid: NOBODY, gid: NOBODY }).status === 0;

describe.skipIf(!existsSync(CLI))(
  `evtrace convert outputs (built CLI${existsSync(CLI) ? '' : ': skipped, not built'})`,
  // Each test runs the CLI a few times over: seconds on a loaded machine.
  { timeout: 30_000 },
  () => {
    const { dat } = sampleInputs();
    const dir = openDir();
    /** A v6 copy of the sample with CPU 0's page's commit made to run past the page. */
    const corrupt = join(dir, 'corrupt.dat');
    let commitAt = 0;

    beforeAll(async () => {
      const v6 = join(dir, 'v6.dat');
      expect((await evtrace('convert', dat, '-o', v6, '--to', 'tracedat', '--file-version', '6')).code).toBe(0);
      const bytes = readFileSync(v6);
      const cpu0 = openTraceDat(v6).info.buffers[0]!.cpus.find((c) => c.cpu === 0 && c.size > 0)!;
      commitAt = cpu0.offset + 8;
      bytes.writeUInt32LE(0x00ffffff, commitAt);
      writeFileSync(corrupt, bytes);
    });

    it('a failed conversion leaves the existing output as it was, and nothing beside it', async () => {
      const out = join(dir, 'kept');
      mkdirSync(out);
      for (const to of ['jsonl', 'text', 'perfetto', 'tracedat']) {
        const target = join(out, `out.${to}`);
        writeFileSync(target, 'an earlier conversion\n');
        const r = await evtrace('convert', corrupt, '-o', target, '--to', to);
        expect(r.code, to).toBe(ExitCode.Failure);
        expect(r.stderr).toContain(
          `evtrace: ERR_TRACE_FTRACE_PAGE: ${corrupt}: byte ${commitAt}: commit says 16777215 bytes`,
        );
        expect(readFileSync(target, 'utf8')).toBe('an earlier conversion\n');
      }
      expect(readdirSync(out).sort()).toEqual(['out.jsonl', 'out.perfetto', 'out.text', 'out.tracedat']);
    });

    it('a trace.dat copy refuses a corrupt page, and with --lenient leaves it out, counts it and reads', async () => {
      const out = join(dir, 'lenient.dat');
      const r = await evtrace('convert', corrupt, '-o', out, '--to', 'tracedat', '--lenient');
      expect(r.code).toBe(0);
      expect(r.stderr).toContain(`${corrupt}: byte ${commitAt}: commit says 16777215 bytes`);
      expect(r.stderr).toContain('page left out of the copy');
      expect(r.stderr).toMatch(
        /pages of 1 CPUs copied to .*lenient\.dat \(tracedat v7, \d+ bytes; 1 corrupt pages left out\)/,
      );
      const cat = await evtrace('cat', out, '--json');
      expect(cat.code).toBe(0);
      expect(cat.stderr).toBe('');
      // Only CPU 1's events are left, all of them.
      const cpus = cat.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).cpu);
      const before = (await evtrace('cat', dat, '--json')).stdout.trim().split('\n');
      expect(cpus).toEqual(before.map((l) => JSON.parse(l).cpu).filter((c) => c === 1));
      if (hasTool('trace-cmd')) {
        const report = spawnSync('trace-cmd', ['report', out], { encoding: 'utf8' });
        expect(report.status).toBe(0);
        expect(report.stdout.match(/ (kmalloc|sched_process_exec): /g)?.length).toBe(cpus.length);
      }
    });

    it('names the path and the reason of every output error', async () => {
      const full = await evtrace('convert', dat, '-o', '/dev/full', '--to', 'jsonl');
      expect(full.code).toBe(ExitCode.Failure);
      expect(full.stderr).toBe('evtrace: ERR_TRACE_OUTPUT: cannot write /dev/full: ENOSPC (no space left on device)\n');
      const missing = join(dir, 'no-such-dir', 'out.dat');
      const r = await evtrace('convert', dat, '-o', missing, '--to', 'tracedat');
      expect(r.stderr).toBe(`evtrace: ERR_TRACE_OUTPUT: cannot write ${missing}: ENOENT (no such file or directory)\n`);
      const into = await evtrace('convert', dat, '-o', dir, '--to', 'jsonl');
      expect(into.stderr).toBe(`evtrace: ERR_TRACE_OUTPUT: cannot write ${dir}: EISDIR (is a directory)\n`);
      // A raw system error elsewhere in the CLI: the agent's socket directory is a file.
      const agent = await evtrace('agent', '--state-dir', join(dir, 'state'), '--socket', join(dat, 'agent.sock'));
      expect(agent.code).toBe(ExitCode.Failure);
      expect(agent.stderr).toBe(`evtrace: ERR_CLI_IO: cannot mkdir ${dat}: EEXIST (already exists)\n`);
    });

    it.skipIf(!hasTool('babeltrace2'))(
      'refuses a non-empty CTF directory, and with --force swaps in a trace babeltrace2 reads (skipped without babeltrace2: apt-get install babeltrace2)',
      async () => {
        const ctf = join(dir, 'ctf');
        mkdirSync(ctf);
        writeFileSync(join(ctf, 'stream_9'), 'left over from another trace');
        const refused = await evtrace('convert', dat, '-o', ctf, '--to', 'ctf');
        expect(refused.code).toBe(ExitCode.Failure);
        expect(refused.stderr).toBe(
          `evtrace: ERR_TRACE_OUTPUT: cannot write ${ctf}: the directory is not empty (--force replaces it)\n`,
        );
        expect(readdirSync(ctf)).toEqual(['stream_9']);
        // A failed forced conversion leaves the old directory as it was too.
        expect((await evtrace('convert', corrupt, '-o', ctf, '--to', 'ctf', '--force')).code).toBe(ExitCode.Failure);
        expect(readdirSync(ctf)).toEqual(['stream_9']);
        const forced = await evtrace('convert', dat, '-o', ctf, '--to', 'ctf', '--force');
        expect(forced.code).toBe(0);
        expect(readdirSync(ctf)).not.toContain('stream_9');
        const text = execFileSync('babeltrace2', [ctf], { encoding: 'utf8' });
        expect(text.trimEnd().split('\n')).toHaveLength(40);
        expect(mode(ctf)).toBe(0o700);
        expect(readdirSync(dir).filter((f) => f.startsWith('.'))).toEqual([]);
      },
    );

    it.skipIf(!root)(
      'writes outputs only their owner reads unless --share, as an unprivileged user finds (skipped: not root)',
      async () => {
        for (const [to, name] of [
          ['tracedat', 'o.dat'],
          ['jsonl', 'o.jsonl'],
          ['text', 'o.txt'],
          ['ctf', 'o.ctf'],
        ] as const) {
          const priv = join(dir, `private-${name}`);
          const shared = join(dir, `shared-${name}`);
          expect((await evtrace('convert', dat, '-o', priv, '--to', to)).code).toBe(0);
          expect((await evtrace('convert', dat, '-o', shared, '--to', to, '--share')).code).toBe(0);
          const file = (p: string) => (to === 'ctf' ? join(p, 'metadata') : p);
          expect(mode(priv)).toBe(to === 'ctf' ? 0o700 : 0o600);
          expect(nobodyReads(file(priv)), name).toBe(false);
          expect(nobodyReads(file(shared)), name).toBe(true);
        }
      },
    );
  },
);

describe.skipIf(!existsSync(CLI))(
  `evtrace record --demo outputs (built CLI${existsSync(CLI) ? '' : ': skipped, not built'})`,
  { timeout: 30_000 },
  () => {
    const dir = openDir();

    it('writes a private trace.dat (shared with --share) and keeps a private .part that reads after kill -9', async () => {
      const out = join(dir, 'rec.dat');
      const r = await evtrace('record', '--demo', '-e', 'kmem:kmalloc', '--duration', '200ms', '-o', out);
      expect(r.code).toBe(0);
      expect(mode(out)).toBe(0o600);
      expect(existsSync(`${out}.part`)).toBe(false);
      const shared = join(dir, 'shared.dat');
      expect(
        (await evtrace('record', '--demo', '-e', 'kmem:kmalloc', '--duration', '200ms', '-o', shared, '--share')).code,
      ).toBe(0);
      expect(mode(shared)).toBe(0o644 & ~process.umask());
      if (root) {
        expect(nobodyReads(out)).toBe(false);
        expect(nobodyReads(shared)).toBe(true);
      }
      const killed = join(dir, 'killed.dat');
      const child: ChildProcess = spawn(
        process.execPath,
        [CLI, 'record', '--demo', '-e', 'kmem:kmalloc', '--duration', '30s', '-o', killed],
        {
          stdio: 'ignore',
        },
      );
      const part = `${killed}.part`;
      for (let i = 0; i < 200 && !existsSync(join(part, 'cpu0.raw')); i++) await new Promise((r) => setTimeout(r, 25));
      await new Promise((r) => setTimeout(r, 300));
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      expect(mode(part)).toBe(0o700);
      expect(existsSync(killed)).toBe(false);
      const cat = await evtrace('cat', part);
      expect(cat.code).toBe(0);
      expect(cat.stdout).toContain('kmalloc');
    });

    it('refuses a non-empty CTF directory before recording, unless --force', async () => {
      const ctf = join(dir, 'ctf');
      mkdirSync(ctf);
      writeFileSync(join(ctf, 'stream_3'), 'left over');
      const r = await evtrace(
        'record',
        '--demo',
        '-e',
        'kmem:kmalloc',
        '--duration',
        '100ms',
        '--format',
        'ctf',
        '-o',
        ctf,
      );
      expect(r.code).toBe(ExitCode.Failure);
      expect(r.stderr).toBe(
        `evtrace: ERR_TRACE_OUTPUT: cannot write ${ctf}: the directory is not empty (--force replaces it)\n`,
      );
      expect(existsSync(`${ctf}.part`)).toBe(false);
      expect(readdirSync(ctf)).toEqual(['stream_3']);
      const forced = await evtrace(
        'record',
        '--demo',
        '-e',
        'kmem:kmalloc',
        '--duration',
        '100ms',
        '--format',
        'ctf',
        '-o',
        ctf,
        '--force',
      );
      expect(forced.code).toBe(0);
      expect(readdirSync(ctf)).toContain('metadata');
      expect(readdirSync(ctf)).not.toContain('stream_3');
      expect(mode(ctf)).toBe(0o700);
    });
  },
);
