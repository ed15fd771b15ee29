/**
 * Recording to a full disk, for real: a small tmpfs filled by a busy kmem:kmalloc recording. The recorder must fail
 * with ERR_TRACEFS_OUTPUT naming the file and ENOSPC, remove its tracefs instance, and keep what it wrote readable.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listRawCpuFiles, openRawPagesDir } from '@evtrace/trace-format';
import { afterAll, describe, expect, it } from 'vitest';
import { recordDemo } from '../demo/record-demo.ts';
import { TracefsError } from '../errors.ts';
import { listInstances } from '../instance/instance.ts';
import { finalizeRecording } from '../output/output.ts';
import { tracefsForTests } from '../testing/env.ts';
import { record } from './recorder.ts';

const env = tracefsForTests();
const work = mkdtempSync(join(tmpdir(), 'evtrace-full-'));
const mounts: string[] = [];
/** Our instances only: other suites record in parallel in their own. */
const ours = (tracefs: string) => listInstances(tracefs).filter((i) => i.startsWith(`evtrace-${process.pid}-`));

/** Mounts a tmpfs of `size` (mount's syntax: 2m, 256k) under the work directory. */
function smallDisk(name: string, size: string): string {
  const dir = join(work, name);
  mkdirSync(dir);
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]);
  mounts.push(dir);
  return dir;
}

/** Why a small ext4 image cannot be mounted here (no mkfs.ext4, no free loop device), or undefined when it can. */
function ext4Missing(): string | undefined {
  if (spawnSync('mkfs.ext4', ['-V'], { stdio: 'ignore' }).status !== 0) return 'no mkfs.ext4 (Debian: e2fsprogs)';
  if (spawnSync('losetup', ['-f'], { stdio: 'ignore' }).status !== 0) return 'no free loop device';
  return undefined;
}

/** Mounts a small ext4 image of `mb` MiB (loop device) under the work directory: the regions layout's file system. */
function smallExt4(name: string, mb: number): string {
  const dir = join(work, name);
  const image = join(work, `${name}.img`);
  mkdirSync(dir);
  execFileSync('truncate', ['-s', `${mb}M`, image]);
  execFileSync('mkfs.ext4', ['-q', '-F', image]);
  execFileSync('mount', ['-o', 'loop', image, dir]);
  mounts.push(dir);
  return dir;
}

afterAll(() => {
  // Every mount is tried, even after one fails; the work directory goes only when nothing is mounted in it.
  const busy = mounts.filter((dir) => spawnSync('umount', [dir]).status !== 0);
  if (busy.length === 0) rmSync(work, { recursive: true, force: true });
  expect(busy).toEqual([]);
});

/** A workload allocating in the kernel until killed (directory walks: many kmallocs). */
function busy(): ChildProcess {
  return spawn('sh', ['-c', 'while :; do ls -R /usr/lib /usr/share >/dev/null 2>&1; done'], { stdio: 'ignore' });
}

/** Room for the metadata (kallsyms is the bulk, ~5 MB) plus `mb` MiB of pages. */
function roomFor(mb: number): string {
  return `${Math.ceil(readFileSync('/proc/kallsyms').length / (1 << 20)) + 1 + mb}m`;
}

async function failure(promise: Promise<unknown>): Promise<TracefsError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TracefsError);
  return error as TracefsError;
}

describe.skipIf(env.why !== undefined)(`recording to a full disk${env.why ? ` (skipped: ${env.why})` : ''}`, () => {
  const tracefs = env.path!;

  // With head room (as `evtrace record` leaves), finalizing tries to build the trace.dat in place: around the largest
  // cpuN.raw on tmpfs, in the regions of one cpus.raw on ext4.
  for (const [threads, fs] of [
    ['single', 'tmpfs'],
    ['per-cpu', 'tmpfs'],
    ['single', 'ext4'],
  ] as const) {
    const headRoom = threads === 'single';
    const noExt4 = fs === 'ext4' ? ext4Missing() : undefined;
    it.skipIf(noExt4 !== undefined)(
      `${threads} reader${headRoom ? ', head room' : ''}, ${fs}: fails with ENOSPC naming the file, removes the instance, keeps whole pages${noExt4 ? ` (skipped: ${noExt4})` : ''}`,
      async () => {
        const disk =
          fs === 'ext4'
            ? smallExt4(`pages-${threads}-ext4`, Number.parseInt(roomFor(6), 10))
            : smallDisk(`pages-${threads}`, roomFor(2));
        const dir = join(disk, 'out.part');
        const before = ours(tracefs);
        let child: ChildProcess | undefined;
        const error = await failure(
          record({
            events: ['kmem:kmalloc'],
            dir,
            durationMs: 20_000,
            priority: false,
            threads,
            headRoom,
            onStart: () => (child = busy()),
          }).finally(() => child?.kill('SIGKILL')),
        );
        expect(error.code).toBe('ERR_TRACEFS_OUTPUT');
        expect(error.errno).toBe('ENOSPC');
        expect(error.path).toMatch(fs === 'ext4' ? /\/out\.part\/cpus\.raw$/ : /\/out\.part\/cpu\d+\.raw$/);
        expect(error.message).toContain(`cannot write ${error.path}: ENOSPC (no space left on device)`);
        expect(ours(tracefs)).toEqual(before);
        // Kept, cut to whole pages (a part-written page of a region no longer counts), and readable to the end.
        const pageSize = Number(readFileSync(join(dir, 'buffer_subbuf_size_kb'), 'utf8')) * 1024;
        const room = existsSync(join(dir, 'head_room')) ? Number(readFileSync(join(dir, 'head_room'), 'utf8')) : 0;
        expect(room > 0).toBe(headRoom);
        expect(existsSync(join(dir, 'cpu_regions'))).toBe(fs === 'ext4');
        const bytes = listRawCpuFiles(dir).map((f) => (f.end ?? statSync(f.file).size) - f.start);
        expect(bytes.every((b) => b % pageSize === 0)).toBe(true);
        expect(bytes.reduce((a, b) => a + b, 0)).toBeGreaterThan(1 << 20);
        let events = 0;
        for (const e of openRawPagesDir(dir).events()) {
          expect(e.eventClass.name).toBe('kmem:kmalloc');
          events++;
        }
        expect(events).toBeGreaterThan(1000);

        // Finalizing on the same full disk fails too: the partial output is removed, the pages stay.
        for (const format of ['tracedat', 'ctf'] as const) {
          const out = join(disk, `out.${format}`);
          const e = (() => {
            try {
              finalizeRecording(dir, out, format);
            } catch (caught) {
              return caught as TracefsError;
            }
            return undefined;
          })();
          expect(e).toBeInstanceOf(TracefsError);
          expect([e?.code, e?.errno]).toEqual(['ERR_TRACEFS_OUTPUT', 'ENOSPC']);
          expect(e?.message).toContain(out);
          expect(existsSync(out)).toBe(false);
          expect(existsSync(dir)).toBe(true);
        }
        // Once there is room, the kept pages convert in full.
        const dat = finalizeRecording(dir, join(work, `moved-${threads}-${fs}.dat`), 'tracedat', { removeRaw: false });
        expect(dat.bytes).toBeGreaterThan(bytes.reduce((a, b) => a + b, 0));
        expect(finalizeRecording(dir, join(work, `moved-${threads}-${fs}-ctf`), 'ctf').events).toBe(events);
        expect(existsSync(dir)).toBe(false);
      },
      60_000,
    );
  }

  it('fails before tracing starts when even the metadata does not fit, leaving nothing', async () => {
    const disk = smallDisk('tiny', '256k');
    const dir = join(disk, 'out.part');
    const before = ours(tracefs);
    const error = await failure(record({ events: ['kmem:kmalloc'], dir, durationMs: 1000, priority: false }));
    expect([error.code, error.errno]).toEqual(['ERR_TRACEFS_OUTPUT', 'ENOSPC']);
    expect(error.path).toBe(join(dir, 'kallsyms'));
    expect(existsSync(dir)).toBe(false);
    expect(ours(tracefs)).toEqual(before);
  });
});

const root = process.getuid?.() === 0;
describe.skipIf(!root)(
  `the demo source to a full disk${root ? '' : ' (skipped: not root: mounting a tmpfs needs root)'}`,
  () => {
    it('fails with ENOSPC naming the file and keeps whole, readable pages', async () => {
      const disk = smallDisk('demo', '256k');
      const dir = join(disk, 'demo.part');
      const error = await failure(recordDemo({ events: ['kmem:kmalloc'], dir, durationMs: 20_000, rate: 2_000_000 }));
      expect([error.code, error.errno]).toEqual(['ERR_TRACEFS_OUTPUT', 'ENOSPC']);
      expect(error.path).toMatch(/\/demo\.part\/cpu\d+\.raw$/);
      const raws = readdirSync(dir).filter((f) => /^cpu\d+\.raw$/.test(f));
      expect(raws.map((f) => statSync(join(dir, f)).size % 4096)).toEqual(raws.map(() => 0));
      expect([...openRawPagesDir(dir).events()].length).toBeGreaterThan(100);
    }, 60_000);
  },
);
