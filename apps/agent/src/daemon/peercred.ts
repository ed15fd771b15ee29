/**
 * Who is at the other end of a Unix socket: `getsockopt(SO_PEERCRED)` and `getsockopt(SO_PEERGROUPS)` through the
 * koffi FFI (Node has no API for them), and whether that peer may control the agent.
 */
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { libcErrno, libcFunction } from './libc.ts';

/** The peer as the kernel saw it when it connected: `struct ucred`, its supplementary groups and its umask. */
export interface PeerCredentials {
  readonly pid: number;
  readonly uid: number;
  readonly gid: number;
  /** Supplementary groups, taken by the kernel at connect (SO_PEERGROUPS), so a pid reused since cannot lend its own. */
  readonly groups: readonly number[];
  /** The peer's umask (`/proc/PID/status`), applied to what the agent creates for it; 0o022 when unknown. */
  readonly umask: number;
}

const SOL_SOCKET = 1;
const SO_PEERCRED = 17;
const SO_PEERGROUPS = 59;
const ERANGE = 34;

type GetSockOpt = (fd: number, level: number, name: number, value: Buffer, length: Uint32Array) => number;
let libc: { getsockopt: GetSockOpt; errno: () => number } | undefined;

function load() {
  libc ??= {
    getsockopt: libcFunction<GetSockOpt>(
      'int getsockopt(int fd, int level, int optname, _Out_ uint8_t *optval, _Inout_ uint32_t *optlen)',
    ),
    errno: libcErrno,
  };
  return libc;
}

/** The descriptor behind an accepted socket (Node keeps it on the pipe handle). */
function fdOf(socket: Socket): number {
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) throw new Error('the socket has no file descriptor');
  return fd;
}

/** The peer's supplementary groups as the kernel recorded them at connect. */
function peerGroups(fd: number): number[] {
  const { getsockopt, errno } = load();
  let value = Buffer.alloc(64 * 4);
  const length = new Uint32Array([value.length]);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, value, length) !== 0) {
    if (errno() !== ERANGE) throw new Error('getsockopt(SO_PEERGROUPS) failed');
    // The kernel said how many bytes it needs.
    value = Buffer.alloc(length[0]!);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, value, length) !== 0)
      throw new Error('getsockopt(SO_PEERGROUPS) failed');
  }
  const groups: number[] = [];
  for (let at = 0; at + 4 <= length[0]!; at += 4) groups.push(value.readUInt32LE(at));
  return groups;
}

/** The umask of a live process, from `/proc/PID/status` (0o022 when it is gone or does not say). */
function umaskOf(pid: number): number {
  try {
    const m = /^Umask:\s*([0-7]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    if (m !== null) return Number.parseInt(m[1]!, 8) & 0o777;
  } catch {}
  return 0o022;
}

/** Reads the peer's credentials. @throws Error when the kernel refuses (not a Unix socket). */
export function peerCredentials(socket: Socket): PeerCredentials {
  const fd = fdOf(socket);
  const value = Buffer.alloc(12);
  const length = new Uint32Array([12]);
  if (load().getsockopt(fd, SOL_SOCKET, SO_PEERCRED, value, length) !== 0)
    throw new Error('getsockopt(SO_PEERCRED) failed');
  const pid = value.readInt32LE(0);
  return {
    pid,
    uid: value.readUInt32LE(4),
    gid: value.readUInt32LE(8),
    groups: peerGroups(fd),
    umask: umaskOf(pid),
  };
}

/** The gid of a group name (or a numeric gid), from /etc/group. */
export function groupId(name: string): number | undefined {
  if (/^\d+$/.test(name)) return Number(name);
  try {
    for (const line of readFileSync('/etc/group', 'utf8').split('\n')) {
      const [n, , gid] = line.split(':');
      if (n === name && gid !== undefined) return Number(gid);
    }
  } catch {}
  return undefined;
}

/**
 * Whether `peer` may control the agent: root, the agent's own user, or a member of `gid` (primary or
 * supplementary group). Returns the reason for a refusal.
 */
export function authorize(peer: PeerCredentials, gid: number | undefined, ownUid: number): string | undefined {
  if (peer.uid === 0 || peer.uid === ownUid) return undefined;
  if (gid !== undefined && (peer.gid === gid || peer.groups.includes(gid))) return undefined;
  return `uid ${peer.uid} (pid ${peer.pid}) is not root${gid !== undefined ? ` or in group ${gid}` : ''}`;
}
