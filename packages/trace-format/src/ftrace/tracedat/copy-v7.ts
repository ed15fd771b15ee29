/**
 * A version 7 trace.dat copied into a new one with nothing decoded, decompressed or compressed again: its metadata
 * sections and each CPU's chunk list are carried byte for byte in large positional reads and writes (never the whole
 * file in memory), and the options are written anew around them. The file's structure is checked on the way (every
 * section where its option says, each chunk inside the file and starting as its algorithm's data starts, of the size
 * a zstd frame states); the pages inside the chunks are not walked.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { type OutputAccess, writeFileAtomically } from '../../output/atomic.ts';
import { type BufferOption, bufferOption, option, readBufferOption, start } from './blocks.ts';
import { Cursor } from './cursor.ts';
import { OPTION, SECTION_COMPRESSED, SECTION_NAMES, TRACEDAT_MAGIC } from './ids.ts';
import { Out, putBytes, u64 } from './parts.ts';
import { decompress } from './read.ts';

/** Options of {@link copyTraceDat}. */
export interface TraceDatCopyOptions extends OutputAccess {
  /** The version the output is to have. Default 7; a file of another version is not copied. */
  readonly version?: 6 | 7;
  /** The compression the output is to have. Default `zstd`; a file compressed otherwise is not copied. */
  readonly compression?: 'none' | 'zstd' | 'zlib';
  /** Copy only this buffer (`""` is the top one, else an instance's name), as the top one. Default: every buffer. */
  readonly buffer?: string;
}

/** What {@link copyTraceDat} did: the bytes and the CPUs with data it wrote, or why it copied nothing. */
export type TraceDatCopy = { readonly bytes: number; readonly cpus: number } | { readonly reason: string };

/** Bytes moved per read and write when copying a range. */
const BLOCK = 1 << 22;
/** Largest options section read into memory; trace-cmd's are far smaller. */
const MAX_OPTIONS = 1 << 24;

interface Section {
  readonly flags: number;
  /** File offset of the section's content and its size. */
  readonly body: number;
  readonly size: number;
}

/** Positional reads of the input, each a {@link Cursor} whose errors name the file offset. */
class Input {
  readonly fd: number;
  readonly size: number;
  readonly file: string;
  le = true;

  constructor(fd: number, file: string) {
    this.fd = fd;
    this.file = file;
    this.size = fstatSync(fd).size;
  }

  /** Up to `n` bytes at `offset` (fewer where the file ends: the cursor then fails naming where). */
  at(offset: number, n: number): Cursor {
    const bytes = Buffer.allocUnsafe(Math.max(0, Math.min(n, this.size - offset)));
    for (let done = 0; done < bytes.length; ) {
      const k = readSync(this.fd, bytes, done, bytes.length - done, offset + done);
      if (k === 0) return new Cursor(bytes.subarray(0, done), this.le, this.file, '', 0, offset);
      done += k;
    }
    return new Cursor(bytes, this.le, this.file, '', 0, offset);
  }

  /** The section at `offset`, which must be of kind `id` and lie inside the file. */
  section(offset: number, id: number, what: string): Section {
    const h = this.at(offset, 16);
    const found = h.u16('section id');
    if (found !== id) h.fail(`section ${found} found where the ${what} section (${id}) was expected`, 0);
    const flags = h.u16('section flags');
    h.u32('section description');
    const size = h.u64('section size');
    if (offset + 16 + size > this.size) {
      h.fail(
        `the ${what} section claims ${size} bytes; the file ends ${this.size - offset - 16} bytes after its header`,
        8,
      );
    }
    return { flags, body: offset + 16, size };
  }
}

/**
 * Copies the trace.dat `input` to `output` (whole or not at all, see {@link writeFileAtomically}) when it is a
 * little-endian version 7 file with 8-byte longs compressed as asked: its header_page, formats, kallsyms, printk
 * formats, cmdlines and options (clock, uname, timestamp offset, trace-cmd's own...) as they are, and each buffer's
 * CPU data as it is. Anything else (`{ reason }`) is left for a conversion that decodes it.
 *
 * @throws TraceFormatError `ERR_TRACE_DAT` naming the file and byte offset of a section, option or chunk that is not
 *   where or what the file says; `ERR_TRACE_OUTPUT` naming `output` when it cannot be written.
 */
export function copyTraceDat(input: string, output: string, options: TraceDatCopyOptions = {}): TraceDatCopy {
  const fd = openSync(input, 'r');
  try {
    return copyFrom(new Input(fd, input), output, options);
  } finally {
    closeSync(fd);
  }
}

function copyFrom(src: Input, output: string, options: TraceDatCopyOptions): TraceDatCopy {
  const want = options.compression ?? 'zstd';
  if ((options.version ?? 7) !== 7) return { reason: 'version 6 is asked for' };
  const head = src.at(0, 256);
  if (head.end < TRACEDAT_MAGIC.length || !TRACEDAT_MAGIC.equals(head.take(TRACEDAT_MAGIC.length, 'magic')))
    return { reason: 'not a trace.dat file' };
  const version = head.cstring('version', 8);
  if (version !== '7') return { reason: `the file is version ${version}` };
  const [endian, longSize] = head.take(2, 'endianness and long size');
  if (endian !== 0 || longSize !== 8) return { reason: 'the file is not little-endian with 8-byte longs' };
  const pageSize = head.u32('page size');
  const compression = head.cstring('compression name', 64);
  const compressionVersion = head.cstring('compression version', 64);
  if (compression !== want) return { reason: `the file is compressed with ${compression}, the output with ${want}` };
  const compressed = compression !== 'none';
  let next = head.u64('first options offset');

  const plain: { id: number; data: Buffer }[] = [];
  const metadata = new Map<number, number>();
  const buffers: BufferOption[] = [];
  const seen = new Set<number>();
  while (next !== 0) {
    if (seen.has(next)) src.at(next, 0).fail('options sections form a loop');
    seen.add(next);
    const s = src.section(next, OPTION.done, 'options');
    if (s.size > MAX_OPTIONS) src.at(next, 0).fail(`an options section of ${s.size} bytes`);
    let c = src.at(s.body, s.size);
    if ((s.flags & SECTION_COMPRESSED) !== 0 && compressed) {
      const csize = c.u32('compressed size');
      const usize = c.u32('uncompressed size');
      const data = decompress(c, compression, c.take(csize, 'compressed data'), usize, 0);
      c = new Cursor(data, true, src.file, `options section at byte ${next}, decompressed byte `);
    }
    next = 0;
    while (c.pos < c.end) {
      const id = c.u16('option id');
      const size = c.u32('option size');
      const at = c.pos;
      const data = c.take(size, 'option data');
      const d = new Cursor(data, true, src.file, c.where, 0, c.where === '' ? c.base + at : 0);
      if (id === OPTION.done) {
        next = size >= 8 ? d.u64('next options offset') : 0;
        break;
      }
      if (id === OPTION.buffer) buffers.push(readBufferOption(d, size));
      else if (SECTION_NAMES[id] !== undefined) metadata.set(id, d.u64('section offset'));
      else if (id === OPTION.bufferText) return { reason: 'the file holds a latency (text) buffer' };
      else plain.push({ id, data });
    }
  }
  const chosen =
    options.buffer === undefined
      ? buffers
      : buffers.filter((b) => b.name === options.buffer).map((b) => ({ ...b, name: '' }));
  if (options.buffer !== undefined && chosen.length === 0) {
    src
      .at(0, 0)
      .fail(
        `no buffer ${JSON.stringify(options.buffer)} in the file (it has ${buffers.map((b) => JSON.stringify(b.name)).join(', ')})`,
      );
  }
  if (chosen.length === 0) return { reason: 'the file has no flyrecord buffer' };
  if (!metadata.has(OPTION.headerInfo)) src.at(0, 0).fail('no header_page in the file');

  const sections = [...metadata].map(([id, at]) => ({ id, ...src.section(at, id, SECTION_NAMES[id]!) }));
  const flyrecords = chosen.map((b) => ({
    buffer: b,
    section: src.section(b.at, OPTION.buffer, `buffer ${JSON.stringify(b.name)}`),
    // Each CPU's extent: its chunk count and chunks, or its raw pages.
    extents: b.cpus.map((cpu) => (compressed ? chunkExtent(src, cpu, compression) : rawExtent(src, cpu))),
  }));

  let cpusWithData = 0;
  const bytes = writeFileAtomically(
    output,
    (fd) => {
      const block = Buffer.allocUnsafe(BLOCK);
      const copy = (from: number, length: number, to: number): number => {
        for (let done = 0; done < length; ) {
          const n = readSync(src.fd, block, 0, Math.min(BLOCK, length - done), from + done);
          if (n === 0) src.at(from + done, 1).fail('the file ended while being copied');
          putBytes(fd, block.subarray(0, n), to + done);
          done += n;
        }
        return to + length;
      };
      const strings: string[] = [];
      let stringsLength = 0;
      const stringId = (s: string) => {
        const id = stringsLength;
        strings.push(`${s}\0`);
        stringsLength += Buffer.byteLength(s) + 1;
        return id;
      };
      const sectionHeader = (id: number, flags: number, description: string, size: number) => {
        const h = Buffer.alloc(16);
        h.writeUInt16LE(id, 0);
        h.writeUInt16LE(flags, 2);
        h.writeUInt32LE(stringId(description), 4);
        h.writeBigUInt64LE(BigInt(size), 8);
        return h;
      };
      const o = new Out();
      start(o, 7, pageSize);
      o.str(`${compression}\0${compressionVersion}\0`);
      const firstOptionsAt = o.length;
      o.u64(0);
      let end = putBytes(fd, o.bytes(), 0);

      const opts = new Out();
      for (const { id, data } of plain) option(opts, id, data);
      for (const s of sections) {
        option(opts, s.id, u64(end));
        end = putBytes(fd, sectionHeader(s.id, s.flags, SECTION_NAMES[s.id]!, s.size), end);
        end = copy(s.body, s.size, end);
      }
      for (const { buffer, section, extents } of flyrecords) {
        const flyAt = end;
        let at = Math.ceil((flyAt + 16) / pageSize) * pageSize;
        const table = extents.map((x, k) => {
          const cpu = buffer.cpus[k]!.cpu;
          if (x.length === 0) return { cpu, offset: 0, size: 0 };
          cpusWithData++;
          const offset = at;
          at = Math.ceil(copy(x.offset, x.length, offset) / pageSize) * pageSize;
          return { cpu, offset, size: x.length - (compressed ? 4 : 0) };
        });
        end = Math.max(flyAt + 16, at);
        const description = buffer.name === '' ? 'buffer flyrecord' : `buffer ${buffer.name}`;
        putBytes(fd, sectionHeader(OPTION.buffer, section.flags, description, end - flyAt - 16), flyAt);
        bufferOption(opts, {
          at: flyAt,
          name: buffer.name,
          clock: buffer.clock,
          pageSize: buffer.pageSize,
          cpus: table,
        });
      }
      option(opts, OPTION.done, u64(0));
      const optionsAt = end;
      const body = opts.bytes();
      end = putBytes(fd, sectionHeader(OPTION.done, 0, 'options', body.length), end);
      end = putBytes(fd, body, end);
      const stringsHeader = sectionHeader(OPTION.strings, 0, 'strings', 0);
      stringsHeader.writeBigUInt64LE(BigInt(stringsLength), 8);
      end = putBytes(fd, stringsHeader, end);
      end = putBytes(fd, Buffer.from(strings.join('')), end);
      putBytes(fd, u64(optionsAt), firstOptionsAt);
      return end;
    },
    options,
  );
  return { bytes, cpus: cpusWithData };
}

/** A CPU's uncompressed pages, which must lie inside the file. */
function rawExtent(src: Input, cpu: { cpu: number; offset: number; size: number }) {
  if (cpu.size > 0 && cpu.offset + cpu.size > src.size) {
    src.at(cpu.offset, 0).fail(`the file ends inside CPU ${cpu.cpu}'s data [${cpu.offset}, +${cpu.size})`, 0);
  }
  return { offset: cpu.offset, length: cpu.size };
}

/**
 * A CPU's chunk list (a count, then each chunk's compressed size, size and data): walked header to header, each chunk
 * inside the file and starting as `algorithm`'s data starts. Its extent ends after its last chunk (the stated size
 * leaves the count out, and the chunks are what a reader follows).
 */
function chunkExtent(src: Input, cpu: { cpu: number; offset: number; size: number }, algorithm: string) {
  if (cpu.size === 0) return { offset: cpu.offset, length: 0 };
  const c = src.at(cpu.offset, 4);
  const count = c.u32(`CPU ${cpu.cpu} chunk count`);
  if (count > cpu.size / 8) c.fail(`CPU ${cpu.cpu}: ${count} chunks cannot fit in ${cpu.size} bytes`, 0);
  let at = cpu.offset + 4;
  for (let i = 0; i < count; i++) {
    const h = src.at(at, 8 + FRAME_HEAD);
    const csize = h.u32('chunk compressed size');
    const usize = h.u32('chunk size');
    if (at + 8 + csize > src.size) h.fail(`CPU ${cpu.cpu} chunk ${i}: ${csize} bytes claimed, the file ends first`, 0);
    if (usize === 0 || !startsLike(algorithm, h.take(Math.min(csize, h.end - h.pos), 'chunk data'), usize)) {
      h.fail(`CPU ${cpu.cpu} chunk ${i} is not ${algorithm} data of ${usize} bytes`, 8);
    }
    at += 8 + csize;
  }
  return { offset: cpu.offset, length: at - cpu.offset };
}

/** The most bytes a zstd frame header takes: magic, descriptor, window, dictionary id, content size. */
const FRAME_HEAD = 4 + 1 + 1 + 4 + 8;

/**
 * Whether `data` starts as `algorithm`'s data of `size` bytes does: a zstd frame (its magic number, and its content
 * size when the header states one), or a zlib stream (its header check).
 */
function startsLike(algorithm: string, data: Buffer, size: number): boolean {
  if (algorithm !== 'zstd')
    return data.length >= 2 && (data[0]! & 0x0f) === 8 && ((data[0]! << 8) | data[1]!) % 31 === 0;
  if (data.length < 5 || data.readUInt32LE(0) !== 0xfd2fb528) return false;
  const descriptor = data[4]!;
  const single = (descriptor & 0x20) !== 0;
  const sizeBytes = [single ? 1 : 0, 2, 4, 8][descriptor >> 6]!;
  const at = 5 + (single ? 0 : 1) + [0, 1, 2, 4][descriptor & 3]!;
  if (sizeBytes === 0) return true;
  if (data.length < at + sizeBytes) return false;
  const stated =
    sizeBytes === 1
      ? data[at]!
      : sizeBytes === 2
        ? data.readUInt16LE(at) + 256
        : sizeBytes === 4
          ? data.readUInt32LE(at)
          : Number(data.readBigUInt64LE(at));
  return stated === size;
}
