import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { PAGE_HEADER_SIZE } from '@evtrace/ringbuf';
import { BitReader } from '../codec/bit-reader.ts';
import { compileScope, type DecodeContext, type FieldDecoder } from '../codec/decoder.ts';
import { TraceFormatError } from '../errors.ts';
import type { EventClass, FieldValue, IntegerClass, StructClass } from '../model/types.ts';
import { eventText, tsdlName, tsdlString } from './tsdl/emit.ts';
import { type CtfWriterOptions, createCtfWriter } from './writer.ts';

/**
 * Writing @evtrace/ringbuf pages as CTF packets verbatim (packages/ringbuf/LAYOUT.md, version 1): the metadata
 * describes the page header as the packet context, the record header (5-bit tag, 27-bit time or extended form) as the
 * event header and the record length as the stream event context, so each page goes from the buffer to disk with one
 * write and no copy.
 */

/** Record type the ringbuf layout reserves for padding records (tag 30). */
export const RINGBUF_PADDING_TYPE = 30;

export interface RingbufCtfOptions {
  /**
   * Payload classes by record type (`EventClass.id` is the record type). A class must describe exactly the record's
   * payload bytes; record types met in pages without a class are described as raw bytes (`data`).
   */
  readonly eventClasses?: readonly EventClass[];
  /** The buffer's clock name (ringbuf header `clock name`). Default `monotonic`. */
  readonly clockName?: string;
  /** Realtime minus clock in ns (ringbuf header `clock offset`), so times read back are Unix times. Default 0. */
  readonly clockOffsetNs?: bigint;
  /** TSDL `env` entries. */
  readonly env?: Readonly<Record<string, string | number | bigint>>;
}

const u8: IntegerClass = {
  kind: 'int',
  size: 8,
  signed: false,
  align: 8,
  byteOrder: 'le',
  base: 10,
  encoding: 'none',
};

/** The raw-bytes payload of a record type without a class. */
function rawClass(type: number): EventClass {
  return {
    id: type,
    name: type === RINGBUF_PADDING_TYPE ? 'padding' : `record_${type}`,
    streamId: 0,
    payload: {
      kind: 'struct',
      minAlign: 1,
      members: [{ name: 'data', type: { kind: 'sequence', element: u8, lengthRef: 'stream.event.context.length' } }],
    },
  };
}

/** TSDL metadata describing ringbuf pages (layout version 1) with the given record classes. */
export function ringbufMetadata(classes: readonly EventClass[], options: RingbufCtfOptions = {}): string {
  const clock = tsdlName(options.clockName ?? 'monotonic');
  const offset = options.clockOffsetNs ?? 0n;
  const ns = 1_000_000_000n;
  const offsetSeconds = offset >= 0n ? offset / ns : -((-offset + ns - 1n) / ns);
  const env = Object.entries(options.env ?? {});
  const parts = [
    '/* CTF 1.8 */',
    '/* @evtrace/ringbuf pages (LAYOUT.md version 1), written verbatim as packets. */',
    'typealias integer { size = 8; align = 8; signed = false; byte_order = le; } := uint8_t;',
    'typealias integer { size = 32; align = 32; signed = false; byte_order = le; } := uint32_t;',
    'typealias integer { size = 64; align = 64; signed = false; byte_order = le; } := uint64_t;',
    'trace { major = 1; minor = 8; byte_order = le; };',
  ];
  if (env.length > 0) {
    parts.push(
      `env {\n${env.map(([k, v]) => `\t${tsdlName(k)} = ${typeof v === 'string' ? tsdlString(v) : v};`).join('\n')}\n};`,
    );
  }
  parts.push(
    `clock { name = ${clock}; freq = 1000000000; offset_s = ${offsetSeconds}; offset = ${offset - offsetSeconds * ns}; absolute = true; };`,
    `typealias integer { size = 27; align = 1; signed = false; byte_order = le; map = clock.${clock}.value; } := uint27_clock_t;`,
    `typealias integer { size = 64; align = 32; signed = false; byte_order = le; map = clock.${clock}.value; } := uint64_clock_t;`,
    `typealias integer { size = 64; align = 64; signed = false; byte_order = le; map = clock.${clock}.value; } := uint64_clock_a_t;`,
    `stream {
	packet.context := struct {
		uint64_clock_a_t timestamp_begin;
		uint64_clock_a_t timestamp_end;
		uint64_t content_size;
		uint64_t packet_size;
		uint64_t events_discarded;
		uint64_t packet_seq_num;
		uint64_t records_before;
		uint32_t commit;
		uint32_t reserved;
		uint32_t close_end;
		uint32_t record_count;
		uint32_t flags;
		uint32_t writer_stream_id;
	};
	event.header := struct {
		enum : integer { size = 5; align = 32; signed = false; byte_order = le; } { compact = 0 ... 29, padding = 30, extended = 31 } id;
		variant <id> {
			struct { uint27_clock_t timestamp; } compact;
			struct { } padding;
			struct { uint32_t id; uint64_clock_t timestamp; } extended;
		} v;
	};
	event.context := struct { uint32_t length; };
};`,
  );
  for (const cls of classes) parts.push(eventText({ ...cls, streamId: 0 }).trimEnd());
  return `${parts.join('\n')}\n`;
}

/** Record types in a page's records, checking that the records tile the content exactly. */
function recordTypes(page: Uint8Array, file: string, offset: number, into: Set<number>, verbatim = true): void {
  const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
  const fail = (message: string, at: number): never => {
    throw new TraceFormatError('ERR_TRACE_CTF_WRITE', `ringbuf page: ${message}`, { file, offset: offset + at });
  };
  if (page.length < PAGE_HEADER_SIZE) fail(`page of ${page.length} bytes is shorter than its header`, 0);
  const contentBits = Number(view.getBigUint64(16, true));
  const packetBits = Number(view.getBigUint64(24, true));
  if (packetBits !== page.length * 8) fail(`packet_size ${packetBits} bits is not the page's ${page.length * 8}`, 24);
  if (contentBits % 32 !== 0 || contentBits < PAGE_HEADER_SIZE * 8 || contentBits > packetBits) {
    fail(`content_size ${contentBits} bits is impossible (an open page not closed by a snapshot?)`, 16);
  }
  const end = contentBits / 8;
  let at = PAGE_HEADER_SIZE;
  while (at < end) {
    if (at + 8 > end) fail('truncated record header', at);
    const tag = view.getUint32(at, true) & 31;
    let type = tag;
    let header = 8;
    let length = view.getUint32(at + 4, true);
    if (tag === 31) {
      if (at + 20 > end) fail('truncated extended record header', at);
      type = view.getUint32(at + 4, true);
      length = view.getUint32(at + 16, true);
      header = 20;
      if (verbatim && type === RINGBUF_PADDING_TYPE) {
        fail(`record type ${type} is the padding tag's id in CTF: re-encode this buffer instead`, at);
      }
    }
    const size = header + length + ((4 - (length % 4)) % 4);
    if (at + size > end) fail(`record of ${size} bytes runs past the content`, at);
    into.add(type);
    at += size;
  }
}

export interface RingbufCtfWriter {
  /** Writes one complete page (a snapshot page) as the next packet of stream file `stream_<stream>`. */
  writePage(page: Uint8Array, stream?: number): void;
  /** Writes the metadata (classes for every record type met) and closes the stream files. */
  close(): void;
}

/**
 * Creates a CTF trace in `dir` whose packets are ringbuf pages written as they are. Each page is checked (sizes,
 * records tiling the content) by walking the record headers only; its bytes go to disk unchanged.
 */
export function createRingbufCtfWriter(dir: string, options: RingbufCtfOptions = {}): RingbufCtfWriter {
  mkdirSync(dir, { recursive: true });
  const files = new Map<number, { fd: number; bytes: number }>();
  const types = new Set<number>();
  let closed = false;
  return {
    writePage(page, stream = 0) {
      if (closed) throw new TraceFormatError('ERR_TRACE_CTF_WRITE', 'writer is closed');
      let f = files.get(stream);
      const path = join(dir, `stream_${stream}`);
      if (!f) {
        f = { fd: openSync(path, 'w'), bytes: 0 };
        files.set(stream, f);
      }
      recordTypes(page, path, f.bytes, types);
      let done = 0;
      while (done < page.length) done += writeSync(f.fd, page, done, page.length - done);
      f.bytes += page.length;
    },
    close() {
      if (closed) return;
      closed = true;
      for (const f of files.values()) closeSync(f.fd);
      const declared = new Map((options.eventClasses ?? []).map((c) => [c.id, c]));
      if (declared.has(RINGBUF_PADDING_TYPE)) {
        throw new TraceFormatError(
          'ERR_TRACE_CTF_WRITE',
          `record type ${RINGBUF_PADDING_TYPE} is reserved for padding`,
        );
      }
      types.add(RINGBUF_PADDING_TYPE);
      for (const t of types) if (!declared.has(t)) declared.set(t, rawClass(t));
      const classes = [...declared.values()].sort((a, b) => a.id - b.id);
      writeFileSync(join(dir, 'metadata'), ringbufMetadata(classes, options));
    },
  };
}

/** One record of a ringbuf page, as {@link walkRecords} visits it. */
interface RingbufRecord {
  readonly type: number;
  /** Absolute timestamp in clock units. */
  readonly ts: bigint;
  /** Byte offset of the payload in the page, and its length. */
  readonly payload: number;
  readonly length: number;
}

/** Visits the records of a complete page (padding records skipped), rebuilding compact timestamps. */
function walkRecords(page: Uint8Array, file: string, offset: number, visit: (r: RingbufRecord) => void): void {
  recordTypes(page, file, offset, new Set(), false);
  const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
  const end = Number(view.getBigUint64(16, true)) / 8;
  let prev = view.getBigUint64(0, true);
  for (let at = PAGE_HEADER_SIZE; at < end; ) {
    const word = view.getUint32(at, true);
    const tag = word & 31;
    let length = view.getUint32(at + 4, true);
    let header = 8;
    if (tag === 31) {
      length = view.getUint32(at + 16, true);
      header = 20;
      prev = view.getBigUint64(at + 8, true);
      visit({ type: view.getUint32(at + 4, true), ts: prev, payload: at + header, length });
    } else if (tag !== RINGBUF_PADDING_TYPE) {
      const range = 1n << 27n;
      prev += (((BigInt(word >>> 5) - prev) % range) + range) % range;
      visit({ type: tag, ts: prev, payload: at + header, length });
    }
    at += header + length + ((4 - (length % 4)) % 4);
  }
}

/**
 * Re-encodes ringbuf pages into a regular evtrace CTF trace (LTTng layout, packed packets), decoding each record's
 * payload with its class: for buffers whose pages cannot go verbatim (an extended record of type 30 reads as padding
 * under the verbatim metadata) or when disk space matters more than a copy (verbatim pages are written whole, even
 * when mostly empty). Record types without a class keep their bytes as `data`. Returns the number of events written.
 */
export function reencodeRingbufPages(
  pages: readonly { readonly data: Uint8Array; readonly stream?: number }[],
  dir: string,
  options: RingbufCtfOptions & CtfWriterOptions = {},
): number {
  const declared = new Map((options.eventClasses ?? []).map((c) => [c.id, c]));
  const lengthScope: StructClass = {
    kind: 'struct',
    minAlign: 1,
    members: [{ name: 'length', type: { ...u8, size: 32, align: 32 } }],
  };
  const decoders = new Map<number, FieldDecoder>();
  const raw = new Map<number, EventClass>();
  const writer = createCtfWriter(dir, options);
  const offset = options.clockOffsetNs ?? 0n;
  let count = 0;
  const ctx: DecodeContext = { r: new BitReader(new Uint8Array(0)), stack: [], roots: {} };
  try {
    for (const { data, stream = 0 } of pages) {
      const file = `stream ${stream}`;
      const r = new BitReader(data, file, 0);
      walkRecords(data, file, 0, (rec) => {
        const cls = declared.get(rec.type);
        let fields: { [name: string]: FieldValue };
        let eventClass: EventClass;
        if (cls) {
          let decode = decoders.get(rec.type);
          if (!decode) {
            decode = compileScope(cls.payload, {
              scope: 'event.fields',
              rootClasses: { 'stream.event.context': lengthScope, 'event.fields': cls.payload },
            });
            decoders.set(rec.type, decode);
          }
          r.pos = rec.payload * 8;
          r.limit = (rec.payload + rec.length) * 8;
          ctx.r = r;
          ctx.roots['stream.event.context'] = { length: rec.length };
          fields = decode(ctx) as { [name: string]: FieldValue };
          eventClass = cls;
        } else {
          let rc: EventClass | undefined = raw.get(rec.type);
          if (!rc) {
            rc = {
              id: rec.type,
              name: `record_${rec.type}`,
              streamId: 0,
              payload: {
                kind: 'struct',
                minAlign: 1,
                members: [
                  { name: 'length', type: { ...u8, size: 32 } },
                  { name: 'data', type: { kind: 'sequence', element: u8, lengthRef: 'length' } },
                ],
              },
            };
            raw.set(rec.type, rc);
          }
          eventClass = rc;
          fields = { length: rec.length, data: Array.from(data.subarray(rec.payload, rec.payload + rec.length)) };
        }
        try {
          writer.writeEvent({ eventClass, tsNs: rec.ts + offset, cpu: stream, fields });
        } catch (error) {
          // Say which record could not be written (e.g. its time goes backwards).
          if (!(error instanceof TraceFormatError) || error.location.offset !== undefined) throw error;
          throw new TraceFormatError(error.code, `record of type ${rec.type}: ${error.message}`, {
            file,
            offset: rec.payload,
          });
        }
        count++;
      });
    }
  } finally {
    writer.close();
  }
  return count;
}
