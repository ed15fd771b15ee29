import { TraceFormatError } from '../errors.ts';

/** Magic of an LTTng packet index file (`index/<stream>.idx`), stored big-endian. */
export const LTTNG_INDEX_MAGIC = 0xc1f1dcc1;

/** One packet as an LTTng index file lists it. Sizes are in bits, as in the packet context. */
export interface LttngIndexEntry {
  readonly offset: number;
  readonly packetSize: number;
  readonly contentSize: number;
  readonly timestampBegin: bigint;
  readonly timestampEnd: bigint;
  readonly eventsDiscarded: bigint;
  readonly streamId: bigint;
}

/**
 * Parses an LTTng index file (version 1.0: 56-byte entries; 1.1 and later: the entry size is in the header). All
 * fields are big-endian. Throws `ERR_TRACE_CTF_PACKET` with the byte offset when the file is malformed.
 */
export function parseLttngIndex(data: Uint8Array, file?: string): LttngIndexEntry[] {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const fail = (message: string, offset: number): never => {
    throw new TraceFormatError('ERR_TRACE_CTF_PACKET', `index: ${message}`, { file, offset });
  };
  if (data.length < 12) fail('truncated header', 0);
  if (view.getUint32(0) !== LTTNG_INDEX_MAGIC) fail(`bad magic 0x${view.getUint32(0).toString(16)}`, 0);
  const major = view.getUint32(4);
  const minor = view.getUint32(8);
  if (major !== 1) fail(`unsupported index version ${major}.${minor}`, 4);
  let headerSize = 12;
  let entrySize = 56;
  if (minor >= 1) {
    if (data.length < 16) fail('truncated header', 12);
    headerSize = 16;
    entrySize = view.getUint32(12);
    if (entrySize < 56) fail(`entry size ${entrySize} is below 56 bytes`, 12);
  }
  if ((data.length - headerSize) % entrySize !== 0)
    fail(`size is not a whole number of ${entrySize}-byte entries`, headerSize);
  const entries: LttngIndexEntry[] = [];
  for (let at = headerSize; at < data.length; at += entrySize) {
    const big = (k: number) => view.getBigUint64(at + 8 * k);
    const [offset, packetSize, contentSize] = [big(0), big(1), big(2)];
    if (offset > BigInt(Number.MAX_SAFE_INTEGER) || packetSize > 1n << 40n || contentSize > packetSize) {
      fail(`entry ${entries.length} has impossible offset or sizes`, at);
    }
    entries.push({
      offset: Number(offset),
      packetSize: Number(packetSize),
      contentSize: Number(contentSize),
      timestampBegin: big(3),
      timestampEnd: big(4),
      eventsDiscarded: big(5),
      streamId: big(6),
    });
  }
  return entries;
}
