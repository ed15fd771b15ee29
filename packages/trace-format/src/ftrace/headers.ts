/**
 * tracefs `events/header_page` and `events/header_event`: how the kernel lays out ring-buffer sub-buffers and the
 * compressed event header. Readers take the layout from these files rather than assuming one.
 */
import { TraceFormatError } from '../errors.ts';
import type { ByteOrder } from '../model/types.ts';
import { parseFieldLine } from './format-file.ts';

/** Where a sub-buffer ("page") keeps its header fields and data, and its total size. */
export interface PageLayout {
  readonly byteOrder: ByteOrder;
  readonly timestampOffset: number;
  /** `commit` holds the data length plus the missed-events flags; its size is the kernel's `long`. */
  readonly commitOffset: number;
  readonly commitSize: 4 | 8;
  readonly dataOffset: number;
  /** Sub-buffer size in bytes: the header plus the data area. */
  readonly pageSize: number;
}

/**
 * The layout of a 64-bit little-endian kernel (x86-64, arm64): u64 timestamp, 8-byte commit, data at byte 16. For
 * pages this process writes itself (trace.dat from events, the demo source); pages from a kernel come with their
 * `header_page`, which {@link parseHeaderPage} reads.
 */
export function kernelPageLayout(pageSize = 4096): PageLayout {
  return { byteOrder: 'le', timestampOffset: 0, commitOffset: 8, commitSize: 8, dataOffset: 16, pageSize };
}

/**
 * Parses `header_page`. The page size is the data field's offset plus size; pass `pageSize` to override it (trace.dat
 * files and `buffer_subbuf_size_kb` state it separately).
 */
export function parseHeaderPage(
  text: string,
  options: { file?: string; byteOrder?: ByteOrder; pageSize?: number } = {},
): PageLayout {
  const fields = new Map<string, { offset: number; size: number }>();
  text.split('\n').forEach((line, i) => {
    if (/^\s*field\b/.test(line)) {
      const f = parseFieldLine(line, i + 1, options.file);
      if (!fields.has(f.name)) fields.set(f.name, f);
    }
  });
  const need = (name: string) => {
    const f = fields.get(name);
    if (f === undefined)
      throw new TraceFormatError('ERR_TRACE_FTRACE_FORMAT', `header_page has no ${name} field`, options);
    return f;
  };
  const ts = need('timestamp');
  const commit = need('commit');
  const data = need('data');
  if (ts.size !== 8) throw new TraceFormatError('ERR_TRACE_FTRACE_FORMAT', `timestamp of ${ts.size} bytes`, options);
  if (commit.size !== 4 && commit.size !== 8) {
    throw new TraceFormatError('ERR_TRACE_FTRACE_FORMAT', `commit of ${commit.size} bytes`, options);
  }
  const pageSize = options.pageSize ?? data.offset + data.size;
  if (data.offset < commit.offset + commit.size || pageSize <= data.offset || pageSize > 1 << 27) {
    throw new TraceFormatError(
      'ERR_TRACE_FTRACE_FORMAT',
      `impossible page layout (data at ${data.offset}, page ${pageSize})`,
      {
        file: options.file,
      },
    );
  }
  return {
    byteOrder: options.byteOrder ?? 'le',
    timestampOffset: ts.offset,
    commitOffset: commit.offset,
    commitSize: commit.size,
    dataOffset: data.offset,
    pageSize,
  };
}

/** The compressed event header's geometry from `header_event`. */
export interface EventHeaderLayout {
  readonly typeLenBits: number;
  readonly timeDeltaBits: number;
  readonly padding: number;
  readonly timeExtend: number;
  readonly timeStamp: number;
  readonly dataMaxTypeLen: number;
}

/** Parses `header_event`; rejects a geometry other than the 5/27-bit one every kernel since 2.6.31 uses. */
export function parseHeaderEvent(text: string, options: { file?: string } = {}): EventHeaderLayout {
  const num = (re: RegExp, what: string) => {
    const m = re.exec(text);
    if (m === null) throw new TraceFormatError('ERR_TRACE_FTRACE_FORMAT', `header_event lacks ${what}`, options);
    return Number(m[1]);
  };
  const layout: EventHeaderLayout = {
    typeLenBits: num(/type_len\s*:\s*(\d+)\s*bits/, 'type_len'),
    timeDeltaBits: num(/time_delta\s*:\s*(\d+)\s*bits/, 'time_delta'),
    padding: num(/padding\s*:\s*type\s*==\s*(\d+)/, 'padding'),
    timeExtend: num(/time_extend\s*:\s*type\s*==\s*(\d+)/, 'time_extend'),
    timeStamp: num(/time_stamp\s*:\s*type\s*==\s*(\d+)/, 'time_stamp'),
    dataMaxTypeLen: num(/data max type_len\s*==\s*(\d+)/, 'data max type_len'),
  };
  if (
    layout.typeLenBits !== 5 ||
    layout.timeDeltaBits !== 27 ||
    layout.padding !== 29 ||
    layout.timeExtend !== 30 ||
    layout.timeStamp !== 31 ||
    layout.dataMaxTypeLen !== 28
  ) {
    throw new TraceFormatError(
      'ERR_TRACE_FTRACE_FORMAT',
      `unsupported event header ${JSON.stringify(layout)}`,
      options,
    );
  }
  return layout;
}
