import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRawPagesDir, openTraceDat } from '@evtrace/trace-format';
import { describe, expect, it } from 'vitest';
import { DEMO_LABEL, recordDemo } from './demo.ts';
import { finalizeRecording } from './output.ts';
import { hasTool } from './testing/env.ts';

const work = mkdtempSync(join(tmpdir(), 'evtrace-demo-'));

describe('the demo source', () => {
  it('produces realistic kmem and sched events through the recording pipeline, labelled as demo', async () => {
    const r = await recordDemo({ events: ['kmem:*', 'sched:*'], dir: join(work, 'a.part'), durationMs: 60, seed: 7 });
    expect(r.demo).toBe(true);
    expect([...r.events.keys()].sort()).toEqual([
      'kmem:kfree',
      'kmem:kmalloc',
      'sched:sched_switch',
      'sched:sched_wakeup',
    ]);
    expect(readFileSync(join(r.dir, 'DEMO'), 'utf8')).toContain(DEMO_LABEL);
    const events = [...openRawPagesDir(r.dir).events()];
    expect(events.length).toBe(r.total);
    // Every kfree of a non-null pointer frees an earlier kmalloc of the same CPU.
    const live = new Set<string>();
    for (const e of events) {
      const key = `${e.cpu}:${String(e.fields.ptr)}`;
      if (e.eventClass.name === 'kmem:kmalloc') live.add(key);
      if (e.eventClass.name === 'kmem:kfree' && e.fields.ptr !== 0n) expect(live.delete(key)).toBe(true);
    }
    const dat = join(work, 'a.dat');
    finalizeRecording(r.dir, dat, 'tracedat', { removeRaw: false });
    expect(openTraceDat(dat).eventClasses.length).toBe(4);
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
    }
    const ctf = join(work, 'a-ctf');
    expect(finalizeRecording(r.dir, ctf, 'ctf').events).toBe(r.total);
    expect(readFileSync(join(ctf, 'metadata'), 'utf8')).toContain(DEMO_LABEL);
    if (hasTool('babeltrace2')) {
      const text = execFileSync('babeltrace2', [ctf], { maxBuffer: 1 << 26 }).toString();
      expect(text.trimEnd().split('\n').length).toBe(r.total);
    }
  });

  it('refuses events it does not produce', async () => {
    await expect(recordDemo({ events: ['irq:*'], dir: join(work, 'b.part') })).rejects.toThrow(
      /unknown event 'irq:\*'/,
    );
  });
});
