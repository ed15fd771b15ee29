import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
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
      'ERR_PERSISTENT_PERMISSION: permission denied: cannot open buffer perm/app/flight for reading',
    );
    expect(stranger.stdout).toContain(`owner root, group ${GROUP}, mode 0640; you are ${STRANGER}`);
    // The group may not write (read-only group access by default).
    const write = await runNode(
      `import { openPersistent } from ${JSON.stringify(INDEX)};
       try { openPersistent('perm/app/flight', { dir: ${JSON.stringify(dir)} }); console.log('opened'); }
       catch (e) { console.log(e.code); }`,
      { user: MEMBER },
    );
    expect(write.stdout.trim()).toBe('ERR_PERSISTENT_PERMISSION');
    w.close();
    buf.close();
  });

  it('without a group nobody but the owner may open it', async () => {
    const buf = openPersistent('perm/private', { dir, create: { size: 8192 } });
    expect(statSync(buf.path).mode & 0o777).toBe(0o600);
    buf.close();
    const member = await runNode(reader('perm/private'), { user: MEMBER });
    expect(member.stdout).toMatch(/^ERR_PERSISTENT_PERMISSION: permission denied/);
  });

  it('a buffer directory evtrace makes is shared like /tmp (sticky, world-writable); namespaces are not writable by others', () => {
    const base = join(dir, 'fresh');
    const buf = openPersistent('team/app', { dir: base, create: { size: 8192 } });
    buf.close();
    expect(statSync(base).mode & 0o7777).toBe(0o1777);
    expect(statSync(join(base, 'team')).mode & 0o777).toBe(0o755);
  });

  /** Creates buffer `name` in `base` as `user` (root when undefined); the error's code and message, or 'created'. */
  const creator = async (name: string, base: string, user?: string) =>
    (
      await runNode(
        `import { openPersistent } from ${JSON.stringify(INDEX)};
         try { openPersistent(${JSON.stringify(name)}, { dir: ${JSON.stringify(base)}, create: { size: 8192 } }).close(); console.log('created'); }
         catch (e) { console.log(e.code + ': ' + e.message); }`,
        user === undefined ? {} : { user },
      )
    ).stdout.trim();
  const as = (user: string, script: string) => execFileSync('runuser', ['-u', user, '--', 'sh', '-c', script]);

  describe('where buffers are created: no symbolic link followed, no directory of another user trusted', () => {
    // A shared directory like /dev/shm, where anybody may plant a name first.
    const shm = join(dir, 'shm');
    const target = join(dir, 'target');
    beforeAll(() => {
      execFileSync('install', ['-d', '-m', '1777', shm]);
      execFileSync('install', ['-d', '-m', '0755', target]);
    });

    it('a buffer directory made by root is shared: a user gets a namespace of their own in it', async () => {
      const base = join(shm, 'shared');
      expect(await creator('root-ns/flight', base)).toBe('created');
      expect(statSync(base).mode & 0o7777).toBe(0o1777);
      expect(await creator(`${MEMBER}/flight`, base, MEMBER)).toBe('created');
      const ns = statSync(join(base, MEMBER));
      expect([ns.uid, ns.mode & 0o777]).toEqual([Number(execFileSync('id', ['-u', MEMBER])), 0o755]);
    });

    it('a namespace directory that is a symbolic link is refused; nothing is written where it points', async () => {
      const base = join(shm, 'shared');
      as(STRANGER, `ln -s ${target} ${base}/team`);
      for (const user of [undefined, MEMBER]) {
        expect(await creator('team/flight', base, user)).toBe(
          `ERR_PERSISTENT_PERMISSION: namespace directory ${base}/team is a symbolic link or not a directory: refused, since whoever made it could send the buffer elsewhere`,
        );
      }
      expect(readdirSync(target)).toEqual([]);
    });

    it("another user's namespace directory is refused, even when it lets everybody write", async () => {
      const base = join(shm, 'shared');
      as(STRANGER, `mkdir -m 0777 ${base}/trap`);
      const refusal = (user: string) =>
        `ERR_PERSISTENT_PERMISSION: namespace directory ${base}/trap belongs to ${STRANGER}, not to you (${user}): its owner could remove or replace your buffer; choose another name`;
      expect(await creator('trap/flight', base, MEMBER)).toBe(refusal(MEMBER));
      expect(await creator('trap/flight', base)).toBe(refusal('root'));
      expect(readdirSync(join(base, 'trap'))).toEqual([]);
      // Its owner uses it.
      expect(await creator('trap/flight', base, STRANGER)).toBe('created');
    });

    it('a buffer directory that is a symbolic link is refused', async () => {
      as(STRANGER, `ln -s ${target} ${shm}/evtrace`);
      expect(await creator('app/flight', join(shm, 'evtrace'))).toBe(
        `ERR_PERSISTENT_PERMISSION: buffer directory ${shm}/evtrace is a symbolic link or not a directory: refused, since whoever made it could send the buffer elsewhere`,
      );
      expect(readdirSync(target)).toEqual([]);
    });

    it('a buffer directory made by another user first is refused to everybody but its owner', async () => {
      const base = join(shm, 'first');
      expect(await creator(`${STRANGER}/flight`, base, STRANGER)).toBe('created');
      const refusal = (user: string) =>
        `ERR_PERSISTENT_PERMISSION: buffer directory ${base} belongs to ${STRANGER}, not to root or you (${user}): its owner could remove or replace your buffers; use a directory of your own (--dir, EVTRACE_PERSISTENT_DIR) or have root make this one (install -d -m 1777 ${base})`;
      expect(await creator(`${MEMBER}/flight`, base, MEMBER)).toBe(refusal(MEMBER));
      expect(await creator('root/flight', base)).toBe(refusal('root'));
      expect(readdirSync(base)).toEqual([STRANGER]);
    });

    it("root's buffer directory writable by others but not sticky is refused to a user", async () => {
      const base = join(shm, 'loose');
      execFileSync('install', ['-d', '-m', '0777', base]);
      expect(await creator(`${MEMBER}/flight`, base, MEMBER)).toBe(
        `ERR_PERSISTENT_PERMISSION: buffer directory ${base} is writable by others but not sticky (mode 0777): anyone could remove or replace your buffers; make it sticky (chmod +t ${base}) or use a directory of your own`,
      );
      execFileSync('chmod', ['+t', base]);
      expect(await creator(`${MEMBER}/flight`, base, MEMBER)).toBe('created');
    });
  });

  it('an unknown group is refused before anything is created', () => {
    expect(() => openPersistent('perm/nogroup', { dir, create: { size: 8192, group: `nosuch${tag}` } })).toThrow(
      PersistentError,
    );
    expect(() => statSync(join(dir, 'perm', 'nogroup.evrb'))).toThrow(/ENOENT/);
  });
});
