/**
 * Version 7 of trace.dat (trace-cmd.dat.v7(5)): sections found through options, the metadata and each CPU's pages
 * compressed (zstd or zlib) or not, streamed to a sink of positional writes.
 */
import { TraceFormatError } from '../../errors.ts';
import {
  bufferOption,
  commonOptions,
  eventsBlock,
  ftraceBlock,
  headersBlock,
  type Meta,
  option,
  start,
} from './blocks.ts';
import { OPTION, SECTION_COMPRESSED, SECTION_NAMES } from './ids.ts';
import { checkedChunks, type TraceDatCpuPages } from './pages.ts';
import { Out, partSize, u32, u64 } from './parts.ts';
import { zstdFrame } from './zstd-frames.ts';

/** node:zlib, loaded when a file is compressed: loading it is a measurable share of a short recording's start. */
const zlib = () => process.getBuiltinModule('node:zlib') as typeof import('node:zlib');

/** Where {@link writeV7} puts its bytes: positional writes, each at most once per byte. */
export interface Sink {
  write(bytes: Uint8Array, at: number): void;
}

/** A {@link Sink} in memory, for {@link encodeTraceDat}. */
export function memorySink(): Sink & { bytes(): Buffer } {
  const parts: [Uint8Array, number][] = [];
  let end = 0;
  return {
    write(bytes, at) {
      parts.push([bytes, at]);
      end = Math.max(end, at + bytes.length);
    },
    bytes() {
      const out = Buffer.alloc(end);
      for (const [bytes, at] of parts) out.set(bytes, at);
      return out;
    },
  };
}

/** A CPU's pages already compressed into a chunk list (each chunk's compressed size, size and data), the count apart. */
export interface ChunkedCpuPages {
  /** Bytes of the chunks, headers included. */
  readonly size: number;
  /** How many chunks there are. */
  readonly count: number;
  /** The chunks' bytes in order, `size` in total. */
  chunks(): Iterable<Uint8Array>;
}

/** Pages compressed as one chunk, as trace-cmd groups them. */
export const CHUNK_PAGES = 10;

/**
 * Writes a version 7 file to `sink` and returns its size. Each CPU's pages are compressed in chunks of
 * {@link CHUNK_PAGES} pages as they are read and written out at once, so no more than a chunk of them is held; pages
 * already compressed in the file's algorithm ({@link ChunkedCpuPages}) are written as they are.
 */
export function writeV7(
  meta: Meta,
  cpus: readonly (TraceDatCpuPages | ChunkedCpuPages)[],
  pageSize: number,
  compression: 'none' | 'zstd' | 'zlib',
  sink: Sink,
  file?: string,
): number {
  const { clock } = meta;
  let o = new Out();
  let base = 0;
  start(o, 7, pageSize);
  o.str(
    compression === 'none'
      ? 'none\0\0'
      : compression === 'zstd'
        ? `zstd\0${process.versions.zstd ?? '1.5.0'}\0`
        : `zlib\0${process.versions.zlib?.replace(/-.*/, '') ?? '1.2.13'}\0`,
  );
  const firstOptionsAt = o.length;
  o.u64(0); // patched below
  const strings: string[] = [];
  const stringId = (s: string) => {
    const before = strings.join('').length;
    strings.push(`${s}\0`);
    return before;
  };
  const compress = (data: Buffer) =>
    compression === 'zstd' ? zstdFrame(data) : compression === 'zlib' ? zlib().deflateSync(data) : data;
  const section = (id: number, description: string | number, content: Buffer, compressible: boolean): number => {
    const at = base + o.length;
    const packed = compressible && compression !== 'none';
    const body = packed ? Buffer.concat([u32(0), u32(content.length), compress(content)]) : content;
    if (packed) body.writeUInt32LE(body.length - 8, 0);
    o.u16(id);
    o.u16(packed ? SECTION_COMPRESSED : 0);
    o.u32(typeof description === 'number' ? description : stringId(description));
    o.u64(body.length);
    o.put(body);
    return at;
  };
  const block = (fill: (b: Out) => void) => {
    const b = new Out();
    fill(b);
    return b.bytes();
  };
  const headersAt = section(
    OPTION.headerInfo,
    SECTION_NAMES[OPTION.headerInfo]!,
    block((b) => headersBlock(b, meta)),
    true,
  );
  const ftraceAt = section(
    OPTION.ftraceEvents,
    SECTION_NAMES[OPTION.ftraceEvents]!,
    block((b) => ftraceBlock(b, meta)),
    true,
  );
  const eventsAt = section(
    OPTION.eventFormats,
    SECTION_NAMES[OPTION.eventFormats]!,
    block((b) => eventsBlock(b, meta)),
    true,
  );
  const kallsymsAt = section(
    OPTION.kallsyms,
    SECTION_NAMES[OPTION.kallsyms]!,
    block((b) => {
      b.u32(partSize(meta.kallsyms));
      b.put(meta.kallsyms);
    }),
    true,
  );
  const printkAt = section(
    OPTION.printk,
    SECTION_NAMES[OPTION.printk]!,
    block((b) => {
      b.u32(Buffer.byteLength(meta.printk));
      b.str(meta.printk);
    }),
    true,
  );
  const cmdlinesAt = section(
    OPTION.cmdlines,
    SECTION_NAMES[OPTION.cmdlines]!,
    block((b) => {
      b.u64(Buffer.byteLength(meta.cmdlines));
      b.str(meta.cmdlines);
    }),
    true,
  );
  // Flyrecord section: CPU data page-aligned inside it; compressed CPU data is a chunk list. Its header, whose size
  // is known once the data is written, is written last.
  const flyAt = o.length;
  const headerSize = 16;
  const head = o.bytes();
  sink.write(head, 0);
  let at = Math.ceil((flyAt + headerSize) / pageSize) * pageSize;
  const chunkSize = pageSize * CHUNK_PAGES;
  const cpuTable = cpus.map((pages, cpu) => {
    const chunks = checkedChunks(pages, cpu, file);
    if (pages.size === 0) {
      for (const _ of chunks);
      return { cpu, offset: 0, size: 0 };
    }
    const offset = at;
    let end = offset;
    if ('count' in pages) {
      sink.write(u32(pages.count), offset);
      end += 4;
      for (const chunk of chunks) {
        sink.write(chunk, end);
        end += chunk.length;
      }
    } else if (compression === 'none') {
      for (const chunk of chunks) {
        sink.write(chunk, end);
        end += chunk.length;
      }
    } else {
      let count = 0;
      end += 4;
      const put = (raw: Uint8Array) => {
        const z = compress(raw as Buffer);
        sink.write(Buffer.concat([u32(z.length), u32(raw.length), z]), end);
        end += 8 + z.length;
        count++;
      };
      const carry = Buffer.allocUnsafe(chunkSize);
      let held = 0;
      for (const chunk of chunks) {
        let i = 0;
        while (i < chunk.length) {
          if (held === 0 && chunk.length - i >= chunkSize) {
            put(chunk.subarray(i, i + chunkSize));
            i += chunkSize;
            continue;
          }
          const n = Math.min(chunkSize - held, chunk.length - i);
          carry.set(chunk.subarray(i, i + n), held);
          held += n;
          i += n;
          if (held === chunkSize) {
            put(carry);
            held = 0;
          }
        }
      }
      if (held > 0) put(carry.subarray(0, held));
      sink.write(u32(count), offset);
    }
    at = Math.ceil(end / pageSize) * pageSize;
    return { cpu, offset, size: end - offset - (compression === 'none' ? 0 : 4) };
  });
  const flyEnd = Math.max(flyAt + headerSize, at);
  const fly = new Out();
  fly.u16(OPTION.buffer);
  fly.u16(compression === 'none' ? 0 : SECTION_COMPRESSED);
  fly.u32(stringId('buffer flyrecord'));
  fly.u64(flyEnd - flyAt - headerSize);
  sink.write(fly.bytes(), flyAt);
  o = new Out();
  base = flyEnd;
  // Options: the metadata references and the buffer description, then the strings.
  const opts = new Out();
  commonOptions(opts, meta, cpus.length);
  for (const [id, off] of [
    [OPTION.headerInfo, headersAt],
    [OPTION.ftraceEvents, ftraceAt],
    [OPTION.eventFormats, eventsAt],
    [OPTION.kallsyms, kallsymsAt],
    [OPTION.printk, printkAt],
    [OPTION.cmdlines, cmdlinesAt],
  ] as const) {
    option(opts, id, u64(off));
  }
  bufferOption(opts, { at: flyAt, name: '', clock, pageSize, cpus: cpuTable });
  option(opts, OPTION.done, u64(0));
  const optionsAt = section(OPTION.done, 'options', opts.bytes(), false);
  const stringsId = stringId('strings');
  section(OPTION.strings, stringsId, Buffer.from(strings.join('')), false);
  const tail = o.bytes();
  sink.write(tail, base);
  const size = base + tail.length;
  if (size > 2 ** 53) throw new TraceFormatError('ERR_TRACE_DAT', 'trace too large');
  sink.write(u64(optionsAt), firstOptionsAt);
  return size;
}
