/**
 * The value syntaxes of the configuration, shared by the file, the environment and the flags. Each parser returns
 * undefined for text it does not accept; callers name the setting in their error.
 */

const SIZE_UNITS: Readonly<Record<string, number>> = {
  '': 1,
  B: 1,
  K: 1024,
  KB: 1000,
  KiB: 1024,
  M: 1024 ** 2,
  MB: 1000 ** 2,
  MiB: 1024 ** 2,
  G: 1024 ** 3,
  GB: 1000 ** 3,
  GiB: 1024 ** 3,
  T: 1024 ** 4,
  TB: 1000 ** 4,
  TiB: 1024 ** 4,
};

/** What {@link parseSize} accepts, for messages. */
export const SIZE_SYNTAX = 'a size such as 64MiB, 512KiB, 1G or a number of bytes';

/**
 * A byte count: `64MiB`, `512 KiB`, `1G` (K, M, G, T alone are binary, as in `evtrace record --buffer-kb`), `10MB`
 * (decimal), or a bare number of bytes. Fractions are allowed when the result is a whole number of bytes.
 */
export function parseSize(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*([KMGT]i?B|[KMGT]|B)?$/.exec(text.trim());
  if (m === null) return undefined;
  const scale = SIZE_UNITS[m[2] ?? ''];
  if (scale === undefined) return undefined;
  const bytes = Number(m[1]) * scale;
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** What {@link parseDuration} accepts, for messages. */
export const DURATION_SYNTAX = 'a duration such as 30s, 500ms, 10m, 1h or 1d';

/** A duration in milliseconds: `30s`, `500ms`, `10m`, `1h`, `1d`. A unit is required: `30` alone is ambiguous. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/.exec(text.trim());
  if (m === null) return undefined;
  const ms = Number(m[1]) * DURATION_UNITS[m[2]!]!;
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

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
