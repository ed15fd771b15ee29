/** Test support: systemd's notification socket, a real Unix datagram socket bound by python3 (Node has none). */
import { spawn, spawnSync } from 'node:child_process';

export const hasPython =
  spawnSync('python3', ['-c', 'import socket; socket.AF_UNIX'], { stdio: 'ignore' }).status === 0;

/** Binds a datagram socket at `name` ('@' for abstract) and prints each datagram as a JSON string, one a line. */
const RECEIVER = `
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1].replace('@', '\\0', 1))
print(json.dumps('BOUND'), flush=True)
while True:
    print(json.dumps(s.recv(4096).decode()), flush=True)
`;

export interface Listener {
  readonly datagrams: string[];
  /** Waits until `count` datagrams satisfy `match`. */
  until(match: (d: string) => boolean, count?: number): Promise<void>;
  close(): void;
}

export async function listenNotify(name: string): Promise<Listener> {
  const proc = spawn('python3', ['-c', RECEIVER, name], { stdio: ['ignore', 'pipe', 'inherit'] });
  const datagrams: string[] = [];
  const waiters = new Set<() => void>();
  let buffered = '';
  proc.stdout.on('data', (d: Buffer) => {
    buffered += d.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) datagrams.push(JSON.parse(line) as string);
    for (const w of waiters) w();
  });
  const until = (match: (d: string) => boolean, count = 1) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (datagrams.filter(match).length < count) return;
        waiters.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`never received ${count} of what was awaited; got ${JSON.stringify(datagrams)}`));
      }, 20_000);
      waiters.add(check);
      check();
    });
  await until((d) => d === 'BOUND');
  datagrams.length = 0;
  return { datagrams, until, close: () => proc.kill() };
}
