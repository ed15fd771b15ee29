/**
 * What the progressive index needs of a stream file's reader: decode on, say where the current packet starts, and
 * go back to a packet met before. The reader implements it; the index depends on this alone, not on the reader.
 */
import type { CtfEvent } from './event.ts';

/** Where a packet starts and the decoder state it starts from: enough to decode it again on its own. */
export interface PacketStart {
  /** Byte offset in the stream file. */
  readonly offset: number;
  /** 1-based ordinal in the file. */
  readonly number: number;
  /** The clock after the packet's context (its `timestamp_begin`, else the previous packet's last value). */
  readonly clock: number | bigint;
}

/** Reads the events of one data stream file, packet by packet, in file order. */
export interface PacketCursor {
  /** The packet the last event returned by {@link next} belongs to. */
  readonly packet: PacketStart;
  /** Bytes of the file behind the reader (for progress). */
  readonly position: number;
  /** The file's size in bytes. */
  readonly size: number;
  /** Positions the cursor at the start of a packet met before, so that {@link next} decodes it again. */
  seek(packet: PacketStart): void;
  /** The next event of this file, or undefined at its end. */
  next(): CtfEvent | undefined;
}
