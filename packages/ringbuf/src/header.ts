import { ClockId } from './clock.ts';
import { RingbufError } from './errors.ts';

/** "EVRB" in file order (bytes 45 56 52 42), read as a little-endian u32. */
export const MAGIC = 0x42525645;
/** Layout version this library writes; headers with a higher version are refused. */
export const LAYOUT_VERSION = 1;
/** Written as a native u32: reads back as 0x04030201 on the other byte order. */
export const BYTE_ORDER_MARK = 0x01020304;
/** The header page is 4 KiB whatever the data page size. */
export const HEADER_SIZE = 4096;
export const MIN_PAGE_SIZE = 4096;
/** 64 MiB: keeps every in-page offset far below 2^31 so it fits an Int32 Atomics word. */
export const MAX_PAGE_SIZE = 1 << 26;
export const MIN_PAGE_COUNT = 2;
export const MAX_READERS = 32;
export const READER_SLOT_SIZE = 16;
export const CLOCK_NAME_SIZE = 32;

export const Mode = { overwrite: 1, discard: 2 } as const;
export type ModeName = keyof typeof Mode;

/** Header flag: pages are filled by several writers through atomic reservation. */
export const FLAG_MULTI_WRITER = 1;

/** Byte offsets of the header fields (see LAYOUT.md). */
export const H = {
  magic: 0,
  version: 4,
  byteOrder: 8,
  headerSize: 12,
  pageSize: 16,
  pageCount: 20,
  mode: 24,
  flags: 28,
  clockId: 32,
  pageHeaderSize: 36,
  clockName: 40,
  clockOffset: 72,
  maxReaders: 80,
  readerSlotSize: 84,
  // Live words, read and written with Atomics.
  readerHigh: 120,
  writers: 124,
  head: 128,
  tail: 132,
  state: 136,
  wake: 140,
  waiters: 144,
  advance: 148,
  written: 152,
  discarded: 160,
  overwritten: 168,
  overwrittenPages: 176,
  bytes: 184,
  readerSlots: 256,
} as const;

/** `state` bits. */
export const STATE_WRITER_ATTACHED = 1;
export const STATE_WRITER_CLOSED = 2;

/** Reader slot fields, relative to the slot. */
export const SLOT = { state: 0, cursor: 4, wakeAt: 8 } as const;

/** What a header says about its buffer. */
export interface HeaderInfo {
  pageSize: number;
  pageCount: number;
  mode: ModeName;
  multiWriter: boolean;
  clockId: number;
  clockName: string;
  /** Realtime minus clock at creation, in ns (0 when unknown). */
  clockOffsetNs: number;
}

/** Bytes a buffer with these dimensions occupies. */
export function regionSize(pageSize: number, pageCount: number): number {
  return HEADER_SIZE + pageSize * pageCount;
}

export function checkGeometry(
  pageSize: number,
  pageCount: number,
  code: 'ERR_RINGBUF_ARGUMENT' | 'ERR_RINGBUF_CORRUPT_HEADER',
): void {
  if (
    !Number.isInteger(pageSize) ||
    pageSize < MIN_PAGE_SIZE ||
    pageSize > MAX_PAGE_SIZE ||
    (pageSize & (pageSize - 1)) !== 0
  ) {
    throw new RingbufError(
      code,
      `page size ${pageSize} must be a power of two from ${MIN_PAGE_SIZE} to ${MAX_PAGE_SIZE}`,
      code === 'ERR_RINGBUF_CORRUPT_HEADER' ? H.pageSize : undefined,
    );
  }
  if (!Number.isInteger(pageCount) || pageCount < MIN_PAGE_COUNT || pageSize * pageCount > 2 ** 31 - HEADER_SIZE) {
    throw new RingbufError(
      code,
      `page count ${pageCount} must be an integer >= ${MIN_PAGE_COUNT} with at most 2 GiB of pages`,
      code === 'ERR_RINGBUF_CORRUPT_HEADER' ? H.pageCount : undefined,
    );
  }
}

/** Writes a fresh header; the pages must already be zero. */
export function writeHeader(dv: DataView, info: HeaderInfo, pageHeaderSize: number): void {
  dv.setUint32(H.magic, MAGIC, true);
  dv.setUint32(H.version, LAYOUT_VERSION, true);
  new Uint32Array(dv.buffer, dv.byteOffset + H.byteOrder, 1)[0] = BYTE_ORDER_MARK;
  dv.setUint32(H.headerSize, HEADER_SIZE, true);
  dv.setUint32(H.pageSize, info.pageSize, true);
  dv.setUint32(H.pageCount, info.pageCount, true);
  dv.setUint32(H.mode, Mode[info.mode], true);
  dv.setUint32(H.flags, info.multiWriter ? FLAG_MULTI_WRITER : 0, true);
  dv.setUint32(H.clockId, info.clockId, true);
  dv.setUint32(H.pageHeaderSize, pageHeaderSize, true);
  const name = new TextEncoder().encode(info.clockName);
  if (name.length >= CLOCK_NAME_SIZE || !/^[\x21-\x7e]+$/.test(info.clockName)) {
    throw new RingbufError(
      'ERR_RINGBUF_ARGUMENT',
      `clock name ${JSON.stringify(info.clockName)} must be 1..31 printable ASCII`,
    );
  }
  new Uint8Array(dv.buffer, dv.byteOffset + H.clockName, CLOCK_NAME_SIZE).set(name);
  dv.setBigInt64(H.clockOffset, BigInt(Math.round(info.clockOffsetNs)), true);
  dv.setUint32(H.maxReaders, MAX_READERS, true);
  dv.setUint32(H.readerSlotSize, READER_SLOT_SIZE, true);
  dv.setInt32(H.head, -1, true);
  dv.setInt32(H.advance, -1, true);
}

/** Validates a header and returns what it says. Throws a RingbufError naming the first bad field. */
export function readHeader(dv: DataView, regionBytes: number, pageHeaderSize: number): HeaderInfo {
  if (regionBytes < HEADER_SIZE) {
    throw new RingbufError(
      'ERR_RINGBUF_REGION',
      `region of ${regionBytes} bytes is smaller than the ${HEADER_SIZE}-byte header`,
    );
  }
  const magic = dv.getUint32(H.magic, true);
  if (magic !== MAGIC) {
    throw new RingbufError(
      'ERR_RINGBUF_BAD_MAGIC',
      `not an evtrace ring buffer: magic 0x${magic.toString(16).padStart(8, '0')}, expected 0x${MAGIC.toString(16)} ("EVRB")`,
      H.magic,
    );
  }
  const bom = dv.getUint32(H.byteOrder, true);
  if (bom !== BYTE_ORDER_MARK) {
    throw new RingbufError(
      bom === 0x04030201 ? 'ERR_RINGBUF_BYTE_ORDER' : 'ERR_RINGBUF_CORRUPT_HEADER',
      bom === 0x04030201
        ? 'buffer was written in big-endian byte order; this reader is little-endian'
        : `byte-order mark 0x${bom.toString(16)} is neither 0x01020304 nor 0x04030201`,
      H.byteOrder,
    );
  }
  const version = dv.getUint32(H.version, true);
  if (version > LAYOUT_VERSION) {
    throw new RingbufError(
      'ERR_RINGBUF_VERSION',
      `layout version ${version} is newer than the version ${LAYOUT_VERSION} this library reads; upgrade @evtrace/ringbuf`,
      H.version,
    );
  }
  if (version === 0) throw new RingbufError('ERR_RINGBUF_CORRUPT_HEADER', 'layout version 0 does not exist', H.version);
  const expect = (at: number, want: number, what: string) => {
    const got = dv.getUint32(at, true);
    if (got !== want) throw new RingbufError('ERR_RINGBUF_CORRUPT_HEADER', `${what} is ${got}, expected ${want}`, at);
  };
  expect(H.headerSize, HEADER_SIZE, 'header size');
  expect(H.pageHeaderSize, pageHeaderSize, 'page header size');
  expect(H.maxReaders, MAX_READERS, 'reader slot count');
  expect(H.readerSlotSize, READER_SLOT_SIZE, 'reader slot size');
  const pageSize = dv.getUint32(H.pageSize, true);
  const pageCount = dv.getUint32(H.pageCount, true);
  checkGeometry(pageSize, pageCount, 'ERR_RINGBUF_CORRUPT_HEADER');
  if (regionSize(pageSize, pageCount) > regionBytes) {
    throw new RingbufError(
      'ERR_RINGBUF_REGION',
      `header describes ${pageCount} pages of ${pageSize} bytes (${regionSize(pageSize, pageCount)} bytes) but the region has ${regionBytes}`,
    );
  }
  const modeValue = dv.getUint32(H.mode, true);
  const mode = modeValue === Mode.overwrite ? 'overwrite' : modeValue === Mode.discard ? 'discard' : undefined;
  if (mode === undefined) throw new RingbufError('ERR_RINGBUF_CORRUPT_HEADER', `unknown mode ${modeValue}`, H.mode);
  const flags = dv.getUint32(H.flags, true);
  if ((flags & ~FLAG_MULTI_WRITER) !== 0) {
    throw new RingbufError('ERR_RINGBUF_CORRUPT_HEADER', `unknown flags 0x${flags.toString(16)}`, H.flags);
  }
  const clockId = dv.getUint32(H.clockId, true);
  if (clockId !== ClockId.external && clockId !== ClockId.monotonic) {
    throw new RingbufError('ERR_RINGBUF_CORRUPT_HEADER', `unknown clock id ${clockId}`, H.clockId);
  }
  const nameBytes = new Uint8Array(dv.buffer, dv.byteOffset + H.clockName, CLOCK_NAME_SIZE);
  const end = nameBytes.indexOf(0);
  if (
    end <= 0 ||
    nameBytes.subarray(end).some((b) => b !== 0) ||
    nameBytes.subarray(0, end).some((b) => b < 0x21 || b > 0x7e)
  ) {
    throw new RingbufError(
      'ERR_RINGBUF_CORRUPT_HEADER',
      'clock name is not 1..31 printable ASCII bytes then NULs',
      H.clockName,
    );
  }
  const head = dv.getInt32(H.head, true);
  const tail = dv.getInt32(H.tail, true);
  if (head < -1 || tail < 0 || tail > head + 1) {
    throw new RingbufError(
      'ERR_RINGBUF_CORRUPT_HEADER',
      `head page ${head} and tail page ${tail} are inconsistent`,
      H.head,
    );
  }
  return {
    pageSize,
    pageCount,
    mode,
    multiWriter: (flags & FLAG_MULTI_WRITER) !== 0,
    clockId,
    clockName: String.fromCharCode(...nameBytes.subarray(0, end)),
    clockOffsetNs: Number(dv.getBigInt64(H.clockOffset, true)),
  };
}
