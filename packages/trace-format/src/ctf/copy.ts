/**
 * A CTF trace copied packet by packet, as it is: the metadata file and each data stream file's packets, each packet
 * written once every event in it was read (decoded without building values, by the line writers' decoders), so the
 * copy holds nothing a reader would reject. What `evtrace convert --to ctf` does for a CTF input that needs nothing
 * added; `babeltrace2` prints the copy as it prints the original.
 */
import { closeSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { basename, join } from 'node:path';
import { ByteOut } from '../codec/byte-out.ts';
import type { TraceClass } from '../model/types.ts';
import type { LineSource } from './line-target.ts';
import { LinePlan } from './lines.ts';
import { streamTimestamped } from './stream-class.ts';

/** Bytes gathered before a write: packets are often a few KiB. */
const WRITE_BYTES = 1 << 20;

/**
 * Whether copying `trace` gives what writing its events again would (`writeCtfTrace` adds a time and a `cpu_id` to
 * traces without them): every stream class has timestamps and a packet context with a `cpu_id`.
 */
export function copiesAsWritten(trace: TraceClass): boolean {
  return [...trace.streams.values()].every(
    (s) => streamTimestamped(s) && s.packetContext?.members.some((m) => m.name === 'cpu_id') === true,
  );
}

/**
 * Writes `metadata` and the packets of each stream file `cursors` read into `dir` (same file names); returns the
 * number of events. A corrupt packet throws (file and byte offset), or, read `lenient`, is left out and warned about.
 */
export function copyCtfPackets(
  cursors: readonly LineSource[],
  files: readonly string[],
  trace: TraceClass,
  metadata: Uint8Array,
  dir: string,
): number {
  writeFileSync(join(dir, 'metadata'), metadata);
  const plan = new LinePlan('check', trace, undefined, undefined);
  const target = { out: new ByteOut(16), plan };
  const pending = Buffer.allocUnsafeSlow(WRITE_BYTES);
  let events = 0;
  cursors.forEach((cursor, i) => {
    const fd = openSync(join(dir, basename(files[i]!)), 'w');
    let used = 0;
    const flush = () => {
      for (let done = 0; done < used; ) done += writeSync(fd, pending, done, used - done);
      used = 0;
    };
    let inPacket = 0;
    try {
      cursor.onPacket = (bytes) => {
        events += inPacket;
        inPacket = 0;
        if (used + bytes.length > WRITE_BYTES) flush();
        if (bytes.length > WRITE_BYTES) {
          for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
        } else {
          pending.set(bytes, used);
          used += bytes.length;
        }
      };
      // Events of a packet count once the packet is whole (a corrupt one read leniently is left out with them).
      for (let got = cursor.nextLine(target); got !== undefined; got = cursor.nextLine(target)) {
        inPacket++;
        target.out.length = 0;
      }
      flush();
    } finally {
      cursor.onPacket = undefined;
      closeSync(fd);
    }
  });
  return events;
}
