/**
 * Sizes and durations: one grammar each, for every command's options and for the agent's configuration (file,
 * environment, flags). The parsers return undefined for text they do not accept; {@link sizeOption} and
 * {@link durationOption} turn that into a usage error naming the option.
 *
 * A size is a number of bytes, or a number and a unit: `k`, `m`, `g`, `t` in either case and `KiB`, `MiB`, `GiB`,
 * `TiB` are powers of 1024 (as `trace-cmd record -b` and `perf record -m` count); `KB`, `MB`, `GB`, `TB` are powers
 * of 1000; `B` is bytes. A fraction is allowed when the result is a whole number of bytes (`1.5G`). Space may
 * separate the number from its unit. `Mb` (bits) and `mib` are refused rather than guessed.
 *
 * A duration is a number and a unit: `ms`, `s`, `m` (minutes), `h`, `d`, fractions allowed (`1.5s`); a number
 * alone is seconds, as `sleep` and `timeout` read it. It is never zero or negative.
 */
import { usageError } from './exit-codes.ts';

const SIZE_UNITS: Readonly<Record<string, number>> = {
  '': 1,
  B: 1,
  k: 1024,
  K: 1024,
  KiB: 1024,
  KB: 1000,
  m: 1024 ** 2,
  M: 1024 ** 2,
  MiB: 1024 ** 2,
  MB: 1000 ** 2,
  g: 1024 ** 3,
  G: 1024 ** 3,
  GiB: 1024 ** 3,
  GB: 1000 ** 3,
  t: 1024 ** 4,
  T: 1024 ** 4,
  TiB: 1024 ** 4,
  TB: 1000 ** 4,
};

/** Examples of a size, for messages. */
export const SIZE_EXAMPLES = '16m, 1g, 4096';

/** What {@link parseSize} accepts, for messages. */
export const SIZE_SYNTAX = 'a size such as 64MiB, 512KiB, 16m, 1G or a number of bytes';

/** A byte count (see the module's grammar), or undefined. */
export function parseSize(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*([A-Za-z]*)$/.exec(text.trim());
  if (m === null || !Object.hasOwn(SIZE_UNITS, m[2]!)) return undefined;
  const bytes = Number(m[1]) * SIZE_UNITS[m[2]!]!;
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

const DURATION_UNITS: Readonly<Record<string, number>> = {
  '': 1000,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** Examples of a duration, for messages. */
export const DURATION_EXAMPLES = '10s, 500ms, 2m, 1h';

/** What {@link parseDuration} accepts, for messages. */
export const DURATION_SYNTAX = 'a duration such as 30s, 500ms, 10m, 1h or 1d';

/** A positive duration in milliseconds (see the module's grammar), or undefined. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/.exec(text.trim());
  if (m === null || !Object.hasOwn(DURATION_UNITS, m[2]!)) return undefined;
  const ms = Number(m[1]) * DURATION_UNITS[m[2]!]!;
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

/** The size an option gives; a usage error naming the option otherwise (`--size: "12q" is not a size ...`). */
export function sizeOption(flag: string, text: string): number {
  const bytes = parseSize(text);
  if (bytes === undefined) throw usageError(`${flag}: ${JSON.stringify(text)} is not a size (e.g. ${SIZE_EXAMPLES})`);
  return bytes;
}

/** The duration an option gives, in milliseconds; a usage error naming the option otherwise. */
export function durationOption(flag: string, text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined)
    throw usageError(`${flag}: ${JSON.stringify(text)} is not a duration (e.g. ${DURATION_EXAMPLES})`);
  return ms;
}

/**
 * When an output moves on to a new file (`--rotate`, `rotate =`): a duration with its unit (`30s`, `5m`: in a
 * rotation `m` is minutes) or a size with its unit (`64M`, `100MiB`). A number alone could be either and is refused.
 */
export function parseRotate(text: string): { bytes: number } | { seconds: number } | undefined {
  if (!/[A-Za-z]$/.test(text.trim())) return undefined;
  const ms = parseDuration(text);
  if (ms !== undefined) return { seconds: ms / 1000 };
  const bytes = parseSize(text);
  return bytes === undefined || bytes === 0 ? undefined : { bytes };
}

/** The rotation an option gives; a usage error naming the option otherwise, or when it is under a second. */
export function rotateOption(flag: string, text: string): { bytes: number } | { seconds: number } {
  const rotate = parseRotate(text);
  if (rotate === undefined)
    throw usageError(`${flag}: ${JSON.stringify(text)} is neither a size with its unit (64M) nor a duration (30s, 5m)`);
  if ('seconds' in rotate && rotate.seconds < 1)
    throw usageError(`${flag}: rotating more than once a second (${JSON.stringify(text)}) is not supported`);
  return rotate;
}
