/**
 * Output text assembled as bytes in one reused buffer: what a line writer fills event after event, with digits and
 * fixed labels written as bytes, so that no string exists per value and the text is never encoded again.
 */
const encoder = new TextEncoder();

/** A 64-bit value's two halves, read through typed arrays over one scratch word (no bigint arithmetic). */
const WORD = new ArrayBuffer(8);
const WORD_U64 = new BigUint64Array(WORD);
const WORD_I64 = new BigInt64Array(WORD);
const WORD_U32 = new Uint32Array(WORD);
const WORD_I32 = new Int32Array(WORD);
const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const LOW = LITTLE ? 0 : 1;
const HIGH = 1 - LOW;

const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);

/** Two ASCII digits per entry, `00` to `99`. */
const PAIRS = new Uint8Array(200);
for (let i = 0; i < 100; i++) {
  PAIRS[2 * i] = 48 + Math.floor(i / 10);
  PAIRS[2 * i + 1] = 48 + (i % 10);
}

/** Lowercase hexadecimal digits by value. */
const HEX = encoder.encode('0123456789abcdef');

/** UTF-8 bytes of a fixed text (labels, names, separators), made once by whoever writes it often. */
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** A growable byte buffer for text; `length` bytes of `bytes` are written. */
export class ByteOut {
  bytes: Uint8Array;
  length = 0;
  /** A view of `bytes`, for {@link copyView}. */
  #view: DataView | undefined;

  constructor(capacity = 1 << 16) {
    this.bytes = new Uint8Array(capacity);
  }

  /** Makes room for `n` more bytes. */
  reserve(n: number): void {
    if (this.length + n <= this.bytes.length) return;
    const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.length + n));
    grown.set(this.bytes.subarray(0, this.length));
    this.bytes = grown;
  }

  /** Appends bytes (a label made with {@link utf8}). */
  raw(b: Uint8Array): void {
    const n = b.length;
    this.reserve(n);
    const out = this.bytes;
    let at = this.length;
    // Short labels byte by byte; from a dozen bytes the native copy costs less.
    if (n < 12) for (let i = 0; i < n; i++) out[at++] = b[i]!;
    else {
      out.set(b, at);
      at += n;
    }
    this.length = at;
  }

  /**
   * Appends `length` bytes of the memory `from` views, from `start`: four at a time, which for the short texts of
   * a line costs a fraction of a byte loop or of a native copy of a subarray.
   */
  copyView(from: DataView, start: number, length: number): void {
    this.reserve(length);
    let view = this.#view;
    if (view === undefined || view.buffer !== this.bytes.buffer) {
      view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
      this.#view = view;
    }
    let at = this.length;
    let i = start;
    const end = start + length;
    for (; i + 4 <= end; i += 4, at += 4) view.setUint32(at, from.getUint32(i));
    for (; i < end; i++) view.setUint8(at++, from.getUint8(i));
    this.length = at;
  }

  /** Appends `length` bytes of another buffer from `start`. */
  copy(from: Uint8Array, start: number, length: number): void {
    this.reserve(length);
    const out = this.bytes;
    let at = this.length;
    if (length < 64) for (let i = start, end = start + length; i < end; i++) out[at++] = from[i]!;
    else {
      out.set(from.subarray(start, start + length), at);
      at += length;
    }
    this.length = at;
  }

  /** Appends one byte (an ASCII character code). */
  byte(c: number): void {
    this.reserve(1);
    this.bytes[this.length++] = c;
  }

  /** Appends text of any kind (UTF-8). */
  text(s: string): void {
    const n = s.length;
    this.reserve(n * 3);
    const out = this.bytes;
    let at = this.length;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        this.length = at;
        this.length += encoder.encodeInto(s.slice(i), out.subarray(at)).written;
        return;
      }
      out[at++] = c;
    }
    this.length = at;
  }

  /** Appends the decimal digits of a non-negative integer below 2^53. */
  uint(v: number): void {
    this.reserve(16);
    const out = this.bytes;
    if (v < 10) {
      out[this.length++] = 48 + v;
      return;
    }
    let digits = 2;
    for (let t = 100; t <= v && digits < 16; t *= 10) digits++;
    const end = this.length + digits;
    let at = end;
    // Digits written backwards, two at a time: in floating point while the value is wide, then in 32-bit integers.
    while (v > 0x7fffffff) {
      const q = Math.floor(v / 100);
      const r = (v - q * 100) * 2;
      out[--at] = PAIRS[r + 1]!;
      out[--at] = PAIRS[r]!;
      v = q;
    }
    let n = v | 0;
    while (n >= 100) {
      const q = (n / 100) | 0;
      const r = (n - q * 100) << 1;
      out[--at] = PAIRS[r + 1]!;
      out[--at] = PAIRS[r]!;
      n = q;
    }
    if (n >= 10) {
      out[--at] = PAIRS[(n << 1) + 1]!;
      out[--at] = PAIRS[n << 1]!;
    } else out[--at] = 48 + n;
    this.length = end;
  }

  /** Appends an integer in decimal (`-` first when negative), a number or a bigint. */
  int(v: number | bigint): void {
    if (typeof v === 'number' && Number.isSafeInteger(v)) {
      if (v < 0) {
        this.byte(45);
        this.uint(-v);
      } else this.uint(v);
    } else if (typeof v === 'bigint') this.bigint(v);
    else this.text(String(v));
  }

  /** Appends a string as JSON writes it (`JSON.stringify`'s text, quotes included). */
  jsonString(s: string): void {
    const n = s.length;
    this.reserve(n + 2);
    const out = this.bytes;
    let at = this.length;
    out[at++] = 34;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      // Printable ASCII but the quote and the backslash is written as it is; anything else as JSON.stringify has it.
      if (c < 0x20 || c >= 0x7f || c === 34 || c === 92) {
        this.text(JSON.stringify(s));
        return;
      }
      out[at++] = c;
    }
    out[at++] = 34;
    this.length = at;
  }

  /**
   * Appends an integer in decimal, from a bigint: through a number where it holds the value exactly, its halves read
   * through a typed array (cheaper than converting the bigint).
   */
  bigint(v: bigint): void {
    if (v >= 0n ? v <= U64_MAX : v >= I64_MIN) {
      let high: number;
      if (v >= 0n) {
        WORD_U64[0] = v;
        high = WORD_U32[HIGH]!;
      } else {
        WORD_I64[0] = v;
        high = WORD_I32[HIGH]!;
      }
      // Within 2^53 either way.
      if (high < 0x200000 && high >= -0x200000) {
        this.int(high * 4294967296 + WORD_U32[LOW]!);
        return;
      }
    }
    this.text(v.toString());
  }

  /** Appends the lowercase hexadecimal digits of a non-negative integer below 2^53. */
  hex(v: number): void {
    this.reserve(14);
    const out = this.bytes;
    if (v <= 0xffffffff) {
      // A 32-bit value: its digit count from its leading zero bits.
      let n = v >>> 0;
      const digits = n === 0 ? 1 : 8 - (Math.clz32(n) >> 2);
      const at = this.length;
      for (let k = digits - 1; k >= 0; k--, n >>>= 4) out[at + k] = HEX[n & 15]!;
      this.length = at + digits;
      return;
    }
    let digits = 1;
    for (let t = v; t >= 16; t = Math.floor(t / 16)) digits++;
    const end = this.length + digits;
    let at = end;
    while (v > 0xffffffff) {
      const q = Math.floor(v / 16);
      out[--at] = HEX[v - q * 16]!;
      v = q;
    }
    let n = v >>> 0;
    do {
      out[--at] = HEX[n & 15]!;
      n >>>= 4;
    } while (n !== 0);
    this.length = end;
  }

  /** Appends the lowercase hexadecimal digits of a non-negative bigint. */
  hexBigint(v: bigint): void {
    if (v < 0n || v > U64_MAX) {
      this.text(v.toString(16));
      return;
    }
    // The halves, through a typed array: the high half's digits, then the low half's eight.
    WORD_U64[0] = v;
    const high = WORD_U32[HIGH]!;
    const low = WORD_U32[LOW]!;
    if (high === 0) {
      this.hex(low);
      return;
    }
    this.hex(high);
    this.reserve(8);
    const out = this.bytes;
    const at = this.length;
    for (let k = 7, n = low; k >= 0; k--, n >>>= 4) out[at + k] = HEX[n & 15]!;
    this.length = at + 8;
  }

  /** Appends a non-negative integer below 2^31 in decimal, zero-padded to `width` digits. */
  padded(v: number, width: number): void {
    this.reserve(Math.max(width, 10));
    const out = this.bytes;
    let digits = 1;
    for (let t = 10; t <= v && digits < 10; t *= 10) digits++;
    const end = this.length + Math.max(digits, width);
    let at = end;
    let n = v | 0;
    do {
      const q = (n / 10) | 0;
      out[--at] = 48 + n - q * 10;
      n = q;
    } while (n !== 0);
    while (at > this.length) out[--at] = 48;
    this.length = end;
  }

  /** Appends a non-negative integer below 10^9 as exactly nine digits. */
  nine(v: number): void {
    this.reserve(9);
    const out = this.bytes;
    const at = this.length;
    this.length = at + 9;
    let n = v | 0;
    const high = (n / 100000) | 0;
    n -= high * 100000;
    // The low five digits, then the high four.
    let q = (n / 100) | 0;
    let r = (n - q * 100) << 1;
    out[at + 8] = PAIRS[r + 1]!;
    out[at + 7] = PAIRS[r]!;
    n = q;
    q = (n / 100) | 0;
    r = (n - q * 100) << 1;
    out[at + 6] = PAIRS[r + 1]!;
    out[at + 5] = PAIRS[r]!;
    out[at + 4] = 48 + q;
    q = (high / 100) | 0;
    r = (high - q * 100) << 1;
    out[at + 3] = PAIRS[r + 1]!;
    out[at + 2] = PAIRS[r]!;
    r = q << 1;
    out[at + 1] = PAIRS[r + 1]!;
    out[at] = PAIRS[r]!;
  }

  /** The text written so far (for tests and for callers that need a string). */
  toString(): string {
    return Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.length).toString('utf8');
  }
}

/**
 * An integer as a key of {@link KeptTexts}: its low 32 bits (unsigned) and the rest (a number whose sign is the
 * value's), the same for a number and a bigint of the same value. False for values that are neither integers of at
 * most 64 bits nor safe numbers.
 */
export class IntKey {
  low = 0;
  high = 0;

  /** Splits `v`; false when it is not a key. */
  of(v: unknown): boolean {
    if (typeof v === 'number') {
      if (!Number.isSafeInteger(v)) return false;
      this.low = v >>> 0;
      this.high = Math.floor(v / 4294967296);
      return true;
    }
    if (typeof v !== 'bigint') return false;
    if (v >= 0n) {
      if (v > U64_MAX) return false;
      WORD_U64[0] = v;
      this.high = WORD_U32[HIGH]!;
    } else {
      if (v < I64_MIN) return false;
      WORD_I64[0] = v;
      this.high = WORD_I32[HIGH]!;
    }
    this.low = WORD_U32[LOW]!;
    return true;
  }
}

/**
 * Texts kept as bytes per integer value, for writers that print the same text for the same value (a symbol per
 * address, flag names per flag word): all of them in one growing pool, found through a hash table of typed arrays
 * (open addressing), rather than an array object each and a map keyed by bigints. Keeps at most `limit` texts, each
 * shorter than 64 KiB.
 */
export class KeptTexts {
  readonly #limit: number;
  /** Per slot: 1 + the entry kept there, or 0; a power of two long, at most half full. */
  #slots = new Int32Array(64);
  #shift = 32 - 6;
  /** Per entry: its value's low and high halves, where its bytes start in the pool, and their length. */
  #entries = new Float64Array(4 * 32);
  #count = 0;
  #pool = new Uint8Array(1024);
  #poolView = new DataView(this.#pool.buffer);
  #used = 0;
  /** The entry last written or kept (values repeat from event to event), or -1. */
  #last = -1;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Writes the text kept for `key` to `out`; false when there is none. */
  write(key: IntKey, out: ByteOut): boolean {
    const e = this.#entries;
    let i = this.#last;
    if (i < 0 || e[i] !== key.low || e[i + 1] !== key.high) {
      const slots = this.#slots;
      const mask = slots.length - 1;
      for (let s = hashOf(key.low, key.high, this.#shift); ; s = (s + 1) & mask) {
        const k = slots[s]!;
        if (k === 0) return false;
        i = (k - 1) * 4;
        if (e[i] === key.low && e[i + 1] === key.high) break;
      }
      this.#last = i;
    }
    out.copyView(this.#poolView, e[i + 2]!, e[i + 3]!);
    return true;
  }

  /** Writes `text` to `out`, and keeps it for `key` (which has none yet) unless full. */
  keep(key: IntKey, text: string, out: ByteOut): void {
    const start = out.length;
    out.text(text);
    const length = out.length - start;
    if (this.#count >= this.#limit || length >= 1 << 16) return;
    if (this.#used + length > this.#pool.length) {
      const grown = new Uint8Array(Math.max(this.#pool.length * 2, this.#used + length));
      grown.set(this.#pool.subarray(0, this.#used));
      this.#pool = grown;
      this.#poolView = new DataView(grown.buffer);
    }
    this.#pool.set(out.bytes.subarray(start, out.length), this.#used);
    const i = this.#count * 4;
    if (i + 4 > this.#entries.length) {
      const grown = new Float64Array(this.#entries.length * 2);
      grown.set(this.#entries);
      this.#entries = grown;
    }
    const e = this.#entries;
    e[i] = key.low;
    e[i + 1] = key.high;
    e[i + 2] = this.#used;
    e[i + 3] = length;
    this.#last = i;
    this.#used += length;
    this.#count++;
    if (this.#count * 2 > this.#slots.length) this.#rehash(this.#slots.length * 2);
    else this.#place(this.#count);
  }

  /** Forgets every text (what they were made from changed). */
  clear(): void {
    this.#slots.fill(0);
    this.#last = -1;
    this.#count = 0;
    this.#used = 0;
  }

  /** Puts entry `k - 1` in the first free slot from its hash. */
  #place(k: number): void {
    const slots = this.#slots;
    const mask = slots.length - 1;
    const i = (k - 1) * 4;
    let s = hashOf(this.#entries[i]!, this.#entries[i + 1]!, this.#shift);
    while (slots[s] !== 0) s = (s + 1) & mask;
    slots[s] = k;
  }

  #rehash(size: number): void {
    this.#slots = new Int32Array(size);
    this.#shift = 32 - Math.log2(size);
    for (let k = 1; k <= this.#count; k++) this.#place(k);
  }
}

/** The slot of a value's halves in a table of 2^(32 - shift) slots: a multiplicative hash of both. */
const hashOf = (low: number, high: number, shift: number): number =>
  Math.imul(low ^ Math.imul(high, 0x9e3779b1), 0x85ebca6b) >>> shift;
