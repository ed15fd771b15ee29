/**
 * Test support: kmemtrace v1 records written from the ABI's description (see kmemtrace-abi.ts and the README), so
 * decoder tests have binaries whose every byte is known.
 */
import type { KmemtraceLayout } from '../kmemtrace-abi.ts';

export interface KmemtraceRecord {
  /** `alloc` or `free`, or a raw event id (an unknown one, for forward-compatibility tests). */
  readonly event: 'alloc' | 'free' | number;
  /** 0 kmalloc, 1 cache, 2 pages (others unknown). */
  readonly type: number;
  readonly callSite: bigint;
  readonly ptr: bigint;
  readonly bytesReq?: number;
  readonly bytesAlloc?: number;
  readonly gfpFlags?: number;
  readonly node?: number;
  /** `original`: ns timestamp; `mainline`: the sequence number. */
  readonly ts: number;
  /** Bytes appended after the layout's fields (a future ABI extension), counted in event_size. */
  readonly extra?: number;
}

/** Encodes records, little-endian and packed as the kernel wrote them. */
export function encodeKmemtrace(records: readonly KmemtraceRecord[], layout: KmemtraceLayout = 'original'): Buffer {
  const parts: Buffer[] = [];
  for (const r of records) {
    const alloc = r.event === 'alloc';
    const id = typeof r.event === 'number' ? r.event : layout === 'original' ? (alloc ? 1 : 2) : alloc ? 0 : 1;
    const base = layout === 'original' ? 56 : alloc || typeof r.event === 'number' ? 48 : 24;
    const size = base + (r.extra ?? 0);
    const b = Buffer.alloc(size, 0xa5);
    b.writeUInt8(id, 0);
    b.writeUInt8(r.type, 1);
    b.writeUInt16LE(size, 2);
    b.writeBigUInt64LE(r.callSite, 8);
    b.writeBigUInt64LE(r.ptr, 16);
    if (layout === 'original') {
      b.writeInt32LE(r.node ?? -1, 4);
      b.writeBigUInt64LE(BigInt(r.bytesReq ?? 0), 24);
      b.writeBigUInt64LE(BigInt(r.bytesAlloc ?? 0), 32);
      b.writeBigUInt64LE(BigInt(r.gfpFlags ?? 0), 40);
      b.writeBigInt64LE(BigInt(r.ts), 48);
    } else {
      b.writeInt32LE(r.ts, 4);
      if (base === 48) {
        b.writeBigUInt64LE(BigInt(r.bytesReq ?? 0), 24);
        b.writeBigUInt64LE(BigInt(r.bytesAlloc ?? 0), 32);
        b.writeUInt32LE(r.gfpFlags ?? 0, 40);
        b.writeInt32LE(r.node ?? -1, 44);
      }
    }
    parts.push(b);
  }
  return Buffer.concat(parts);
}
