import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { NatsServer, natsServerAvailable } from './testing/nats-server.ts';

const run = promisify(execFile);
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe.skipIf(!natsServerAvailable())('README example (needs nats-server)', () => {
  it('publishes through the spool and reads the record back with its host and sequence number, through the built package', async () => {
    const code = /```ts\n([\s\S]*?)```/.exec(README)?.[1];
    expect(code).toBeDefined();
    const dir = mkdtempSync(join(tmpdir(), 'fleet-readme-'));
    const server = await NatsServer.start({ dir: join(dir, 'nats') });
    // The example's server and spool, moved to this test's.
    const example = code!
      .replaceAll("'nats://127.0.0.1:4222'", JSON.stringify(server.url))
      .replace("'/tmp/evtrace-fleet-spool'", JSON.stringify(join(dir, 'spool')));
    const file = new URL('../readme-example.tmp.ts', import.meta.url).pathname;
    writeFileSync(file, example);
    try {
      const { stdout } = await run(process.execPath, [file]);
      expect(stdout).toBe('{"host":"web812","seq":1,"event":"kmem:kmalloc","fields":{"bytes_req":"512"}}\n');
    } finally {
      rmSync(file, { force: true });
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
