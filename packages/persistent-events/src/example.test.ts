import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const EXAMPLE = new URL('../examples/crash-survival.ts', import.meta.url).pathname;

describe('examples/crash-survival.ts', () => {
  it('kills its writer with SIGKILL and recovers every record the writer reported', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'persistent-example-'));
    try {
      const { stdout } = await run(process.execPath, [EXAMPLE], {
        env: { ...process.env, EVTRACE_PERSISTENT_DIR: dir },
      });
      const reported = Number(/reported (\d+) records committed, then died of SIGKILL/.exec(stdout)?.[1]);
      const recovered = Number(/records recovered: (\d+) \(0 \.\. (\d+)\), gaps: 0, lost: 0/.exec(stdout)?.[1]);
      expect(reported).toBeGreaterThanOrEqual(100_000);
      expect(recovered).toBeGreaterThanOrEqual(reported);
      expect(stdout).toContain('live writers now: 0');
      expect(stdout).toContain('every reported record recovered: yes');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
