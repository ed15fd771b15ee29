import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { encodeLine, LineDecoder, MAX_REQUEST_BYTES } from './framing.ts';
import { parseRequest } from './validate.ts';

const run = promisify(execFile);
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README example', () => {
  it('runs against a peer answering as PROTOCOL.md says, through the built package', async () => {
    const code = /```ts\n([\s\S]*?)```/.exec(README)?.[1];
    expect(code).toBeDefined();
    const dir = mkdtempSync(join(tmpdir(), 'protocol-readme-'));
    const path = join(dir, 'agent.sock');
    const event = (n: number) => ({
      ts_ns: String(1000 + n),
      cpu: n % 2,
      event: 'kmem:kmalloc',
      pid: 7,
      comm: 'app',
      flags: null,
      fields: {},
    });
    const server = createServer((socket) => {
      const d = new LineDecoder(MAX_REQUEST_BYTES);
      socket.on('data', (chunk) => {
        for (const f of d.push(chunk)) {
          const r = 'line' in f ? parseRequest(f.line) : undefined;
          if (!r?.ok) continue;
          const { id, op } = r.value;
          if (op === 'hello')
            socket.write(encodeLine({ id, ok: true, result: { protocol: 1, agent: '0.1.0', pid: 1 } }));
          if (op === 'list')
            socket.write(
              encodeLine({ id, ok: true, result: [{ name: 'demo', state: 'running', events: 30, lost: 0 }] }),
            );
          if (op === 'subscribe') {
            socket.write(encodeLine({ id, ok: true, result: { stream: 1 } }));
            socket.write(encodeLine({ stream: 1, kind: 'events', events: [0, 1, 2].map(event) }));
            socket.write(encodeLine({ stream: 1, kind: 'live' }));
            socket.write(encodeLine({ stream: 1, kind: 'loss', lost: 7, total: 7 }));
            socket.write(
              encodeLine({ stream: 1, kind: 'events', events: Array.from({ length: 30 }, (_, i) => event(i + 3)) }),
            );
          }
          if (op === 'unsubscribe') {
            socket.write(encodeLine({ id, ok: true, result: { stream: 1 } }));
            socket.write(encodeLine({ stream: 1, kind: 'end', reason: 'unsubscribed' }));
          }
        }
      });
    });
    await new Promise<void>((r) => server.listen(path, r));
    const file = new URL('../readme-example.tmp.ts', import.meta.url).pathname;
    writeFileSync(file, code!);
    try {
      const { stdout } = await run(process.execPath, [file], { env: { ...process.env, EVTRACE_AGENT_SOCKET: path } });
      const lines = stdout.trim().split('\n');
      expect(lines[0]).toBe('agent 0.1.0 protocol 1');
      expect(lines[1]).toBe('demo running 30 events 0 lost');
      expect(lines.slice(2, 7)).toEqual([
        '1000 0 kmem:kmalloc',
        '1001 1 kmem:kmalloc',
        '1002 0 kmem:kmalloc',
        '-- live --',
        '(this viewer lost 7 events, 7 in all)',
      ]);
      // 20 items shown, then close(): the rest of the queued items still drain until the end message.
      expect(lines.length).toBeGreaterThanOrEqual(22);
    } finally {
      rmSync(file, { force: true });
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
