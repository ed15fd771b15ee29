/** The kernel's CPU list syntax (`cpulist_parse`, lib/bitmap-str.c): `0-3,5,8-15:2/4`, `N` for the last CPU, `all`. */

const isSpaceOrComma = (c: string | undefined): boolean =>
  c === ',' || c === ' ' || c === '\t' || c === '\n' || c === '\v' || c === '\f' || c === '\r' || c === '\xa0';
const endOfStr = (c: string | undefined): boolean => c === undefined || c === '\n';
const endOfRegion = (c: string | undefined): boolean => isSpaceOrComma(c) || endOfStr(c);

/** Parses a CPU list for a machine with `nbits` possible CPUs; undefined when the kernel would refuse it. */
export function parseCpuList(text: string, nbits: number): Set<number> | undefined {
  const cpus = new Set<number>();
  const last = nbits - 1;
  let i = 0;
  const num = (): number | undefined => {
    if (text[i] === 'N') {
      i++;
      return last;
    }
    const start = i;
    while (i < text.length && text[i]! >= '0' && text[i]! <= '9') i++;
    if (i === start) return undefined;
    const n = Number(text.slice(start, i));
    return n > 0xffffffff ? undefined : n;
  };
  for (;;) {
    while (i < text.length && isSpaceOrComma(text[i])) i++;
    if (endOfStr(text[i])) return cpus;
    let start: number | undefined;
    let end: number | undefined;
    let off: number | undefined;
    let group: number | undefined;
    if (text.slice(i, i + 3).toLowerCase() === 'all') {
      start = 0;
      end = last;
      i += 3;
    } else {
      start = num();
      if (start === undefined) return undefined;
      if (endOfRegion(text[i])) end = start;
      else {
        if (text[i] !== '-') return undefined;
        i++;
        end = num();
        if (end === undefined) return undefined;
      }
    }
    if (!endOfRegion(text[i])) {
      if (text[i] !== ':') return undefined;
      i++;
      off = num();
      if (off === undefined || text[i] !== '/') return undefined;
      i++;
      group = num();
      if (group === undefined) return undefined;
    } else {
      off = end + 1;
      group = end + 1;
    }
    if (start > end || group === 0 || off > group || end >= nbits || end < 0) return undefined;
    for (let s = start; s <= end; s += group) {
      for (let c = s; c < s + Math.min(end - s + 1, off); c++) cpus.add(c);
    }
    if (endOfStr(text[i])) return cpus;
  }
}
