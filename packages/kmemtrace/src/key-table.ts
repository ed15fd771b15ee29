/**
 * A hash map from exact-integer number keys (address keys: integers in (-2^31, 2^53)) to dense ids 0, 1, 2, ...
 * Open addressing over typed arrays: the analysis looks a pointer up for every event, and a `Map` with
 * non-Smi keys plus an object per entry cost several times more.
 */
export class KeyTable {
  #keys = new Float64Array(1024);
  #ids = new Int32Array(1024).fill(-1);
  #mask = 1023;
  #size = 0;
  /** Keys by id. */
  #byId = new Float64Array(1024);

  /** How many keys. */
  get size(): number {
    return this.#size;
  }

  /** The key of an id. */
  key(id: number): number {
    return this.#byId[id]!;
  }

  /** The keys by id, a copy. */
  keys(): Float64Array {
    return this.#byId.slice(0, this.#size);
  }

  /** The id of `key`, or -1. */
  get(key: number): number {
    const keys = this.#keys;
    const ids = this.#ids;
    const mask = this.#mask;
    for (let i = hash(key) & mask; ; i = (i + 1) & mask) {
      const id = ids[i]!;
      if (id < 0) return -1;
      if (keys[i] === key) return id;
    }
  }

  /** The id of `key`, adding it (with the next id) when absent. Check `size` before and after to know which. */
  intern(key: number): number {
    let keys = this.#keys;
    let ids = this.#ids;
    let mask = this.#mask;
    let i = hash(key) & mask;
    for (; ; i = (i + 1) & mask) {
      const id = ids[i]!;
      if (id < 0) break;
      if (keys[i] === key) return id;
    }
    const id = this.#size++;
    if (id >= this.#byId.length) {
      const grown = new Float64Array(this.#byId.length * 2);
      grown.set(this.#byId);
      this.#byId = grown;
    }
    this.#byId[id] = key;
    if (this.#size * 2 > mask + 1) {
      this.#grow();
      keys = this.#keys;
      ids = this.#ids;
      mask = this.#mask;
      for (i = hash(key) & mask; ids[i]! >= 0; i = (i + 1) & mask);
    }
    keys[i] = key;
    ids[i] = id;
    return id;
  }

  #grow(): void {
    const oldKeys = this.#keys;
    const oldIds = this.#ids;
    const capacity = oldKeys.length * 2;
    const keys = new Float64Array(capacity);
    const ids = new Int32Array(capacity).fill(-1);
    const mask = capacity - 1;
    for (let j = 0; j < oldKeys.length; j++) {
      const id = oldIds[j]!;
      if (id < 0) continue;
      const key = oldKeys[j]!;
      let i = hash(key) & mask;
      while (ids[i]! >= 0) i = (i + 1) & mask;
      keys[i] = key;
      ids[i] = id;
    }
    this.#keys = keys;
    this.#ids = ids;
    this.#mask = mask;
  }
}

function hash(key: number): number {
  const lo = key >>> 0;
  const hi = Math.floor(key / 4294967296) | 0;
  let h = Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b);
  h ^= h >>> 15;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}
