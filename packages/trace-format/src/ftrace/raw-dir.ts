/**
 * A directory of raw per-CPU pages: `cpuN.raw` (sub-buffers as read from `per_cpu/cpuN/trace_pipe_raw`) beside an
 * `events/` tree laid out like tracefs's, optionally with `saved_cmdlines`, `kallsyms`, `printk_formats`,
 * `buffer_subbuf_size_kb` and `trace_clock` copied from tracefs and /proc.
 *
 * A recorder that will turn the directory into a trace.dat may leave room for the file's head at the front of every
 * `cpuN.raw` (`head_room`: that many zero bytes, a sparse hole, before the pages), then build the trace.dat around
 * one of them instead of copying its pages. While it does, `finalizing` (`CPU START END`) says where that file's
 * pages are, so the directory stays readable at every moment. In the regions layout (raw-regions.ts), every CPU's
 * pages are in one `cpus.raw` instead.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileSource } from '../ctf/byte-source.ts';
import { TraceFormatError } from '../errors.ts';
import { readInput } from '../input.ts';
import type { EventClass, EventReadOptions, TraceEvent, TraceReader } from '../model/types.ts';
import { type CpuPages, cpuEventBatches, EventTable, type FtraceMetadata, mergeBatches } from './events.ts';
import { parseFormatFile } from './format-file.ts';
import { parseHeaderEvent, parseHeaderPage } from './headers.ts';
import { RAW_REGIONS_FILE, regionExtents } from './raw-regions.ts';
import { Kallsyms, parseCmdlines, parsePrintkFormats } from './symbols.ts';

/** Options of the ftrace readers. */
export interface FtraceReadOptions {
  /** Report corrupt pages as warnings and continue with the next page. Default false: throw. */
  readonly lenient?: boolean;
}

/** A {@link TraceReader} over ftrace data, with the metadata it decodes by. */
export interface FtraceReader extends TraceReader {
  readonly metadata: FtraceMetadata;
  /** Added to every page timestamp (trace.dat's `offset` option); 0 for raw pages. */
  readonly tsOffsetNs: bigint;
  /** Each CPU's pages, undecoded (for indexes and other readers that seek; {@link events} decodes them all). */
  cpuPages(): CpuPages[];
}

const optional = (path: string): string | undefined => (existsSync(path) ? readText(path) : undefined);

/** A text file of the directory, read with the bound of a user's input (a FIFO or device there is no hang). */
const readText = (path: string): string => readInput(path).toString('utf8');

/** The file of a raw-pages directory giving the bytes reserved before the pages of every `cpuN.raw`. */
export const RAW_HEAD_ROOM_FILE = 'head_room';
/** The file of a raw-pages directory giving, while a trace.dat is built around one `cpuN.raw`, where its pages are. */
export const RAW_FINALIZING_FILE = 'finalizing';

/** A `cpuN.raw` file and where its pages lie in it. */
export interface RawCpuFile {
  readonly cpu: number;
  readonly file: string;
  /** Offset of the first page (the head room). */
  readonly start: number;
  /** End of the pages; undefined: the end of the file. */
  readonly end?: number;
}

function numbersIn(dir: string, name: string, count: number): number[] | undefined {
  const text = optional(join(dir, name));
  if (text === undefined) return undefined;
  const words = text.trim().split(/\s+/);
  if (words.length !== count || !words.every((w) => /^\d{1,15}$/.test(w))) {
    throw new TraceFormatError('ERR_TRACE_INPUT', `bad ${name} ${JSON.stringify(text.trim())}`, {
      file: join(dir, name),
    });
  }
  return words.map(Number);
}

/**
 * The `cpuN.raw` files of a raw-pages directory, by CPU number, each with where its pages lie; in the regions layout
 * (see raw-regions.ts), the one pages file once per CPU, with that CPU's extent.
 */
export function listRawCpuFiles(dir: string): RawCpuFile[] {
  const regions = optional(join(dir, RAW_REGIONS_FILE));
  if (regions !== undefined) {
    const { file, extents } = regionExtents(dir, regions);
    return extents.map(({ cpu, start, end }) => ({ cpu, file, start, end })).sort((a, b) => a.cpu - b.cpu);
  }
  const start = numbersIn(dir, RAW_HEAD_ROOM_FILE, 1)?.[0] ?? 0;
  const finalizing = numbersIn(dir, RAW_FINALIZING_FILE, 3);
  return readdirSync(dir)
    .map((n) => /^cpu(\d+)\.raw$/.exec(n))
    .filter((m) => m !== null)
    .map((m) => {
      const cpu = Number(m[1]);
      const file = join(dir, m[0]);
      return finalizing?.[0] === cpu ? { cpu, file, start: finalizing[1]!, end: finalizing[2]! } : { cpu, file, start };
    })
    .sort((a, b) => a.cpu - b.cpu);
}

/** Whether `dir` looks like a raw-pages directory. */
export function isRawPagesDir(dir: string): boolean {
  return (
    existsSync(join(dir, 'events', 'header_page')) &&
    (existsSync(join(dir, RAW_REGIONS_FILE)) || readdirSync(dir).some((n) => /^cpu\d+\.raw$/.test(n)))
  );
}

/**
 * Reads every `events/SYSTEM/EVENT/format` under `eventsDir`. With `skip`, a format that does not parse is passed to
 * it and left out instead of failing the whole directory.
 */
export function readEventFormats(
  eventsDir: string,
  longSize = 8,
  skip?: (error: TraceFormatError) => void,
): EventClass[] {
  const classes: EventClass[] = [];
  for (const system of readdirSync(eventsDir, { withFileTypes: true })) {
    if (!system.isDirectory()) continue;
    for (const event of readdirSync(join(eventsDir, system.name), { withFileTypes: true })) {
      const file = join(eventsDir, system.name, event.name, 'format');
      if (!event.isDirectory() || !existsSync(file)) continue;
      try {
        classes.push(parseFormatFile(readText(file), { file, system: system.name, longSize }));
      } catch (e) {
        if (skip === undefined || !(e instanceof TraceFormatError)) throw e;
        skip(e);
      }
    }
  }
  return classes;
}

/**
 * Opens a raw-pages directory. The page size is `buffer_subbuf_size_kb` when present, else what `header_page` says.
 * Events are yielded in timestamp order across CPUs.
 *
 * @throws TraceFormatError `ERR_TRACE_INPUT` when the directory lacks `events/header_page` or `cpuN.raw` files.
 */
export function openRawPagesDir(dir: string, options: FtraceReadOptions = {}): FtraceReader {
  const headerPageFile = join(dir, 'events', 'header_page');
  if (!existsSync(headerPageFile)) {
    throw new TraceFormatError('ERR_TRACE_INPUT', 'not a raw-pages directory: no events/header_page', { file: dir });
  }
  const headerEventFile = join(dir, 'events', 'header_event');
  if (existsSync(headerEventFile)) parseHeaderEvent(readText(headerEventFile), { file: headerEventFile });
  const subbufKb = optional(join(dir, 'buffer_subbuf_size_kb'))?.trim();
  if (subbufKb !== undefined && !/^\d+$/.test(subbufKb)) {
    throw new TraceFormatError('ERR_TRACE_INPUT', `bad buffer_subbuf_size_kb ${JSON.stringify(subbufKb)}`, {
      file: dir,
    });
  }
  const headerText = readText(headerPageFile);
  const page = parseHeaderPage(headerText, {
    file: headerPageFile,
    ...(subbufKb !== undefined ? { pageSize: Number(subbufKb) * 1024 } : {}),
  });
  const longSize = page.commitSize;
  const cpus = listRawCpuFiles(dir);
  if (cpus.length === 0) throw new TraceFormatError('ERR_TRACE_INPUT', 'no cpuN.raw files', { file: dir });
  const warnings: string[] = [];
  const kallsymsText = optional(join(dir, 'kallsyms'));
  let kallsyms: Kallsyms | undefined;
  const clock = optional(join(dir, 'trace_clock'))?.match(/\[(\w+)\]/)?.[1];
  const printkText = optional(join(dir, 'printk_formats'));
  const metadata: FtraceMetadata = {
    byteOrder: page.byteOrder,
    longSize,
    page,
    eventClasses: readEventFormats(
      join(dir, 'events'),
      longSize,
      options.lenient ? (e) => warnings.push(`${e.message}; event left out`) : undefined,
    ),
    cmdlines: parseCmdlines(optional(join(dir, 'saved_cmdlines')) ?? ''),
    kallsyms: () => (kallsyms ??= kallsymsText === undefined ? undefined : Kallsyms.parse(kallsymsText)),
    ...(clock !== undefined ? { clock } : {}),
    ...(kallsymsText !== undefined ? { kallsymsText } : {}),
    ...(printkText ? { printk: parsePrintkFormats(printkText), printkText } : {}),
  };
  const cpuPages = (): CpuPages[] => {
    return cpus.map(({ cpu, file, start, end }) => {
      // From where the pages start: the head room before them is never read.
      const source = fileSource(file);
      const read = source.read(start, Math.max(0, Math.min(end ?? source.size, source.size) - start));
      const bytes = Buffer.from(read.buffer, read.byteOffset, read.byteLength);
      // A file ending inside a page was cut (a full disk, a copy stopped short): the pages before it are whole.
      const whole = bytes.length - (bytes.length % page.pageSize);
      if (whole < bytes.length) {
        const cut = new TraceFormatError(
          'ERR_TRACE_FTRACE_PAGE',
          `the file ends inside a page (${bytes.length - whole} of its ${page.pageSize} bytes)`,
          { file, offset: start + whole },
        );
        if (!options.lenient) throw cut;
        warnings.push(`${cut.message}; CPU ${cpu}: the ${whole / page.pageSize} whole pages before it kept`);
      }
      return { cpu, bytes: bytes.subarray(0, whole), file, fileOffset: start };
    });
  };
  return {
    kind: 'raw-pages',
    metadata,
    eventClasses: metadata.eventClasses,
    warnings,
    tsOffsetNs: 0n,
    cpuPages,
    events(selection?: EventReadOptions): Iterable<TraceEvent> {
      const table = new EventTable(metadata, selection);
      const warn = (m: string) => warnings.push(m);
      const streams = cpuPages().map((pages) =>
        cpuEventBatches(metadata, table, pages, { lenient: options.lenient, warn }),
      );
      return mergeBatches(streams);
    },
  };
}
