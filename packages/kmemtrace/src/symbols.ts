import type { Kallsyms } from '@evtrace/trace-format';
import type { AddressKeys } from './address.ts';
import { hexAddress } from './address.ts';

/** Names for address keys: `symbol+0xoff` through kallsyms (memoized per call site), hex otherwise. */
export function addressNamer(
  keys: AddressKeys,
  kallsyms?: Kallsyms,
): { siteName: (key: number) => string; ptrName: (key: number) => string; siteOrder: (key: number) => number } {
  const names = new Map<number, string>();
  return {
    siteName(key) {
      let s = names.get(key);
      if (s === undefined) {
        const addr = keys.address(key);
        s = kallsyms?.format(addr) ?? hexAddress(addr);
        names.set(key, s);
      }
      return s;
    },
    ptrName: (key) => keys.hex(key),
    siteOrder: (key) => key,
  };
}
