import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPersistent } from '@evtrace/persistent-events';
import { render } from 'ink-testing-library';
import { afterAll, describe, expect, it } from 'vitest';
import { openFileSource } from '../data/file-source.ts';
import { recordDemoTrace, tempDir } from '../testing/traces.ts';
import { App } from '../ui/app.tsx';
import { VIEWS } from './index.ts';
import { PersistentBuffers } from './persistent.tsx';

const dir = mkdtempSync(join(tmpdir(), 'tui-persistent-'));
const traces = tempDir();
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(traces, { recursive: true, force: true });
});

async function until(app: { lastFrame(): string | undefined }, ok: (frame: string) => boolean): Promise<string> {
  for (let waited = 0; waited < 10_000; waited += 50) {
    const frame = app.lastFrame() ?? '';
    if (ok(frame)) return frame;
    await new Promise((r) => setTimeout(r, 50));
  }
  return app.lastFrame() ?? '';
}

describe('persistent buffers in the Sessions view', () => {
  it('lists each buffer with backend, size, mode, fill, loss, writers and readers', async () => {
    const flight = openPersistent('tui/flight', { dir, create: { size: 64 * 1024, mode: 'overwrite' } });
    const w = flight.writer();
    for (let i = 0; i < 2000; i++) {
      w.reserve(1, 16);
      w.commit();
    }
    openPersistent('tui/queue', { dir, create: { size: 1 << 20, mode: 'discard' } }).close();
    const app = render(<PersistentBuffers width={100} active options={{ dir, backends: ['user'] }} />);
    const frame = await until(app, (f) => f.includes('tui/queue'));
    const row = (name: string) => frame.split('\n').find((l) => l.includes(name)) ?? '';
    expect(frame).toMatch(/PERSISTENT\s+BACKEND\s+SIZE\s+MODE\s+FILL\s+LOST\s+W\s+R\s+OWNER/);
    // 2000 records of 24 bytes fill 12 of the 16 pages; this process writes it.
    expect(row('tui/flight')).toMatch(/tui\/flight\s+user\s+64K\s+overwrite\s+75%\s+0\s+1\s+0\s+root/);
    expect(row('tui/queue')).toMatch(/tui\/queue\s+user\s+1\.0M\s+discard\s+0%\s+0\s+0\s+0\s+root/);
    app.unmount();
    w.close();
    flight.close();
  });

  it('shows in the Sessions view of a trace file, beside the no-agent explanation', async () => {
    const source = openFileSource(await recordDemoTrace(traces, 50));
    process.env.EVTRACE_PERSISTENT_DIR = dir;
    try {
      const app = render(
        <App source={source} views={VIEWS} size={{ columns: 120, rows: 30 }} theme={{ colour: false }} />,
      );
      app.stdin.write('3');
      const frame = await until(app, (f) => f.includes('tui/flight'));
      expect(frame).toContain('No agent');
      expect(frame).toMatch(/PERSISTENT\s+BACKEND/);
      expect(frame).toMatch(/tui\/flight\s+user\s+64K\s+overwrite/);
      app.unmount();
    } finally {
      delete process.env.EVTRACE_PERSISTENT_DIR;
    }
  });
});
