import { execFileSync } from 'node:child_process';
import { lstatSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRawPagesDir, openTraceDat } from '@evtrace/trace-format';
import { describe, expect, it } from 'vitest';
import { finalizeRecording } from '../output/output.ts';
import { hasTool } from '../testing/env.ts';
import { DEMO_LABEL, recordDemo } from './record-demo.ts';

const work = mkdtempSync(join(tmpdir(), 'evtrace-demo-'));

describe('the demo source', () => {
  it('produces realistic kmem and sched events through the recording pipeline, labelled as demo', async () => {
    const r = await recordDemo({
      events: ['kmem:*', 'sched:*', 'mce:*', 'bts:*'],
      dir: join(work, 'a.part'),
      durationMs: 60,
      seed: 7,
    });
    expect(r.demo).toBe(true);
    expect([...r.events.keys()].sort()).toEqual([
      'bts:branch',
      'kmem:kfree',
      'kmem:kmalloc',
      'mce:mce_record',
      'sched:sched_switch',
      'sched:sched_wakeup',
    ]);
    // Machine checks are rare, but some are drawn; every other event is common.
    const mce = r.events.get('mce:mce_record')!;
    expect(mce).toBeGreaterThan(0);
    expect(mce).toBeLessThan(r.events.get('bts:branch')! / 20);
    expect(readFileSync(join(r.dir, 'DEMO'), 'utf8')).toContain(DEMO_LABEL);
    const events = [...openRawPagesDir(r.dir).events()];
    expect(events.length).toBe(r.total);
    // Every kfree of a non-null pointer frees an earlier kmalloc of the same CPU.
    const live = new Set<string>();
    for (const e of events) {
      const key = `${e.cpu}:${String(e.fields.ptr)}`;
      if (e.eventClass.name === 'kmem:kmalloc') live.add(key);
      if (e.eventClass.name === 'kmem:kfree' && e.fields.ptr !== 0n) expect(live.delete(key)).toBe(true);
      if (e.eventClass.name === 'mce:mce_record') {
        // Corrected (UC clear), valid, with a valid address, reported by the CPU it happened on.
        const status = e.fields.status as bigint;
        expect([status >> 63n, (status >> 61n) & 1n, (status >> 58n) & 1n]).toEqual([1n, 0n, 1n]);
        expect(e.fields.cpu).toBe(e.cpu);
      }
    }
    const dat = join(work, 'a.dat');
    finalizeRecording(r.dir, dat, 'tracedat', { removeRaw: false });
    expect(openTraceDat(dat).eventClasses.length).toBe(6);
    if (hasTool('trace-cmd')) {
      const lines = execFileSync('trace-cmd', ['report', dat], {
        stdio: ['ignore', 'pipe', 'ignore'],
        maxBuffer: 1 << 26,
      })
        .toString()
        .split('\n')
        .filter((l) => /\[\d{3}\]/.test(l));
      expect(lines.length).toBe(r.total);
      expect(lines.every((l) => /^\s*demo-\w+-\d+ /.test(l))).toBe(true);
      // trace-cmd prints them with the kernel's print format: every field decoded where the layout says.
      const mceLines = lines.filter((l) => / mce_record: /.test(l));
      expect(mceLines.length).toBe(mce);
      expect(mceLines[0]).toMatch(
        /CPU: [01], MCGc\/s: 1000c14\/0, MC(7|8|13|14): 8c0000400001009[0-3], IPID: 0+, ADDR: 00000001[0-9a-f]{8}, MISC: 0+8c, SYND: 0+, RIP: 00:<0+>, TSC: [0-9a-f]+, PPIN: 2b5e3f1a7c9d0e41, vendor: 0, CPUID: 50657, time: \d+, socket: 0, APIC: [02], microcode: 5003604/,
      );
      const branches = lines.filter((l) => / branch: /.test(l));
      expect(branches.length).toBe(r.events.get('bts:branch'));
      expect(
        branches.every((l) => /from=0xffffffff81[0-9a-f]{6} to=0xffffffff81[0-9a-f]{6} flags=0x(10|0)\b/.test(l)),
      ).toBe(true);
    }
    const ctf = join(work, 'a-ctf');
    expect(finalizeRecording(r.dir, ctf, 'ctf').events).toBe(r.total);
    expect(readFileSync(join(ctf, 'metadata'), 'utf8')).toContain(DEMO_LABEL);
    if (hasTool('babeltrace2')) {
      const text = execFileSync('babeltrace2', [ctf], { maxBuffer: 1 << 26 }).toString();
      const lines = text.trimEnd().split('\n');
      expect(lines.length).toBe(r.total);
      const mceLine = lines.find((l) => l.includes('mce:mce_record'))!;
      // The kernel's print fmt shows the registers in hex (%llx), so the CTF integers are base 16 and babeltrace2 prints
      // them so.
      expect(mceLine).toMatch(/mcgcap = 0x1000C14, mcgstatus = 0x0, status = 0x8C0000400001009[0-3]\b/);
      expect(mceLine).toMatch(/ppin = 0x2B5E3F1A7C9D0E41, .*cpuid = 0x50657, .*microcode = 0x5003604/);
      expect(lines.filter((l) => l.includes('bts:branch')).length).toBe(r.events.get('bts:branch'));
      expect(lines.find((l) => l.includes('bts:branch'))).toMatch(
        /from = 0xFFFFFFFF[0-9A-F]+, to = 0xFFFFFFFF[0-9A-F]+, flags = 0x(10|0) /,
      );
    }
  });

  it('refuses events it does not produce', async () => {
    await expect(recordDemo({ events: ['irq:*'], dir: join(work, 'b.part') })).rejects.toThrow(
      /unknown event 'irq:\*'/,
    );
  });
});

describe('a finished recording is private and whole', () => {
  it('keeps the raw directory 0700 and the output 0600, shared on request, and replaces a planted link when told to', async () => {
    const part = join(work, 'private.part');
    await recordDemo({ events: ['kmem:kmalloc'], dir: part, durationMs: 40 });
    expect(statSync(part).mode & 0o777).toBe(0o700);
    // A link planted at the output: followed by default (a user's own link), replaced with followLinks false.
    const victim = join(work, 'victim');
    writeFileSync(victim, 'not a trace');
    const out = join(work, 'private.dat');
    symlinkSync(victim, out);
    finalizeRecording(part, out, 'tracedat', { removeRaw: false, followLinks: false });
    expect(readFileSync(victim, 'utf8')).toBe('not a trace');
    expect(lstatSync(out).isFile()).toBe(true);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    expect(openTraceDat(out).info.version).toBe(6);
    const shared = join(work, 'shared.part');
    await recordDemo({ events: ['kmem:kmalloc'], dir: shared, durationMs: 40, share: true });
    expect(statSync(shared).mode & 0o777).toBe(0o755 & ~process.umask());
    finalizeRecording(shared, join(work, 'shared.dat'), 'tracedat', { share: true });
    expect(statSync(join(work, 'shared.dat')).mode & 0o777).toBe(0o644 & ~process.umask());
  });
});
