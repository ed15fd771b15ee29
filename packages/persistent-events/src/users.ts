/** User and group names from /etc/passwd and /etc/group (Node has no getpwuid). */
import { readFileSync } from 'node:fs';
import { PersistentError } from './errors.ts';

function table(file: string): string[][] {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => l.split(':'));
  } catch {
    return [];
  }
}

/** The login name of `uid`, or the number as text. */
export function userName(uid: number): string {
  return table('/etc/passwd').find((f) => Number(f[2]) === uid)?.[0] ?? String(uid);
}

/** The name of group `gid`, or the number as text. */
export function groupName(gid: number): string {
  return table('/etc/group').find((f) => Number(f[2]) === gid)?.[0] ?? String(gid);
}

/** The gid of a group given by name or number. @throws PersistentError ERR_PERSISTENT_ARGUMENT for an unknown group. */
export function groupId(group: string | number): number {
  if (typeof group === 'number' || /^\d+$/.test(group)) {
    const gid = Number(group);
    if (!Number.isInteger(gid) || gid < 0)
      throw new PersistentError('ERR_PERSISTENT_ARGUMENT', `group ${group} is not a gid`);
    return gid;
  }
  const row = table('/etc/group').find((f) => f[0] === group);
  if (!row) throw new PersistentError('ERR_PERSISTENT_ARGUMENT', `no group named ${JSON.stringify(group)}`);
  return Number(row[2]);
}
