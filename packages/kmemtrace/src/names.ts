/**
 * Cache names shared by the events that carry them. Decoders give every event its own copy of a name (a slice of
 * the line or page it was read from), and the analysis compares the cache names of each object's allocation and
 * free: identical strings compare by pointer, copies by content, a large share of the analysis otherwise
 * (packages/kmemtrace/src/analyze.bench.ts prints its speed). Kernels have a few hundred caches; the table stops
 * growing at 4096 names so hostile input cannot grow it without bound.
 */
const names = new Map<string, string>();
const MAX_NAMES = 4096;

/** The shared copy of a cache name. */
export function internName(name: string): string {
  const known = names.get(name);
  if (known !== undefined) return known;
  if (names.size >= MAX_NAMES) return name;
  // A copy of its own: a slice would keep the whole text or page it was cut from alive.
  const own = Buffer.from(name, 'utf8').toString('utf8');
  names.set(own, own);
  return own;
}
