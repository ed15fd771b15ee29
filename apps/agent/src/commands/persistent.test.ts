import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Snapshot } from '@evtrace/ringbuf';
import { afterAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { runCli } from '../program.ts';
import { kernelAccess } from '../testing/kernel-recording.ts';
import { expectValid } from '../testing/schemas.ts';

async function run(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

const dir = mkdtempSync(join(tmpdir(), 'agent-persistent-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A separate process writes `n` records (u32 i) into `name` through the library and dies of SIGKILL. */
async function writeAndDie(name: string, n: number): Promise<void> {
  const entry = new URL('../../node_modules/@evtrace/persistent-events/dist/index.js', import.meta.url).pathname;
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { openPersistent } from ${JSON.stringify(entry)};
       const w = openPersistent(${JSON.stringify(name)}, { dir: ${JSON.stringify(dir)} }).writer();
       for (let i = 0; i < ${n}; i++) { const at = w.reserve(i % 2, 4); w.view.setUint32(at, i, true); w.commit(); }
       console.log('written');
       setInterval(() => {}, 1000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise((r) => child.stdout.once('data', r));
  const exited = new Promise((r) => child.on('exit', r));
  child.kill('SIGKILL');
  await exited;
}

describe('evtrace persistent (user-space buffers)', () => {
  it('create, write elsewhere and crash, ls, cat, snapshot, rm', async () => {
    const created = await run(
      'persistent',
      'create',
      'cli/app/flight',
      '--size',
      '64K',
      '-e',
      'app:a',
      'app:b',
      '--dir',
      dir,
    );
    expect(created.stderr).toBe('');
    expect(created.code).toBe(ExitCode.Ok);
    expect(created.stdout).toBe(`created user buffer cli/app/flight: ${dir}/cli/app/flight.evrb (64K, overwrite)\n`);

    await writeAndDie('cli/app/flight', 1000);

    const ls = await run('ls', '--json', '--dir', dir);
    expect(ls.code).toBe(ExitCode.Ok);
    const listing = JSON.parse(ls.stdout);
    expectValid('@evtrace/persistent-events/schemas/listing.json', listing);
    const mine = listing.buffers.filter((b: { backend: string }) => b.backend === 'user');
    expect(mine).toEqual([
      expect.objectContaining({
        name: 'cli/app/flight',
        size: 65536,
        mode: 'overwrite',
        writers: 0,
        readers: 0,
        lost: 0,
        owner: expect.any(String),
        classes: ['app:a', 'app:b'],
      }),
    ]);
    expect(mine[0].fill).toBeGreaterThan(0);
    const table = await run('ls', '--dir', dir);
    expect(table.stdout).toMatch(/^BACKEND\s+NAME\s+SIZE\s+MODE\s+FILL\s+LOST\s+WRITERS\s+READERS\s+OWNER\s+CREATED$/m);
    expect(table.stdout).toMatch(/^user\s+cli\/app\/flight\s+64K\s+overwrite\s+\d+%\s+0\s+0\s+0\s+/m);

    const cat = await run('persistent', 'cat', 'cli/app/flight', '--json', '--dir', dir);
    expect(cat.code).toBe(ExitCode.Ok);
    const records = cat.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(records).toHaveLength(1000);
    for (const r of records) expectValid('@evtrace/persistent-events/schemas/record.json', r);
    records.forEach((r, i) => {
      expect(r.class).toBe(i % 2 ? 'app:b' : 'app:a');
      expect(Buffer.from(r.payload, 'hex').readUInt32LE(0)).toBe(i);
    });
    const text = await run('persistent', 'cat', 'cli/app/flight', '--dir', dir);
    expect(text.stdout.split('\n')[1]).toMatch(/^\s+\d+\.\d{9} app:b\s+01000000$/);

    const out = join(dir, 'snap.pages');
    const snap = await run('persistent', 'snapshot', 'cli/app/flight', '-o', out, '--dir', dir);
    expect(snap.stdout).toMatch(/^1000 records, \d+ bytes -> /);
    const pages = new Snapshot(new Uint8Array(readFileSync(out)), 4096);
    let n = 0;
    while (pages.next()) expect(pages.view.getUint32(pages.offset, true)).toBe(n++);
    expect(n).toBe(1000);

    const again = await run('persistent', 'create', 'cli/app/flight', '--size', '64K', '--dir', dir);
    expect(again.code).toBe(ExitCode.Failure);
    expect(again.stderr).toMatch(/ERR_PERSISTENT_EXISTS: a buffer named cli\/app\/flight already exists/);

    const rm = await run('persistent', 'rm', 'cli/app/flight', '--dir', dir);
    expect(rm.code).toBe(ExitCode.Ok);
    expect(existsSync(join(dir, 'cli'))).toBe(false);
    expect((await run('persistent', 'cat', 'cli/app/flight', '--dir', dir)).stderr).toMatch(/ERR_PERSISTENT_NOT_FOUND/);
  });

  it('cat --follow prints records as another process commits them, and ends when it closes the stream', async () => {
    expect((await run('persistent', 'create', 'cli/follow', '--size', '64K', '--dir', dir)).code).toBe(ExitCode.Ok);
    const entry = new URL('../../node_modules/@evtrace/persistent-events/dist/index.js', import.meta.url).pathname;
    const following = run('persistent', 'cat', 'cli/follow', '--follow', '--json', '--dir', dir);
    const child = spawn(process.execPath, [
      '--input-type=module',
      '-e',
      `import { openPersistent } from ${JSON.stringify(entry)};
       const w = openPersistent('cli/follow', { dir: ${JSON.stringify(dir)} }).writer();
       const burst = (from) => { for (let i = from; i < from + 100; i++) { const at = w.reserve(0, 4); w.view.setUint32(at, i, true); w.commit(); } };
       burst(0);
       setTimeout(() => { burst(100); setTimeout(() => { burst(200); w.close(); }, 300); }, 300);`,
    ]);
    await new Promise((r) => child.on('exit', r));
    const r = await following;
    expect(r.code).toBe(ExitCode.Ok);
    const values = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => Buffer.from(JSON.parse(l).payload, 'hex').readUInt32LE(0));
    expect(values).toEqual(Array.from({ length: 300 }, (_, i) => i));
    expect(r.stderr).toBe('');
  });

  it('bad names and sizes are usage errors', async () => {
    const bad = await run('persistent', 'create', '../etc/x', '--size', '64K', '--dir', dir);
    expect(bad.code).toBe(ExitCode.Usage);
    expect(bad.stderr).toMatch(/ERR_PERSISTENT_NAME: name "\.\.\/etc\/x", column 1: \.\. would leave the namespace/);
    const size = await run('persistent', 'create', 'x', '--size', '12Q', '--dir', dir);
    expect(size.code).toBe(ExitCode.Usage);
    expect(size.stderr).toBe('evtrace: ERR_CLI_USAGE: --size: "12Q" is not a size (e.g. 16m, 1g, 4096)\n');
  });
});

const { why } = kernelAccess('not root: tracefs instances need root');

describe.skipIf(why !== '')(`evtrace persistent --kernel${why ? ` (skipped: ${why})` : ''}`, () => {
  it('creates a tracefs instance that ls lists and cat prints, and rm removes', async () => {
    const name = `cli${process.pid}/sched`;
    const created = await run(
      'persistent',
      'create',
      name,
      '--kernel',
      '--size',
      '64K',
      '-e',
      'sched:sched_process_exec',
    );
    try {
      expect(created.stderr).toBe('');
      expect(created.stdout).toMatch(
        new RegExp(`created kernel buffer ${name}: .*/instances/evtrace\\.p\\.cli${process.pid}:sched`),
      );
      spawn('/bin/true');
      await new Promise((r) => setTimeout(r, 100));
      const ls = JSON.parse((await run('ls', '--json', '--dir', dir)).stdout);
      expect(ls.buffers).toContainEqual(
        expect.objectContaining({ backend: 'kernel', name, mode: 'overwrite', classes: ['sched:sched_process_exec'] }),
      );
      expect(ls.bootAbsent).toMatch(/no boot-time persistent ring buffer/);
      const table = (await run('ls', '--dir', dir)).stdout;
      expect(table).toMatch(
        new RegExp(`^kernel\\s+${name}\\s+\\d+K\\s+overwrite\\s+\\d+%\\s+\\d+\\s+-\\s+-\\s+root\\s`, 'm'),
      );
      expect(table).toMatch(/^boot-time buffer: this kernel has no boot-time persistent ring buffer/m);
      const cat = await run('persistent', 'cat', name, '--kernel');
      expect(cat.stdout).toMatch(/sched_process_exec: filename=\/bin\/true/);
    } finally {
      const rm = await run('persistent', 'rm', name, '--kernel');
      expect(rm.code).toBe(ExitCode.Ok);
    }
    expect((await run('persistent', 'cat', name, '--kernel')).stderr).toMatch(/ERR_PERSISTENT_NOT_FOUND/);
  });
});

describe('the session --persistent verbs', () => {
  it('session create|cat|snapshot|rm --persistent, with the session flags; ls lists the buffer', async () => {
    const { Command } = await import('commander');
    const { addCommand } = await import('../command.ts');
    const { addListingCommand, addPersistentSessionVerbs, persistentSessionCreate, persistentSessionSnapshot } =
      await import('./persistent.ts');
    let stdout = '';
    let stderr = '';
    const io = { stdout: (t: string) => (stdout += t), stderr: (t: string) => (stderr += t) };
    persistentSessionCreate('sess/flight', { events: ['a:x,a:y'], mode: 'discard', bufferSize: '32K', dir }, io);
    expect(stdout).toBe(`created user buffer sess/flight: ${dir}/sess/flight.evrb (32K, discard)\n`);
    await writeAndDie('sess/flight', 10);

    const program = new Command('evtrace').exitOverride();
    program.configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
    const session = addCommand(program, 'session');
    addPersistentSessionVerbs(session, io);
    addListingCommand(program, 'ls', io);
    stdout = '';
    await program.parseAsync(['ls', '--no-agent', '--json', '--dir', dir], { from: 'user' });
    expect(JSON.parse(stdout).buffers).toContainEqual(
      expect.objectContaining({ name: 'sess/flight', mode: 'discard', size: 32768, classes: ['a:x', 'a:y'] }),
    );
    stdout = '';
    await program.parseAsync(['session', 'cat', 'sess/flight', '--persistent', '--json', '--dir', dir], {
      from: 'user',
    });
    expect(
      stdout
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l).class),
    ).toEqual(Array.from({ length: 10 }, (_, i) => (i % 2 ? 'a:y' : 'a:x')));
    stdout = '';
    persistentSessionSnapshot('sess/flight', { output: dir, dir }, io);
    const file = stdout.trim();
    expect(file).toMatch(new RegExp(`^${dir}/sess\\.flight\\.[0-9T-]+Z\\.pages$`));
    expect(stderr).toMatch(/snapshot of sess\/flight: 10 records, 4096 bytes/);
    expect(readFileSync(file).length).toBe(4096);
    await expect(program.parseAsync(['session', 'rm', 'sess/flight', '--dir', dir], { from: 'user' })).rejects.toThrow(
      /add --persistent \(agent sessions: session destroy\)/,
    );
    await program.parseAsync(['session', 'rm', 'sess/flight', '--persistent', '--dir', dir], { from: 'user' });
    expect(existsSync(join(dir, 'sess'))).toBe(false);
  });
});

describe('evtrace session --persistent (the session verb)', () => {
  it('session create|cat|snapshot|rm --persistent go to the persistent buffers, no agent needed', async () => {
    const created = await run(
      'session',
      'create',
      'sv/flight',
      '--persistent',
      '--mode',
      'overwrite',
      '--events',
      'app:a',
      '--buffer-size',
      '32K',
      '--dir',
      dir,
    );
    expect(created.stderr).toBe('');
    expect(created.code).toBe(ExitCode.Ok);
    expect(created.stdout).toBe(`created user buffer sv/flight: ${dir}/sv/flight.evrb (32K, overwrite)\n`);
    await writeAndDie('sv/flight', 20);
    const ls = await run('ls', '--no-agent', '--json', '--dir', dir);
    expect(JSON.parse(ls.stdout).buffers).toContainEqual(
      expect.objectContaining({ name: 'sv/flight', size: 32768, classes: ['app:a'], writers: 0 }),
    );
    // One listing of buffers: `persistent ls` is the same command and prints the same; `session ls` lists sessions.
    // (Kernel buffers are the whole machine's and may be recording meanwhile: the user-space ones of --dir are compared.)
    const userSpace = (r: { code: number; stdout: string; stderr: string }) => ({
      ...r,
      stdout: JSON.parse(r.stdout).buffers.filter((b: { backend: string }) => b.backend === 'user'),
    });
    expect(userSpace(await run('persistent', 'ls', '--no-agent', '--json', '--dir', dir))).toEqual(userSpace(ls));
    const sessionLs = await run('session', 'ls', '--persistent', '--dir', dir);
    expect(sessionLs.code).toBe(ExitCode.Usage);
    expect(sessionLs.stderr).toMatch(/^evtrace: ERR_CLI_USAGE: unknown option '--persistent'/);
    const cat = await run('session', 'cat', 'sv/flight', '--persistent', '--json', '--dir', dir);
    expect(cat.stdout.trimEnd().split('\n')).toHaveLength(20);
    const snap = await run('session', 'snapshot', 'sv/flight', '--persistent', '-o', dir, '--dir', dir);
    expect(snap.code).toBe(ExitCode.Ok);
    expect(readFileSync(snap.stdout.trim()).length).toBe(4096);
    expect((await run('session', 'rm', 'sv/flight', '--persistent', '--dir', dir)).code).toBe(ExitCode.Ok);
    expect(existsSync(join(dir, 'sv'))).toBe(false);
  });
});
