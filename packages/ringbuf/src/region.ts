import { RingbufError } from './errors.ts';
import { HEADER_SIZE } from './header.ts';

/** Views over one buffer region; every offset is relative to the region start, so the layout is position independent. */
export interface Region {
  readonly buffer: ArrayBufferLike;
  readonly byteOffset: number;
  readonly byteLength: number;
  readonly u8: Uint8Array;
  readonly u32: Uint32Array;
  readonly i32: Int32Array;
  readonly dv: DataView;
  readonly shared: boolean;
}

export function openRegion(buffer: ArrayBufferLike, byteOffset: number, byteLength?: number): Region {
  const isShared = typeof SharedArrayBuffer !== 'undefined' && buffer instanceof SharedArrayBuffer;
  if (!(buffer instanceof ArrayBuffer) && !isShared) {
    throw new RingbufError('ERR_RINGBUF_REGION', 'the region must be an ArrayBuffer or a SharedArrayBuffer');
  }
  if (!Number.isInteger(byteOffset) || byteOffset < 0 || byteOffset % 8 !== 0 || byteOffset > buffer.byteLength) {
    throw new RingbufError('ERR_RINGBUF_REGION', `byte offset ${byteOffset} must be a multiple of 8 inside the buffer`);
  }
  const length = byteLength ?? buffer.byteLength - byteOffset;
  if (
    !Number.isInteger(length) ||
    length < HEADER_SIZE ||
    byteOffset + length > buffer.byteLength ||
    length % 4 !== 0
  ) {
    throw new RingbufError(
      'ERR_RINGBUF_REGION',
      `region of ${length} bytes at offset ${byteOffset} must fit the buffer, be a multiple of 4 and hold the ${HEADER_SIZE}-byte header`,
    );
  }
  return {
    buffer,
    byteOffset,
    byteLength: length,
    u8: new Uint8Array(buffer, byteOffset, length),
    u32: new Uint32Array(buffer, byteOffset, length >> 2),
    i32: new Int32Array(buffer, byteOffset, length >> 2),
    dv: new DataView(buffer, byteOffset, length),
    shared: isShared,
  };
}
