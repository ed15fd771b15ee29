import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findTracefs, listInstances } from '@evtrace/tracefs';
import { afterAll, describe, expect, it } from 'vitest';
import { bootBuffers, detectBootBuffers, parseBootParams } from './index.ts';
import { createKernelBuffer, listKernelBuffers, openKernelBuffer } from './kernel.ts';
import { listPersistent } from './list.ts';
import { INDEX, runNode } from './testing/child.ts';

function tracefs(): { path?: string; why: string } {
  if (process.getuid?.() !== 0) return { why: 'not root: tracefs instances need root' };
  try {
    return { path: findTracefs(), why: '' };
  } catch (error) {
    return { why: (error as Error).message };
  }
}
const env = tracefs();
const NAME = `test${process.pid}/kernel/flight`;

describe.skipIf(env.why !== '')(`kernel buffers in tracefs instances${env.why ? ` (skipped: ${env.why})` : ''}`, () => {
  const before = env.path ? listInstances(env.path) : [];
  afterAll(() => {
    // Leave tracefs as found, whatever failed.
    for (const i of listInstances(env.path!)) {
      if (!before.includes(i) && i.startsWith(`evtrace.p.test${process.pid}`)) {
        execFileSync('sh', [
          '-c',
          `echo 0 > '${env.path}/instances/${i}/events/enable'; rmdir '${env.path}/instances/${i}'`,
        ]);
      }
    }
  });

  it('created with size, page size, mode, events and filter; reopened and read by a second process; deleted', async () => {
    const buf = createKernelBuffer(NAME, {
      size: 64 * 1024,
      mode: 'discard',
      events: ['sched:sched_process_exec'],
      filter: 'pid > 0',
      tracefs: env.path!,
    });
    expect(buf.instance).toBe(`evtrace.p.test${process.pid}:kernel:flight`);
    expect(existsSync(buf.path)).toBe(true);
    const p = buf.path;
    // The kernel rounds up to whole sub-buffers.
    expect(
      Number(
        execFileSync('cat', [join(p, 'buffer_size_kb')])
          .toString()
          .trim(),
      ),
    ).toBeGreaterThanOrEqual(64);
    expect(
      execFileSync('cat', [join(p, 'options', 'overwrite')])
        .toString()
        .trim(),
    ).toBe('0');
    expect(
      execFileSync('cat', [join(p, 'events', 'sched', 'sched_process_exec', 'filter')])
        .toString()
        .trim(),
    ).toBe('pid > 0');
    expect(() => createKernelBuffer(NAME, { tracefs: env.path! })).toThrow(
      expect.objectContaining({ code: 'ERR_PERSISTENT_EXISTS' }),
    );
    // The creating process is gone as far as the kernel cares: a program runs, the instance records its exec.
    execFileSync('/bin/true');
    const second = await runNode(`
      import { openKernelBuffer } from ${JSON.stringify(INDEX)};
      const b = openKernelBuffer(${JSON.stringify(NAME)}, { tracefs: ${JSON.stringify(env.path)} });
      console.log(JSON.stringify({ info: b.info(), text: b.text() }));
    `);
    expect(second.stderr).toBe('');
    const { info, text } = JSON.parse(second.stdout);
    expect(info).toMatchObject({
      backend: 'kernel',
      name: NAME,
      mode: 'discard',
      pageSize: 4096,
      owner: 'root',
      classes: ['sched:sched_process_exec'],
    });
    expect(info.size).toBeGreaterThanOrEqual(64 * 1024);
    expect(info.written).toBeGreaterThan(0);
    expect(text).toMatch(/sched_process_exec: filename=\/bin\/true/);
    expect(listKernelBuffers({ tracefs: env.path! }).map((b) => b.name)).toContain(NAME);
    expect(listPersistent({ tracefs: env.path!, backends: ['kernel'] }).buffers.map((b) => b.name)).toContain(NAME);

    const del = await runNode(`
      import { deleteBuffer } from ${JSON.stringify(INDEX)};
      deleteBuffer(${JSON.stringify(NAME)}, { backend: 'kernel', tracefs: ${JSON.stringify(env.path)} });
      console.log('deleted');
    `);
    expect(del.stdout.trim()).toBe('deleted');
    expect(existsSync(p)).toBe(false);
    expect(() => openKernelBuffer(NAME, { tracefs: env.path! })).toThrow(
      expect.objectContaining({ code: 'ERR_PERSISTENT_NOT_FOUND' }),
    );
  });

  it('refuses unknown events and bad filters before creating anything', () => {
    expect(() => createKernelBuffer(`${NAME}2`, { events: ['nosuch:event'], tracefs: env.path! })).toThrow(
      expect.objectContaining({
        code: 'ERR_PERSISTENT_ARGUMENT',
        message: expect.stringContaining("unknown event 'nosuch:event'"),
      }),
    );
    expect(() =>
      createKernelBuffer(`${NAME}2`, { events: ['sched:sched_switch'], filter: 'prev_pid >', tracefs: env.path! }),
    ).toThrow(expect.objectContaining({ code: 'ERR_PERSISTENT_ARGUMENT' }));
    expect(listInstances(env.path!)).not.toContain(`evtrace.p.test${process.pid}:kernel:flight2`);
  });

  it('this kernel has no boot-time persistent buffer, and says why', () => {
    const detection = bootBuffers({ tracefs: env.path! });
    expect(detection.buffers).toEqual([]);
    expect(detection.absent).toMatch(/no boot-time persistent ring buffer/);
  });
});

describe('boot-time persistent buffer detection', () => {
  const root = mkdtempSync(join(tmpdir(), 'persistent-boot-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('parses reserve_mem and trace_instance as the kernel documents them', () => {
    const params = parseBootParams(
      'quiet reserve_mem=12M:4096:trace trace_instance=boot_map^traceoff@trace,sched:*,irq:* trace_instance=backup=boot_map trace_instance=old@0x285400000:12M -- init=@x',
    );
    expect(params.reserved).toEqual([{ size: '12M', align: '4096', label: 'trace' }]);
    expect(params.instances).toEqual([
      { name: 'boot_map', flags: ['traceoff'], label: 'trace', events: ['sched:*', 'irq:*'] },
      { name: 'old', flags: [], address: '0x285400000', size: '12M', events: [] },
    ]);
  });

  it('finds the instance in a tracefs tree laid out like the kernel, with its last_boot_info', () => {
    const inst = join(root, 'instances', 'boot_map');
    mkdirSync(join(inst, 'per_cpu', 'cpu0'), { recursive: true });
    writeFileSync(join(inst, 'last_boot_info'), 'text delta:\t-268435456\ndata delta:\t-268435456\n');
    mkdirSync(join(root, 'instances', 'other'));
    const cmdline = 'reserve_mem=12M:4096:trace trace_instance=boot_map@trace';
    const found = detectBootBuffers(root, cmdline, ['boot_map', 'other']);
    expect(found.absent).toBeUndefined();
    expect(found.buffers).toEqual([
      {
        name: 'boot_map',
        path: inst,
        param: { name: 'boot_map', flags: [], label: 'trace', events: [] },
        reserved: { size: '12M', align: '4096', label: 'trace' },
        lastBootInfo: 'text delta:\t-268435456\ndata delta:\t-268435456\n',
      },
    ]);
    // Named on the command line but never created: the reservation failed.
    expect(detectBootBuffers(root, 'trace_instance=gone@trace', ['other']).absent).toMatch(
      /maps gone to persistent memory, but no such instance exists/,
    );
    // No parameter, but an instance with last_boot_info is still the kernel's persistent one.
    expect(detectBootBuffers(root, 'quiet', ['boot_map', 'other']).buffers.map((b) => b.name)).toEqual(['boot_map']);
    expect(detectBootBuffers(root, 'quiet', ['other']).absent).toMatch(/no trace_instance=NAME@LABEL/);
  });
});
