/**
 * The directories a user-space buffer is created in, opened one by one without following symbolic links and checked
 * through their descriptors, so that another user cannot redirect a creation. The buffer directory (shared, like
 * /dev/shm itself) must be the caller's own, or root's and sticky when others may write to it: the owner of a shared
 * directory could otherwise remove or replace everybody's buffers. Every namespace directory below it must belong to
 * the caller. Entries are then made through the open directory (`/proc/self/fd/N/ENTRY`), so that renaming a
 * directory after the check changes nothing.
 */
import { closeSync, constants, fchmodSync, fstatSync, mkdirSync, openSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { fsError, PersistentError } from './errors.ts';
import { userName } from './users.ts';

const DIRECTORY = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** The path of `entry` in the directory open as `fd`, resolved through the descriptor rather than by name. */
export function entryOf(fd: number, entry: string): string {
  return `/proc/self/fd/${fd}/${entry}`;
}

const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, '0');

/** Opens the directory `path` (named `via`, perhaps through a parent's descriptor) refusing a symbolic link. */
function openDirectory(path: string, via: string, what: string): number {
  try {
    return openSync(via, DIRECTORY);
  } catch (error) {
    const errno = (error as NodeJS.ErrnoException).code;
    if (errno === 'ELOOP' || errno === 'ENOTDIR')
      throw new PersistentError(
        'ERR_PERSISTENT_PERMISSION',
        `${what} ${path} is a symbolic link or not a directory: refused, since whoever made it could send the buffer elsewhere`,
        { path, errno },
      );
    throw fsError(path, error, `cannot open the ${what}`);
  }
}

/** Refuses a buffer directory that someone other than the caller or root could empty or fill with traps. */
function checkBase(path: string, st: Stats, uid: number): void {
  if (st.uid === uid) return;
  if (st.uid !== 0)
    throw new PersistentError(
      'ERR_PERSISTENT_PERMISSION',
      `buffer directory ${path} belongs to ${userName(st.uid)}, not to root or you (${userName(uid)}): its owner could remove or replace your buffers; use a directory of your own (--dir, EVTRACE_PERSISTENT_DIR) or have root make this one (install -d -m 1777 ${path})`,
      { path },
    );
  if ((st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0)
    throw new PersistentError(
      'ERR_PERSISTENT_PERMISSION',
      `buffer directory ${path} is writable by others but not sticky (mode ${octal(st.mode)}): anyone could remove or replace your buffers; make it sticky (chmod +t ${path}) or use a directory of your own`,
      { path },
    );
}

/**
 * Makes (or checks) `base` and the namespace directories `parts` below it, and returns a descriptor of the last one
 * for the caller to create the buffer's file through ({@link entryOf}) and close. A buffer directory made here is
 * sticky and world-writable like /tmp; namespace directories are the caller's, mode 0755.
 *
 * @throws PersistentError `ERR_PERSISTENT_PERMISSION` for a symbolic link, a buffer directory of another user (or root's,
 *   writable by others and not sticky), or a namespace directory of another user; `ERR_PERSISTENT_IO` and others from the system.
 */
export function openNamespace(base: string, parts: readonly string[]): number {
  const uid = process.geteuid?.() ?? 0;
  let made: string | undefined;
  try {
    made = mkdirSync(base, { recursive: true });
  } catch (error) {
    throw fsError(base, error, 'cannot create the buffer directory');
  }
  let fd = openDirectory(base, base, 'buffer directory');
  try {
    const st = fstatSync(fd);
    checkBase(base, st, uid);
    // A directory made here is shared by every user, each owning their buffers, like /tmp; a given one is kept as is.
    if (made !== undefined && st.uid === uid) fchmodSync(fd, 0o1777);
    let path = base;
    for (const part of parts) {
      path = join(path, part);
      let created = true;
      try {
        mkdirSync(entryOf(fd, part), 0o700);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
          throw fsError(path, error, 'cannot create a namespace directory');
        created = false;
      }
      const child = openDirectory(path, entryOf(fd, part), 'namespace directory');
      closeSync(fd);
      fd = child;
      const owner = fstatSync(fd).uid;
      if (owner !== uid)
        throw new PersistentError(
          'ERR_PERSISTENT_PERMISSION',
          `namespace directory ${path} belongs to ${userName(owner)}, not to you (${userName(uid)}): its owner could remove or replace your buffer; choose another name`,
          { path },
        );
      // Whatever the umask: others must reach the buffers their group or mode lets them open.
      if (created) fchmodSync(fd, 0o755);
    }
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}
