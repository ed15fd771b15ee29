// A flight recorder that survives its writer's SIGKILL: a child process writes numbered records into a persistent
// buffer and is killed mid-stream; this process then reopens the buffer read-only by name and counts what it finds.
// Run: node examples/crash-survival.ts
import { spawn } from 'node:child_process';
import { deleteBuffer, openPersistent } from '../src/index.ts';

const NAME = `examples/crash-${process.pid}`;
const INDEX = new URL('../src/index.ts', import.meta.url).pathname;

const writer = spawn(
  process.execPath,
  [
    '--input-type=module',
    '-e',
    `import { openPersistent } from ${JSON.stringify(INDEX)};
     const buf = openPersistent(${JSON.stringify(NAME)}, { create: { size: 16 << 20, mode: 'discard', classes: ['example:tick'] } });
     const w = buf.writer();
     let i = 0;
     const burst = () => {
       for (let n = 0; n < 1000; n++, i++) { const at = w.reserve(0, 8); w.view.setUint32(at, i, true); w.commit(); }
       console.log(i);
       setImmediate(burst);
     };
     burst();`,
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);

let reported = 0;
writer.stdout.setEncoding('utf8');
writer.stdout.on('data', (text: string) => {
  reported = Number(text.trim().split('\n').at(-1));
  if (reported >= 100_000 && !writer.killed) writer.kill('SIGKILL');
});
writer.on('exit', (_code, signal) => {
  console.log(`writer pid ${writer.pid}: reported ${reported} records committed, then died of ${signal}`);
  const buf = openPersistent(NAME, { readOnly: true });
  const snap = buf.snapshot();
  let count = 0;
  let expected = 0;
  let gaps = 0;
  while (snap.next()) {
    const v = snap.view.getUint32(snap.offset, true);
    if (v !== expected) gaps++;
    expected = v + 1;
    count++;
  }
  const info = buf.info();
  console.log(`reopened ${NAME} read-only in pid ${process.pid}: ${info.path}`);
  console.log(`  writer still attached in the header: ${buf.writerAttached}; live writers now: ${info.writers}`);
  console.log(`  records recovered: ${count} (0 .. ${expected - 1}), gaps: ${gaps}, lost: ${info.lost}`);
  console.log(`  every reported record recovered: ${count >= reported && gaps === 0 ? 'yes' : 'NO'}`);
  buf.close();
  deleteBuffer(NAME);
});
