import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeCpuPages, openRawPagesDir, type PageSink } from '@evtrace/trace-format';
import { afterAll, describe, expect, it } from 'vitest';
import { BtsSource, QEMU_SOURCE_LABEL } from './live-source.ts';
import { describeProbe, probeBts } from './perf-event.ts';
import { parseQemuLog } from './qemu.ts';
import { Symbolizer } from './symbols.ts';
import { buildProgram, qemuLog, qemuMissing } from './testing/programs.ts';
import { branchesFromEvents } from './trace.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function keeper(): PageSink & { pages: Buffer[] } {
  const pages: Buffer[] = [];
  return {
    pages,
    writeBytes: (_type, payload) => {
      pages.push(Buffer.from(payload));
      return true;
    },
    flush: () => {},
  };
}

const bts = probeBts();

describe('the live branch source', () => {
  it.skipIf(bts.ok)(
    `hardware: fails to prepare with the kernel's answer${bts.ok ? ' (skipped: this machine has BTS)' : ''}`,
    () => {
      const source = new BtsSource({ command: ['/bin/true'], backend: 'hardware' });
      let error: unknown;
      try {
        source.prepare();
      } catch (e) {
        error = e;
      }
      expect(error).toMatchObject({ code: 'ERR_BTS_UNSUPPORTED' });
      // The very words of the probe: an errno from the kernel, or why it could not be asked.
      expect((error as Error).message).toContain(describeProbe(bts));
      expect((error as Error).message).toMatch(/--source bts-qemu/);
      source.close();
    },
  );

  it('refuses to prepare without a program, or for events it does not record', () => {
    expect(() => new BtsSource({ command: [], backend: 'qemu' }).prepare()).toThrow(
      expect.objectContaining({ code: 'ERR_BTS_ARGUMENT' }),
    );
    expect(() =>
      new BtsSource({ command: ['/bin/true'], backend: 'qemu', events: ['kmem:kmalloc'] }).prepare(),
    ).toThrow("unknown event 'kmem:kmalloc': a branch source records bts:branch only");
    for (const events of [['bts:branch'], ['bts:*'], ['bts']]) {
      const s = new BtsSource({ command: ['/bin/true'], backend: 'qemu', events });
      s.prepare();
      expect(s.eventClasses.map((c) => c.name)).toEqual(['bts:branch']);
      s.close();
    }
  });

  const missing = qemuMissing();
  it.skipIf(missing !== '')(
    `qemu: delivers the program's branches as bts:branch pages, labelled software${missing ? ` (skipped: ${missing})` : ''}`,
    async () => {
      const exe = buildProgram();
      const dir = mkdtempSync(join(tmpdir(), 'bts-live-'));
      dirs.push(dir, join(exe, '..'));
      const source = new BtsSource({ command: [exe], backend: 'qemu' });
      try {
        source.prepare();
        expect(source.kind).toBe('bts-qemu');
        source.writeMetadata(dir);
        writeFileSync(join(dir, 'cpu0.raw'), '');
        expect(readFileSync(join(dir, 'SOURCE'), 'utf8').trim()).toBe(QEMU_SOURCE_LABEL);
        const sink = keeper();
        source.start([sink]);
        const t0 = Date.now();
        while (source.poll() === 0 && Date.now() - t0 < 30_000) await new Promise((r) => setTimeout(r, 20));
        const events = decodeCpuPages(openRawPagesDir(dir).metadata, {
          cpu: 0,
          bytes: Buffer.concat(sink.pages),
        }).events;
        expect(events.length).toBeGreaterThan(100);
        expect(source.counters()[0]!.events).toBe(events.length);
        const { branches } = branchesFromEvents(events);
        // The same program under QEMU again, its log parsed directly: the same control flow, branch for branch.
        const direct = parseQemuLog(readFileSync(qemuLog(exe), 'utf8')).branches;
        expect(branches.length).toBe(direct.length);
        for (const i of [0, 1, Math.floor(direct.length / 2), direct.length - 1]) {
          expect(branches.at(i).from).toBe(direct.at(i).from);
          expect(branches.at(i).to).toBe(direct.at(i).to);
        }
        // fib(6) calls fib 25 times: 25 branches land on its first byte.
        const symbols = new Symbolizer().addElf(exe);
        let calls = 0;
        for (let i = 0; i < branches.length; i++) {
          const hit = symbols.lookup(branches.toHi[i]!, branches.toLo[i]!);
          if (hit?.name === 'fib' && hit.offset === 0) calls++;
        }
        expect(calls).toBe(25);
      } finally {
        source.stop();
        source.close();
      }
    },
  );
});
