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

/** FNV-1a, 32 bits: a parser that reads a name's bytes anyway hashes them on the way (`h = Math.imul(h ^ byte, FNV_PRIME)` from `FNV_OFFSET`). */
export const FNV_OFFSET = 0x811c9dc5 | 0;
export const FNV_PRIME = 0x01000193;

/** The FNV-1a hash of some bytes, as {@link ByteNames} keys them. */
export function hashBytes(source: Uint8Array, from: number, to: number): number {
  let h = FNV_OFFSET;
  for (let i = from; i < to; i++) h = Math.imul(h ^ source[i]!, FNV_PRIME);
  return h;
}

/**
 * Texts read from bytes, each distinct byte string given a dense id (0, 1, 2, ...) without making a string: a parser
 * meets the same call sites, gfp flag texts and cache names on most lines, and a string per line and field cost more
 * than the parsing. The text of an id is decoded (UTF-8) once, when asked for.
 */
export class ByteNames {
  #bytes = new Uint8Array(4096);
  #used = 0;
  #starts = new Int32Array(256);
  #ends = new Int32Array(256);
  #hashes = new Int32Array(256);
  /** Open addressing: id + 1 per slot, 0 when empty. */
  #slots = new Int32Array(512);
  #size = 0;
  readonly #texts: (string | undefined)[] = [];

  /** How many distinct texts. */
  get size(): number {
    return this.#size;
  }

  /** The id of the bytes `from` to `to` of `source` (whose {@link hashBytes} is `h`), adding them when new. */
  id(source: Uint8Array, from: number, to: number, h = hashBytes(source, from, to)): number {
    const mask = this.#slots.length - 1;
    const length = to - from;
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const slot = this.#slots[s]!;
      if (slot === 0) break;
      const id = slot - 1;
      if (this.#hashes[id] !== h) continue;
      const start = this.#starts[id]!;
      if (this.#ends[id]! - start !== length) continue;
      const bytes = this.#bytes;
      let i = 0;
      while (i < length && bytes[start + i] === source[from + i]) i++;
      if (i === length) return id;
    }
    return this.#add(source, from, to, h);
  }

  /** The text of an id. */
  text(id: number): string {
    let t = this.#texts[id];
    if (t === undefined) {
      t = Buffer.from(this.#bytes.buffer, this.#bytes.byteOffset, this.#used).toString(
        'utf8',
        this.#starts[id],
        this.#ends[id],
      );
      this.#texts[id] = t;
    }
    return t;
  }

  #add(source: Uint8Array, from: number, to: number, h: number): number {
    const length = to - from;
    if (this.#used + length > this.#bytes.length) {
      const grown = new Uint8Array(Math.max(this.#bytes.length * 2, this.#used + length));
      grown.set(this.#bytes.subarray(0, this.#used));
      this.#bytes = grown;
    }
    this.#bytes.set(source.subarray(from, to), this.#used);
    const id = this.#size++;
    if (id === this.#starts.length) {
      this.#starts = grow(this.#starts);
      this.#ends = grow(this.#ends);
      this.#hashes = grow(this.#hashes);
    }
    this.#starts[id] = this.#used;
    this.#ends[id] = this.#used + length;
    this.#hashes[id] = h;
    this.#used += length;
    if (this.#size * 2 > this.#slots.length) this.#rehash();
    else this.#place(id);
    return id;
  }

  #place(id: number): void {
    const mask = this.#slots.length - 1;
    let s = this.#hashes[id]! & mask;
    while (this.#slots[s] !== 0) s = (s + 1) & mask;
    this.#slots[s] = id + 1;
  }

  #rehash(): void {
    this.#slots = new Int32Array(this.#slots.length * 2);
    for (let id = 0; id < this.#size; id++) this.#place(id);
  }
}

function grow(a: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer> {
  const b = new Int32Array(a.length * 2);
  b.set(a);
  return b;
}
