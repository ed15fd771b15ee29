/**
 * The listen address of the configuration, shared by the file, the environment and the flags (sizes and durations
 * are ../units.ts, shared with every command). Each parser returns undefined for text it does not accept; callers
 * name the setting in their error.
 */

/** A TCP address to listen on. */
export interface ListenAddress {
  /** An IPv4 or IPv6 address or a host name; IPv6 without brackets. */
  readonly host: string;
  /** 0 lets the system choose a free port. */
  readonly port: number;
}

/** What {@link parseListenAddress} accepts, for messages. */
export const LISTEN_SYNTAX = 'HOST:PORT such as 127.0.0.1:9464, [::1]:9464 or localhost:9464, or off';

/**
 * `127.0.0.1:9464`, `[::1]:9464`, `localhost:9464`, `:9464` (every interface). Returns null for `off` (no endpoint),
 * undefined for anything else.
 */
export function parseListenAddress(text: string): ListenAddress | null | undefined {
  const t = text.trim();
  if (t === 'off' || t === 'false' || t === 'none') return null;
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]*)):(\d{1,5})$/.exec(t);
  if (m === null) return undefined;
  const port = Number(m[3]);
  if (port > 65535) return undefined;
  const host = m[1] ?? (m[2] === '' ? '0.0.0.0' : m[2]!);
  if (m[2] !== undefined && m[2] !== '' && !validHostName(m[2])) return undefined;
  return { host, port };
}

function validHostName(host: string): boolean {
  return (
    host.length <= 253 &&
    host.split('.').every((label) => /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(label))
  );
}

/** Renders an address the way URLs write it (IPv6 in brackets). */
export function formatListenAddress(address: ListenAddress): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}
