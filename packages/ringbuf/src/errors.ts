import { EvtraceError } from '@evtrace/errors';

/** Error codes of @evtrace/ringbuf. Never reuse a code for another meaning. */
export type RingbufErrorCode =
  /** Options or arguments out of range (page size, page count, type, size, timestamp). */
  | 'ERR_RINGBUF_ARGUMENT'
  /** The region is too small, misaligned, or not an ArrayBuffer/SharedArrayBuffer. */
  | 'ERR_RINGBUF_REGION'
  /** The region does not start with the ringbuf magic: it holds something else. */
  | 'ERR_RINGBUF_BAD_MAGIC'
  /** The header was written by a newer layout version than this library reads. */
  | 'ERR_RINGBUF_VERSION'
  /** The header was written in the other byte order. */
  | 'ERR_RINGBUF_BYTE_ORDER'
  /** The header carries impossible values (page size, page count, mode, sizes). */
  | 'ERR_RINGBUF_CORRUPT_HEADER'
  /** A page's records do not add up (length past the committed end, unknown tag). */
  | 'ERR_RINGBUF_CORRUPT_PAGE'
  /** A record can never fit in one page of this buffer. */
  | 'ERR_RINGBUF_RECORD_TOO_LARGE'
  /** Another single writer is attached to this buffer. */
  | 'ERR_RINGBUF_WRITER_BUSY'
  /** Every reader registration slot is taken. */
  | 'ERR_RINGBUF_READERS_FULL'
  /** The operation needs another writer model (single vs multi) than the buffer was created with. */
  | 'ERR_RINGBUF_WRITER_MODEL'
  /** The writer or reader was closed. */
  | 'ERR_RINGBUF_CLOSED';

/** Every error thrown by @evtrace/ringbuf. `offset` is the byte offset in the region when one applies. */
export class RingbufError extends EvtraceError<RingbufErrorCode> {
  readonly offset: number | undefined;
  constructor(code: RingbufErrorCode, message: string, offset?: number) {
    super(code, message, offset === undefined ? {} : { location: { offset } });
    this.name = 'RingbufError';
    this.offset = offset;
  }
}
