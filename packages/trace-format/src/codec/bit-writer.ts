const TWO_32 = 2 ** 32;

/**
 * A growable buffer written at bit positions, the mirror of {@link BitReader}: little-endian bit-fields fill bytes
 * from their least significant bit, big-endian ones from their most significant bit (CTF 1.8). Alignment is
 * relative to the start of the buffer (one packet).
 */
export class BitWriter {
  bytes: Uint8Array;
  view: DataView;
  /** Position in bits. */
  pos = 0;

  constructor(capacity = 4096) {
    this.bytes = new Uint8Array(capacity);
    this.view = new DataView(this.bytes.buffer);
  }

  /** Aligns to `align` bits (zero padding) and makes room for `size` more bits; returns the aligned position. */
  at(align: number, size: number): number {
    let p = this.pos;
    const m = p % align;
    if (m !== 0) p += align - m;
    const need = Math.ceil((p + size) / 8);
    if (need > this.bytes.length) this.grow(need);
    return p;
  }

  private grow(need: number): void {
    let capacity = this.bytes.length * 2;
    while (capacity < need) capacity *= 2;
    const bytes = new Uint8Array(capacity);
    bytes.set(this.bytes);
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer);
  }

  /** Clears the buffer for the next packet (the bytes must be zero for bit-fields to be OR-ed in). */
  clear(): void {
    this.bytes.fill(0, 0, Math.ceil(this.pos / 8));
    this.pos = 0;
  }

  /** Writes the low `size` (<= 32) bits of an unsigned number at bit position `p`. */
  bits32(p: number, size: number, value: number, le: boolean): void {
    const bytes = this.bytes;
    let index = Math.floor(p / 8);
    let offset = p % 8;
    let remaining = size;
    if (le) {
      let v = value;
      while (remaining > 0) {
        const take = Math.min(8 - offset, remaining);
        const mask = (1 << take) - 1;
        const part = v % 2 ** take;
        bytes[index] = (bytes[index]! & ~(mask << offset)) | (part << offset);
        v = Math.floor(v / 2 ** take);
        remaining -= take;
        offset = 0;
        index++;
      }
    } else {
      while (remaining > 0) {
        const take = Math.min(8 - offset, remaining);
        const mask = (1 << take) - 1;
        const part = Math.floor(value / 2 ** (remaining - take)) % 2 ** take;
        const shift = 8 - offset - take;
        bytes[index] = (bytes[index]! & ~(mask << shift)) | (part << shift);
        remaining -= take;
        offset = 0;
        index++;
      }
    }
  }

  /** Writes an unsigned integer of up to 53 bits given as a number. */
  uintNumber(p: number, size: number, value: number, le: boolean): void {
    if (size <= 32) {
      this.bits32(p, size, value, le);
      return;
    }
    const low = value % TWO_32;
    const high = Math.floor(value / TWO_32);
    if (le) {
      this.bits32(p, 32, low, true);
      this.bits32(p + 32, size - 32, high, true);
    } else {
      this.bits32(p, size - 32, high, false);
      this.bits32(p + size - 32, 32, low, false);
    }
  }

  /** Writes an unsigned integer of up to 64 bits given as a bigint. */
  uintBig(p: number, size: number, value: bigint, le: boolean): void {
    if (size <= 32) {
      this.bits32(p, size, Number(value), le);
      return;
    }
    const low = Number(value & 0xffffffffn);
    const high = Number(value >> 32n);
    if (le) {
      this.bits32(p, 32, low, true);
      this.bits32(p + 32, size - 32, high, true);
    } else {
      this.bits32(p, size - 32, high, false);
      this.bits32(p + size - 32, 32, low, false);
    }
  }

  /** Appends raw bytes at a byte-aligned position. */
  raw(p: number, data: Uint8Array): void {
    this.bytes.set(data, p / 8);
  }
}
