import { ClockId, MONOTONIC_CLOCK_NAME, monotonicNs, monotonicToRealtimeOffsetNs } from './clock.ts';
import { RingbufError } from './errors.ts';
import {
  checkGeometry,
  H,
  type HeaderInfo,
  MAX_READERS,
  type ModeName,
  READER_SLOT_SIZE,
  readHeader,
  regionSize,
  SLOT,
  STATE_WRITER_ATTACHED,
  STATE_WRITER_CLOSED,
  writeHeader,
} from './header.ts';
import { PAGE_HEADER_SIZE } from './page.ts';
import { Reader, type ReaderOptions } from './reader.ts';
import { openRegion, type Region } from './region.ts';
import { ORDERED_STORES } from './shared.ts';
import { SharedWriter } from './shared-writer.ts';
import { type Snapshot, takeSnapshot } from './snapshot.ts';
import { loadU64 } from './u64.ts';
import { AtomicCommitWriter, Writer, type WriterContext, type WriterOptions } from './writer.ts';

/** Options of {@link RingBuffer.create}. */
export interface CreateOptions {
  /** Bytes per page, a power of two from 4 KiB to 64 MiB. Default 4096. A record holds up to pageSize - 100 bytes. */
  pageSize?: number;
  /** Pages in the ring, at least 2. Default 16. */
  pageCount?: number;
  /** `overwrite` (flight recorder: oldest pages reused) or `discard` (newest records dropped when full). Default overwrite. */
  mode?: ModeName;
  /** `single`: one writer (fast path). `multi`: several SharedWriters through atomic reservation (discard mode only). */
  writers?: 'single' | 'multi';
  /**
   * `monotonic` (default): CLOCK_MONOTONIC ns, read by reserve(). Or an external clock the producer supplies
   * timestamps from (reserveAt), named in the header, with its realtime offset in ns when known.
   */
  clock?: 'monotonic' | { name: string; offsetNs?: number };
  /** Place the buffer in this region instead of a new SharedArrayBuffer (e.g. a shared file mapping). It is zeroed. */
  buffer?: ArrayBufferLike;
  /** Byte offset of the region in `buffer`, a multiple of 8. Default 0. */
  byteOffset?: number;
}

/** The header's live counters. Writers publish them when they open a page, flush or close. */
export interface BufferStats {
  /** Sequence number of the page being written, -1 before the first. */
  head: number;
  /** Oldest page a registered reader still needs. */
  tail: number;
  /** Records committed (single-writer buffers). */
  written: number;
  /** Records dropped because the buffer was full (discard mode). */
  discarded: number;
  /** Records in pages recycled before every registered reader had read them (overwrite mode). */
  overwritten: number;
  /** Pages recycled before every registered reader had read them. */
  overwrittenPages: number;
  /** Payload and record-header bytes committed. */
  bytes: number;
  /** The writer closed the stream. */
  writerClosed: boolean;
  /** Registered readers. */
  readers: number;
}

function externalClock(name: string): () => number {
  return () => {
    throw new RingbufError(
      'ERR_RINGBUF_ARGUMENT',
      `this buffer's clock is ${name}, supplied by the producer: pass timestamps to reserveAt/writeBytes`,
    );
  };
}

/**
 * A ring buffer of trace records laid out in one contiguous region (header page, then data pages), usable from
 * every thread that shares the region and, through a shared file mapping, from other processes. See LAYOUT.md.
 */
export class RingBuffer {
  readonly buffer: ArrayBufferLike;
  readonly byteOffset: number;
  readonly byteLength: number;
  readonly pageSize: number;
  readonly pageCount: number;
  readonly mode: ModeName;
  readonly writers: 'single' | 'multi';
  /** Clock named in the header: `CLOCK_MONOTONIC` or the producer's. */
  readonly clockName: string;
  readonly clockId: number;
  /** Realtime minus clock at creation, in ns (0 when unknown). */
  readonly clockOffsetNs: number;
  /** Largest payload of one record. */
  readonly maxPayload: number;
  private readonly region: Region;
  private readonly clock: () => number;

  private constructor(region: Region, info: HeaderInfo) {
    this.region = region;
    this.buffer = region.buffer;
    this.byteOffset = region.byteOffset;
    this.byteLength = regionSize(info.pageSize, info.pageCount);
    this.pageSize = info.pageSize;
    this.pageCount = info.pageCount;
    this.mode = info.mode;
    this.writers = info.multiWriter ? 'multi' : 'single';
    this.clockName = info.clockName;
    this.clockId = info.clockId;
    this.clockOffsetNs = info.clockOffsetNs;
    this.maxPayload = info.pageSize - PAGE_HEADER_SIZE - 20;
    this.clock = info.clockId === ClockId.monotonic ? monotonicNs : externalClock(info.clockName);
  }

  /** Bytes a buffer with these options occupies (header page + pages). */
  static byteLength(options: Pick<CreateOptions, 'pageSize' | 'pageCount'> = {}): number {
    const pageSize = options.pageSize ?? 4096;
    const pageCount = options.pageCount ?? 16;
    checkGeometry(pageSize, pageCount, 'ERR_RINGBUF_ARGUMENT');
    return regionSize(pageSize, pageCount);
  }

  /** Creates a buffer in a new SharedArrayBuffer or in `options.buffer`. */
  static create(options: CreateOptions = {}): RingBuffer {
    const pageSize = options.pageSize ?? 4096;
    const pageCount = options.pageCount ?? 16;
    const mode = options.mode ?? 'overwrite';
    const writers = options.writers ?? 'single';
    checkGeometry(pageSize, pageCount, 'ERR_RINGBUF_ARGUMENT');
    if (mode !== 'overwrite' && mode !== 'discard') {
      throw new RingbufError('ERR_RINGBUF_ARGUMENT', `mode ${String(mode)} must be overwrite or discard`);
    }
    if (writers !== 'single' && writers !== 'multi') {
      throw new RingbufError('ERR_RINGBUF_ARGUMENT', `writers ${String(writers)} must be single or multi`);
    }
    if (writers === 'multi' && mode === 'overwrite') {
      throw new RingbufError(
        'ERR_RINGBUF_ARGUMENT',
        'multi-writer buffers support discard mode only; for a flight recorder give each thread its own buffer and merge them',
      );
    }
    const size = regionSize(pageSize, pageCount);
    const buffer = options.buffer ?? new SharedArrayBuffer(size);
    const region = openRegion(buffer, options.byteOffset ?? 0, options.buffer ? undefined : size);
    if (region.byteLength < size) {
      throw new RingbufError(
        'ERR_RINGBUF_REGION',
        `the region has ${region.byteLength} bytes; these options need ${size}`,
      );
    }
    region.u8.fill(0, 0, size);
    const clock = options.clock ?? 'monotonic';
    const info: HeaderInfo =
      clock === 'monotonic'
        ? {
            pageSize,
            pageCount,
            mode,
            multiWriter: writers === 'multi',
            clockId: ClockId.monotonic,
            clockName: MONOTONIC_CLOCK_NAME,
            clockOffsetNs: monotonicToRealtimeOffsetNs(),
          }
        : {
            pageSize,
            pageCount,
            mode,
            multiWriter: writers === 'multi',
            clockId: ClockId.external,
            clockName: clock.name,
            clockOffsetNs: clock.offsetNs ?? 0,
          };
    writeHeader(region.dv, info, PAGE_HEADER_SIZE);
    return new RingBuffer(region, info);
  }

  /**
   * Opens a buffer that already exists in `buffer` at `byteOffset` (another thread's SharedArrayBuffer, a file
   * mapping). Everything is learnt from the header; a foreign, corrupt or newer header is refused with a RingbufError.
   */
  static attach(buffer: ArrayBufferLike, byteOffset = 0, byteLength?: number): RingBuffer {
    const region = openRegion(buffer, byteOffset, byteLength);
    const info = readHeader(region.dv, region.byteLength, PAGE_HEADER_SIZE);
    return new RingBuffer(region, info);
  }

  private context(): WriterContext {
    return {
      region: this.region,
      pageSize: this.pageSize,
      pageCount: this.pageCount,
      overwrite: this.mode === 'overwrite',
      clock: this.clock,
    };
  }

  /** The buffer's single writer. Throws ERR_RINGBUF_WRITER_BUSY while another is attached, ERR_RINGBUF_WRITER_MODEL on multi buffers. */
  writer(options?: WriterOptions): Writer {
    if (this.writers === 'multi') {
      throw new RingbufError('ERR_RINGBUF_WRITER_MODEL', 'this buffer takes several writers: use sharedWriter()');
    }
    return ORDERED_STORES ? new Writer(this.context(), options) : new AtomicCommitWriter(this.context(), options);
  }

  /** One of several writers of a `writers: 'multi'` buffer (one per thread). */
  sharedWriter(streamId = 0): SharedWriter {
    if (this.writers !== 'multi') {
      throw new RingbufError(
        'ERR_RINGBUF_WRITER_MODEL',
        "this buffer has a single writer: create it with writers: 'multi'",
      );
    }
    return new SharedWriter(this.context(), streamId);
  }

  /** Registers a consuming reader (up to 32 per buffer). */
  reader(options?: ReaderOptions): Reader {
    return new Reader(
      {
        region: this.region,
        pageSize: this.pageSize,
        pageCount: this.pageCount,
        overwrite: this.mode === 'overwrite',
        multiWriter: this.writers === 'multi',
      },
      options,
    );
  }

  /** Copies what the buffer holds now without consuming it (a trace-shot); writers keep going meanwhile. */
  snapshot(): Snapshot {
    return takeSnapshot({
      region: this.region,
      pageSize: this.pageSize,
      pageCount: this.pageCount,
      multiWriter: this.writers === 'multi',
    });
  }

  /** The header's counters. */
  stats(): BufferStats {
    const i32 = this.region.i32;
    let readers = 0;
    for (let s = 0; s < MAX_READERS; s++) {
      if (Atomics.load(i32, (H.readerSlots + s * READER_SLOT_SIZE + SLOT.state) >> 2) === 1) readers++;
    }
    const state = Atomics.load(i32, H.state >> 2);
    return {
      head: Atomics.load(i32, H.head >> 2),
      tail: Atomics.load(i32, H.tail >> 2),
      written: loadU64(i32, H.written),
      discarded: loadU64(i32, H.discarded),
      overwritten: loadU64(i32, H.overwritten),
      overwrittenPages: loadU64(i32, H.overwrittenPages),
      bytes: loadU64(i32, H.bytes),
      writerClosed: (state & STATE_WRITER_CLOSED) !== 0,
      readers,
    };
  }

  /** True while a single writer is attached. */
  get writerAttached(): boolean {
    return (Atomics.load(this.region.i32, H.state >> 2) & STATE_WRITER_ATTACHED) !== 0;
  }
}
