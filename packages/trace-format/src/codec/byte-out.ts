/**
 * Output text assembled as bytes in one reused buffer: what a line writer fills event after event, with digits and
 * fixed labels written as bytes, so that no string exists per value and the text is never encoded again.
 */
const encoder = new TextEncoder();

/** Two ASCII digits per entry, `00` to `99`. */
const PAIRS = new Uint8Array(200);
for (let i = 0; i < 100; i++) {
  PAIRS[2 * i] = 48 + Math.floor(i / 10);
  PAIRS[2 * i + 1] = 48 + (i % 10);
}

/** Hexadecimal digits, lower case. */
const HEX = utf8Bytes('0123456789abcdef');

/** A bigint's two 32-bit halves, read through one 64-bit slot: no bigint arithmetic, so nothing allocated. */
const WIDE = new BigUint64Array(1);
const HALVES = new Uint32Array(WIDE.buffer);
const LOW = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 0 : 1;

const U64_MAX = (1n << 64n) - 1n;

function utf8Bytes(text: string): Uint8Array {
  return encoder.encode(text);
}

/** UTF-8 bytes of a fixed text (labels, names, separators), made once by whoever writes it often. */
export function utf8(text: string): Uint8Array {
  return utf8Bytes(text);
}

/** A growable byte buffer for text; `length` bytes of `bytes` are written. */
export class ByteOut {
  bytes: Uint8Array;
  length = 0;

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
    if (n < 32) for (let i = 0; i < n; i++) out[at++] = b[i]!;
    else {
      out.set(b, at);
      at += n;
    }
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

  /** Appends a bigint in decimal: through {@link int}'s digits where it fits a double exactly. */
  bigint(v: bigint): void {
    // A bigint whose double is a safe integer is that integer: beyond 2^53 the nearest double is 2^53 or more.
    const n = Number(v);
    if (Number.isSafeInteger(n)) this.int(n);
    else this.text(v.toString());
  }

  /** Appends the lower-case hexadecimal digits of a non-negative integer (no `0x`). */
  hex(v: number | bigint): void {
    if (typeof v === 'number') {
      if (v >= 0 && v <= 0xffffffff) this.#hex32(v >>> 0, 1);
      else if (v > 0 && Number.isSafeInteger(v)) {
        const high = Math.floor(v / 0x100000000);
        this.#hex32(high, 1);
        this.#hex32(v - high * 0x100000000, 8);
      } else this.text(v.toString(16));
      return;
    }
    if (v < 0n || v > U64_MAX) {
      this.text(v.toString(16));
      return;
    }
    WIDE[0] = v;
    const high = HALVES[1 - LOW]!;
    const low = HALVES[LOW]!;
    if (high === 0) this.#hex32(low, 1);
    else {
      this.#hex32(high, 1);
      this.#hex32(low, 8);
    }
  }

  /** Hex digits of a 32-bit value, at least `width` of them (zeros first). */
  #hex32(v: number, width: number): void {
    let digits = 1;
    for (let t = v >>> 4; t !== 0; t >>>= 4) digits++;
    if (digits < width) digits = width;
    this.reserve(digits);
    const out = this.bytes;
    const end = this.length + digits;
    for (let at = end - 1; at >= this.length; at--) {
      out[at] = HEX[v & 15]!;
      v >>>= 4;
    }
    this.length = end;
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
