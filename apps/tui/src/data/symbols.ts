/**
 * Kernel symbols for naming addresses (the Branches view's `symbol+off`): the trace's own kallsyms when it embeds
 * one (the symbols of the machine that recorded it), else this machine's `/proc/kallsyms` when it is readable with
 * real addresses (root, or kptr_restrict off), which fits live sources and traces recorded here.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Kallsyms } from '@evtrace/trace-format';

/** Symbols and where they came from, for the view to say. */
export interface KernelSymbols {
  readonly kallsyms: Kallsyms;
  /** `trace` (embedded in the recording) or `/proc/kallsyms`. */
  readonly origin: string;
}

/** This machine's kallsyms, or undefined when unreadable or hidden (every address 0 without privilege). */
export function procKallsyms(path = '/proc/kallsyms', text?: string): KernelSymbols | undefined {
  if (text === undefined) {
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      return undefined;
    }
  }
  // Zero addresses (kptr_restrict) are skipped by the parser: nothing left means no symbols.
  const kallsyms = Kallsyms.parse(text);
  return kallsyms.size === 0 ? undefined : { kallsyms, origin: path };
}

/**
 * Symbols for a source, looked up once on first use: `embedded` (a trace's kallsyms) first, else `/proc/kallsyms`
 * when `useProc`. With `prefetch`, `/proc/kallsyms` is read at once in the background (the kernel takes a while to
 * print it), so that the first use finds its text ready.
 */
export function lazySymbols(
  embedded: () => Kallsyms | undefined,
  useProc: boolean,
  prefetch = false,
): () => KernelSymbols | undefined {
  let done = false;
  let found: KernelSymbols | undefined;
  /** The prefetched text once read (and not yet used); null when the read failed (then first use tries again). */
  let text: string | null | undefined;
  if (useProc && prefetch) {
    readFile('/proc/kallsyms', 'utf8').then(
      (t) => {
        if (!done) text = t;
      },
      () => {
        if (!done) text = null;
      },
    );
  }
  return () => {
    if (done) return found;
    done = true;
    const own = embedded();
    found =
      own !== undefined && own.size > 0
        ? { kallsyms: own, origin: 'trace' }
        : useProc
          ? procKallsyms(undefined, text ?? undefined)
          : undefined;
    text = undefined;
    return found;
  };
}
