import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  lchownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPersistent, PersistentError } from './index.ts';
import { INDEX, runNode } from './testing/child.ts';

/** Root can create throwaway users; others skip. */
function why(): string {
  if (process.getuid?.() !== 0) return 'not root: creating test users needs root';
  for (const tool of ['useradd', 'groupadd', 'runuser']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed`;
  }
  return '';
}
const skip = why();

const tag = `${process.pid % 100000}`;
const GROUP = `evtpg${tag}`;
const MEMBER = `evtpm${tag}`;
const STRANGER = `evtps${tag}`;

describe.skipIf(skip !== '')(`permissions${skip ? ` (skipped: ${skip})` : ''}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'persistent-perm-'));
  beforeAll(() => {
    // Other users must reach the files; only the buffer's own mode may stop them.
    chmodSync(dir, 0o755);
    execFileSync('groupadd', [GROUP]);
    execFileSync('useradd', ['-M', '-N', '-G', GROUP, '-s', '/usr/sbin/nologin', MEMBER]);
    execFileSync('useradd', ['-M', '-N', '-s', '/usr/sbin/nologin', STRANGER]);
  });
  afterAll(() => {
    for (const u of [MEMBER, STRANGER]) spawnSync('userdel', [u]);
    spawnSync('groupdel', [GROUP]);
    rmSync(dir, { recursive: true, force: true });
  });

  const reader = (name: string) => `
    import { openPersistent } from ${JSON.stringify(INDEX)};
    try {
      const buf = openPersistent(${JSON.stringify(name)}, { dir: ${JSON.stringify(dir)}, readOnly: true });
      const s = buf.snapshot(); let n = 0; while (s.next()) n++;
      console.log('read ' + n);
    } catch (e) { console.log(e.code + ': ' + e.message); process.exitCode = 1; }
  `;

  it('a buffer is created with owner and group access only; the group reads it, another user is refused clearly', async () => {
    const buf = openPersistent('perm/app/flight', { dir, create: { size: 16384, group: GROUP } });
    const w = buf.writer();
    for (let i = 0; i < 10; i++) {
      w.reserve(1, 4);
      w.commit();
    }
    const st = statSync(buf.path);
    expect(st.mode & 0o777).toBe(0o640);
    expect(buf.info()).toMatchObject({ owner: 'root', group: GROUP, permissions: 0o640 });

    const member = await runNode(reader('perm/app/flight'), { user: MEMBER });
    expect(member.stdout.trim()).toBe('read 10');
    const stranger = await runNode(reader('perm/app/flight'), { user: STRANGER });
    expect(stranger.code).toBe(1);
    expect(stranger.stdout).toContain(
      'ERR_PERMISSION: permission denied: cannot open buffer perm/app/flight for reading',
    );
    expect(stranger.stdout).toContain(`owner root, group ${GROUP}, mode 0640; you are ${STRANGER}`);
    // The group may not write (read-only group access by default).
    const write = await runNode(
      `import { openPersistent } from ${JSON.stringify(INDEX)};
       try { openPersistent('perm/app/flight', { dir: ${JSON.stringify(dir)} }); console.log('opened'); }
       catch (e) { console.log(e.code); }`,
      { user: MEMBER },
    );
    expect(write.stdout.trim()).toBe('ERR_PERMISSION');
    w.close();
    buf.close();
  });

  it('without a group nobody but the owner may open it', async () => {
    const buf = openPersistent('perm/private', { dir, create: { size: 8192 } });
    expect(statSync(buf.path).mode & 0o777).toBe(0o600);
    buf.close();
    const member = await runNode(reader('perm/private'), { user: MEMBER });
    expect(member.stdout).toMatch(/^ERR_PERMISSION: permission denied/);
  });

  it('a buffer directory evtrace makes is shared like /tmp (sticky, world-writable); namespaces are not writable by others', () => {
    const base = join(dir, 'fresh');
    const buf = openPersistent('team/app', { dir: base, create: { size: 8192 } });
    buf.close();
    expect(statSync(base).mode & 0o7777).toBe(0o1777);
    expect(statSync(join(base, 'team')).mode & 0o777).toBe(0o755);
  });

  it('an unknown group is refused before anything is created', () => {
    expect(() => openPersistent('perm/nogroup', { dir, create: { size: 8192, group: `nosuch${tag}` } })).toThrow(
      PersistentError,
    );
    expect(() => statSync(join(dir, 'perm', 'nogroup.evrb'))).toThrow(/ENOENT/);
  });

  it("creates nothing below another user's directory, a symbolic link, or a world-writable directory without the sticky bit", () => {
    const stranger = Number(execFileSync('id', ['-u', STRANGER]).toString());
    const create = (name: string, base: string) => () =>
      openPersistent(name, { dir: base, create: { size: 8192 } }).close();
    // The shared directory made first by someone else: they could remove or swap what others put in it.
    const theirs = join(dir, 'theirs');
    mkdirSync(theirs);
    chownSync(theirs, stranger, stranger);
    chmodSync(theirs, 0o1777);
    expect(create('team/app', theirs)).toThrow(
      new RegExp(`the buffer directory ${theirs} belongs to ${STRANGER}, who could replace or remove buffers in it`),
    );
    expect(readdirSync(theirs)).toEqual([]);
    // A namespace directory planted as a link to elsewhere in a shared directory.
    const shared = join(dir, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const elsewhere = join(dir, 'elsewhere');
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, join(shared, 'team'));
    lchownSync(join(shared, 'team'), stranger, stranger);
    expect(create('team/app', shared)).toThrow(
      new RegExp(`the namespace directory ${shared}/team is a symbolic link: buffers are created only below real`),
    );
    expect(readdirSync(elsewhere)).toEqual([]);
    // Writable by anybody without the sticky bit.
    const open = join(dir, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    expect(create('x', open)).toThrow(/may be written by anybody \(mode 0777\) and is not sticky/);
    expect(readdirSync(open)).toEqual([]);
    // The same names in a directory of root's, sticky as evtrace makes it: created.
    create('team/app', join(dir, 'fine'))();
    expect(statSync(join(dir, 'fine', 'team', 'app.evrb')).uid).toBe(0);
  });
});
