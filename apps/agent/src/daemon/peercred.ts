/**
 * Who is at the other end of a Unix socket: `getsockopt(SO_PEERCRED)` through the koffi FFI (Node has no API for
 * it), and whether that peer may control the agent.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';

/** The kernel's `struct ucred` of the peer, taken when it connected. */
export interface PeerCredentials {
  readonly pid: number;
  readonly uid: number;
  readonly gid: number;
}

const SOL_SOCKET = 1;
const SO_PEERCRED = 17;

type GetSockOpt = (fd: number, level: number, name: number, value: Buffer, length: Uint32Array) => number;
let getsockopt: GetSockOpt | undefined;

function load(): GetSockOpt {
  if (getsockopt) return getsockopt;
  const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
  const lib = koffi.load('libc.so.6');
  getsockopt = lib.func(
    'int getsockopt(int fd, int level, int optname, _Out_ uint8_t *optval, _Inout_ uint32_t *optlen)',
  ) as GetSockOpt;
  return getsockopt;
}

/** The descriptor behind an accepted socket (Node keeps it on the pipe handle). */
function fdOf(socket: Socket): number {
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) throw new Error('the socket has no file descriptor');
  return fd;
}

/** Reads the peer's credentials. @throws Error when the kernel refuses (not a Unix socket). */
export function peerCredentials(socket: Socket): PeerCredentials {
  const value = Buffer.alloc(12);
  const length = new Uint32Array([12]);
  if (load()(fdOf(socket), SOL_SOCKET, SO_PEERCRED, value, length) !== 0)
    throw new Error('getsockopt(SO_PEERCRED) failed');
  return { pid: value.readInt32LE(0), uid: value.readUInt32LE(4), gid: value.readUInt32LE(8) };
}

/** The supplementary groups of a live process, from `/proc/PID/status` (empty when it is gone). */
function groupsOf(pid: number): number[] {
  try {
    const line = /^Groups:\s*(.*)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? '';
    return line.split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
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
  if (gid !== undefined && (peer.gid === gid || groupsOf(peer.pid).includes(gid))) return undefined;
  return `uid ${peer.uid} (pid ${peer.pid}) is not root${gid !== undefined ? ` or in group ${gid}` : ''}`;
}
