/**
 * systemd's readiness and watchdog protocol (sd_notify(3)) for a `Type=notify` unit: each notification is one
 * datagram on the Unix socket $NOTIFY_SOCKET names (abstract when it starts with '@'). node:dgram has no Unix datagram
 * sockets, so socket(2) and sendto(2) through the FFI, as peercred.ts does for getsockopt.
 */
import { libcErrno, libcFunction } from './libc.ts';

const AF_UNIX = 1;
const SOCK_DGRAM = 2;
const SOCK_CLOEXEC = 0o2000000;
const MSG_NOSIGNAL = 0x4000;
/** sizeof(sun_path) in `struct sockaddr_un`. */
const SUN_PATH = 108;

type Socket = (domain: number, type: number, protocol: number) => number;
type SendTo = (fd: number, data: Buffer, length: number, flags: number, addr: Buffer, addrLength: number) => number;
type Close = (fd: number) => number;

/** Tells systemd how the service is doing; every method is a no-op once closed. */
export interface SystemdNotifier {
  /** READY=1 (and a STATUS= line): the control socket is listening. */
  ready(status: string): void;
  /** STOPPING=1: the service is shutting down. */
  stopping(): void;
  /** The watchdog interval asked for (WATCHDOG_USEC), in milliseconds, if any. */
  readonly watchdogMs: number | undefined;
  /** Stops the watchdog pings and closes the socket. */
  close(): void;
}

/** `struct sockaddr_un` for a NOTIFY_SOCKET value, and its length as the kernel takes it. */
export function notifySocketAddress(name: string): Buffer {
  const abstract = name.startsWith('@');
  if (!abstract && !name.startsWith('/'))
    throw new Error(`NOTIFY_SOCKET must be an absolute path or start with @: '${name}'`);
  const path = Buffer.from(abstract ? `\0${name.slice(1)}` : name);
  if (path.length >= SUN_PATH) throw new Error(`NOTIFY_SOCKET is longer than ${SUN_PATH - 1} bytes: '${name}'`);
  // An abstract name is exactly its bytes; a path ends with its NUL.
  const addr = Buffer.alloc(2 + path.length + (abstract ? 0 : 1));
  addr.writeUInt16LE(AF_UNIX, 0);
  path.copy(addr, 2);
  return addr;
}

/**
 * A notifier for the socket in `env.NOTIFY_SOCKET`, or undefined when the service manager asked for none. When
 * WATCHDOG_USEC is set (for this process: WATCHDOG_PID, if set, names it), WATCHDOG=1 goes out every half interval
 * from the event loop, so a loop that stalls stops the pings and systemd restarts the agent.
 */
export function systemdNotifier(env: NodeJS.ProcessEnv = process.env): SystemdNotifier | undefined {
  const name = env.NOTIFY_SOCKET;
  if (name === undefined || name === '') return undefined;
  const addr = notifySocketAddress(name);
  const usec = Number(env.WATCHDOG_USEC);
  const forUs = env.WATCHDOG_PID === undefined || Number(env.WATCHDOG_PID) === process.pid;
  // As sd_notify(3)'s unset_environment: the programs sessions run must not speak to systemd for the agent.
  delete env.NOTIFY_SOCKET;
  delete env.WATCHDOG_USEC;
  delete env.WATCHDOG_PID;
  const socket = libcFunction<Socket>('int socket(int domain, int type, int protocol)');
  const sendto = libcFunction<SendTo>(
    'long sendto(int fd, const uint8_t *buf, size_t len, int flags, const uint8_t *addr, uint32_t addrlen)',
  );
  const close = libcFunction<Close>('int close(int fd)');
  let fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw new Error(`cannot notify systemd: socket(AF_UNIX, SOCK_DGRAM) failed (errno ${libcErrno()})`);
  const send = (state: string) => {
    if (fd < 0) return;
    const data = Buffer.from(state);
    if (sendto(fd, data, data.length, MSG_NOSIGNAL, addr, addr.length) < 0) {
      throw new Error(`cannot notify systemd at ${name}: sendto failed (errno ${libcErrno()})`);
    }
  };
  const watchdogMs = Number.isSafeInteger(usec) && usec > 0 && forUs ? Math.max(1, Math.floor(usec / 1000)) : undefined;
  let timer: NodeJS.Timeout | undefined;
  return {
    watchdogMs,
    ready(status) {
      send(`READY=1\nSTATUS=${status.replaceAll('\n', ' ')}\n`);
      if (watchdogMs !== undefined && timer === undefined) {
        send('WATCHDOG=1\n');
        // A ping that cannot be sent is not retried: systemd acts on the missing one.
        const ping = () => {
          try {
            send('WATCHDOG=1\n');
          } catch {}
        };
        timer = setInterval(ping, Math.max(1, Math.floor(watchdogMs / 2)));
        timer.unref();
      }
    },
    stopping() {
      send('STOPPING=1\n');
    },
    close() {
      clearInterval(timer);
      if (fd >= 0) close(fd);
      fd = -1;
    },
  };
}
