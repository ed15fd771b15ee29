/**
 * The agent acts for its caller: every path a request names is opened with the rights of the peer that sent it,
 * never with the agent's. {@link asCaller} switches the calling thread's file-system identity (fsuid, fsgid and
 * supplementary groups, per-thread system calls through koffi) to the peer's for the span of a synchronous function,
 * and back. With an fsuid other than 0 the kernel drops CAP_DAC_OVERRIDE and the other file capabilities of that
 * thread, so permission checks, symlink targets and the owner of every file created are exactly what the peer would
 * get by itself, from the check to the write. Only synchronous fs calls belong in `fn`: async ones run on libuv's
 * threads, which keep the agent's identity.
 */
import { userName } from '@evtrace/persistent-events';
import { AgentError } from './errors.ts';
import { libcFunction } from './libc.ts';
import type { PeerCredentials } from './peercred.ts';

/** Whose rights a path is opened with: a peer's credentials (pid aside) as saved with its sessions. */
export interface Caller {
  readonly uid: number;
  readonly gid: number;
  readonly groups: readonly number[];
  readonly umask: number;
}

/** The caller of a peer's requests. */
export const callerOf = (peer: PeerCredentials): Caller => ({
  uid: peer.uid,
  gid: peer.gid,
  groups: [...peer.groups],
  umask: peer.umask,
});

/** `setgroups` by number: glibc's wrapper changes every thread of the process, the system call only the caller's. */
const SYS_SETGROUPS: Partial<Record<NodeJS.Architecture, number>> = { x64: 116, arm64: 159 };

interface Libc {
  setfsuid(uid: number): number;
  setfsgid(gid: number): number;
  syscall(...args: unknown[]): number;
}
let libc: Libc | undefined;

function load(): Libc {
  libc ??= {
    setfsuid: libcFunction('int setfsuid(uint32_t fsuid)'),
    setfsgid: libcFunction('int setfsgid(uint32_t fsgid)'),
    syscall: libcFunction('long syscall(long number, ...)'),
  };
  return libc;
}

/** An id no one has: set*id with it changes nothing and returns the current value. */
const NO_ID = 0xffffffff;

function setGroups(f: Libc, groups: readonly number[]): boolean {
  const nr = SYS_SETGROUPS[process.arch];
  if (nr === undefined) return false;
  const list = Buffer.alloc(Math.max(4, groups.length * 4));
  for (const [i, g] of groups.entries()) list.writeUInt32LE(g, i * 4);
  return Number(f.syscall(nr, 'long', groups.length, 'void *', list)) === 0;
}

/** Whether the agent's own rights already are the caller's (root's requests, or its own user's). */
export function actsAsItself(caller: Caller | undefined): boolean {
  const own = process.getuid?.() ?? 0;
  return caller === undefined || caller.uid === own || caller.uid === 0;
}

/** `user NAME (uid N)` for messages. */
export const callerName = (caller: Caller) => `${userName(caller.uid)} (uid ${caller.uid})`;

let switched: Caller | undefined;

/**
 * Runs `fn` with the caller's file-system identity and umask on this thread (directly when the agent's own rights
 * are the caller's: root, or its own user). @throws AgentError ERR_AGENT_PERMISSION when the kernel does not let the
 * agent take that identity (an agent that is not root cannot act for another user).
 */
export function asCaller<T>(caller: Caller | undefined, fn: () => T): T {
  if (caller === undefined) return fn();
  if (switched !== undefined) {
    if (switched === caller) return fn();
    throw new AgentError('ERR_AGENT_INTERNAL', `acting for uid ${caller.uid} while acting for uid ${switched.uid}`);
  }
  const umask = process.umask(caller.umask);
  try {
    if (actsAsItself(caller)) return fn();
    const f = load();
    const own = { uid: process.geteuid?.() ?? 0, gid: process.getegid?.() ?? 0, groups: process.getgroups?.() ?? [] };
    const back = () => {
      f.setfsuid(own.uid);
      f.setfsgid(own.gid);
      setGroups(f, own.groups);
      if (f.setfsuid(NO_ID) !== own.uid || f.setfsgid(NO_ID) !== own.gid)
        throw new AgentError('ERR_AGENT_INTERNAL', 'cannot take the agent its own file-system identity back');
    };
    try {
      switched = caller;
      const ok = setGroups(f, caller.groups);
      f.setfsgid(caller.gid);
      f.setfsuid(caller.uid);
      // set*fsid report failure only by leaving the value unchanged: read both back.
      if (!ok || f.setfsgid(NO_ID) !== caller.gid || f.setfsuid(NO_ID) !== caller.uid)
        throw new AgentError(
          'ERR_AGENT_PERMISSION',
          `the agent (uid ${own.uid}) cannot act for ${callerName(caller)}: only an agent running as root opens paths for other users`,
        );
      return fn();
    } finally {
      switched = undefined;
      back();
    }
  } finally {
    process.umask(umask);
  }
}
