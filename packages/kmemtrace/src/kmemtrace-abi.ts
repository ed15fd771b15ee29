/**
 * The kmemtrace v1 binary ABI: the relay files (`cpuN` under debugfs `kmemtrace/`) of the original kmemtrace, read
 * by kmemtrace-user. Two layouts carry ABI version 1 (see the README for the sources):
 *
 * - `original`, the design posted for review in July 2008: one packed little-endian 56-byte record per event,
 *   `u8 event_id` (0 null, 1 alloc, 2 free), `u8 type_id` (0 kmalloc, 1 cache, 2 pages), `u16 event_size`,
 *   `s32 node`, then `u64 call_site, ptr, bytes_req, bytes_alloc, gfp_flags` and `s64 timestamp` (ns).
 * - `mainline`, as merged in Linux 2.6.28 (mm/kmemtrace.c): a 24-byte header `u8 event_id` (0 alloc, 1 free),
 *   `u8 type_id`, `u16 event_size`, `s32 seq_num`, `u64 call_site`, `u64 ptr`, followed for allocations by
 *   `u64 bytes_req`, `u64 bytes_alloc`, `u32 gfp_flags`, `s32 numa_node` (48 bytes); no timestamp, the global
 *   sequence number orders events across CPUs.
 *
 * In both, `event_size` is the whole record: a reader skips what it does not know (trailing bytes of a longer
 * record, unknown event or type ids) by it.
 */
import { AddressKeys } from './address.ts';
import { KmemError } from './errors.ts';
import { type Allocator, type KmemEvent, kmemEvent } from './event.ts';

/** Which of the two v1 record layouts. */
export type KmemtraceLayout = 'original' | 'mainline';

/** The ABI version this decoder implements (debugfs `kmemtrace/abi_version`). */
export const KMEMTRACE_ABI_VERSION = 1;

/** Bytes of a whole `original` record, and of `mainline` free and alloc records. */
export const KMEMTRACE_RECORD_SIZE = { original: 56, mainlineFree: 24, mainlineAlloc: 48 } as const;

const TYPES: readonly Allocator[] = ['kmalloc', 'cache', 'page'];

export interface KmemtraceDecodeOptions {
  /** Record layout; default: detected from the first record (`mainline` when its size is 24 or 48). */
  readonly layout?: KmemtraceLayout;
  /** The ABI version the recording declared; default 1. Any other is refused. */
  readonly abiVersion?: number;
  /** The CPU whose relay file this is; -1 (the default) when unknown. */
  readonly cpu?: number;
  /** For error messages. */
  readonly file?: string;
  /** Report a corrupt record and keep the events before it instead of throwing. */
  readonly lenient?: boolean;
  /** Address keys shared across the files of one recording. */
  readonly keys?: AddressKeys;
}

export interface KmemtraceDecoded {
  readonly layout: KmemtraceLayout;
  readonly events: KmemEvent[];
  /** Records skipped because their event or type id is unknown (forward compatibility). */
  readonly skipped: number;
  /** Problems met in lenient mode. */
  readonly diagnostics: string[];
  readonly keys: AddressKeys;
}

/**
 * Decodes one relay file of kmemtrace v1 records.
 * @throws KmemError `ERR_KMEM_RELAY_ABI` for another ABI version; `ERR_KMEM_RELAY_RECORD` (with the byte offset) for
 * a truncated record or an event size below its layout's, unless `lenient`.
 */
export function decodeKmemtrace(bytes: Uint8Array, options: KmemtraceDecodeOptions = {}): KmemtraceDecoded {
  const file = options.file;
  const abi = options.abiVersion ?? KMEMTRACE_ABI_VERSION;
  if (abi !== KMEMTRACE_ABI_VERSION)
    throw new KmemError(
      'ERR_KMEM_RELAY_ABI',
      `kmemtrace ABI version ${abi} is not supported (this decoder implements version ${KMEMTRACE_ABI_VERSION})`,
      file !== undefined ? { file } : {},
    );
  const keys = options.keys ?? new AddressKeys();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const layout = options.layout ?? detectLayout(view);
  const cpu = options.cpu ?? -1;
  const events: KmemEvent[] = [];
  const diagnostics: string[] = [];
  let skipped = 0;
  let at = 0;
  const fail = (message: string) => {
    const error = new KmemError('ERR_KMEM_RELAY_RECORD', message, {
      ...(file !== undefined ? { file } : {}),
      offset: at,
    });
    if (!options.lenient) throw error;
    diagnostics.push(`${error.message}; ${events.length} events before it kept`);
  };
  while (at < view.byteLength) {
    if (view.byteLength - at < 4) {
      fail(`truncated record: ${view.byteLength - at} bytes left, a record header needs 4`);
      break;
    }
    const id = view.getUint8(at);
    const type = view.getUint8(at + 1);
    const size = view.getUint16(at + 2, true);
    const kind = eventKind(layout, id);
    const need = minimumSize(layout, kind);
    if (size < need) {
      fail(`event size ${size} is below the ${need} bytes of a ${layout} ${kind ?? 'record'} (event id ${id})`);
      break;
    }
    if (size > view.byteLength - at) {
      fail(`truncated record: event size ${size}, ${view.byteLength - at} bytes left`);
      break;
    }
    if (kind === undefined && at === 0) {
      // The first record is the evidence the input is kmemtrace at all: an unknown one there is not skipped.
      fail(`event id ${id} is neither a ${layout} kmemtrace alloc nor free: expected a kmemtrace record`);
      break;
    }
    if (kind === undefined || type >= TYPES.length) {
      skipped++;
      at += size;
      continue;
    }
    events.push(
      layout === 'original' ? original(view, at, kind, type, cpu, keys) : mainline(view, at, kind, type, cpu, keys),
    );
    at += size;
  }
  return { layout, events, skipped, diagnostics, keys };
}

function detectLayout(view: DataView): KmemtraceLayout {
  if (view.byteLength < 4) return 'original';
  const size = view.getUint16(2, true);
  return size === KMEMTRACE_RECORD_SIZE.mainlineFree || size === KMEMTRACE_RECORD_SIZE.mainlineAlloc
    ? 'mainline'
    : 'original';
}

function eventKind(layout: KmemtraceLayout, id: number): 'alloc' | 'free' | undefined {
  if (layout === 'original') return id === 1 ? 'alloc' : id === 2 ? 'free' : undefined;
  return id === 0 ? 'alloc' : id === 1 ? 'free' : undefined;
}

function minimumSize(layout: KmemtraceLayout, kind: 'alloc' | 'free' | undefined): number {
  if (layout === 'original') return KMEMTRACE_RECORD_SIZE.original;
  return kind === 'alloc' ? KMEMTRACE_RECORD_SIZE.mainlineAlloc : KMEMTRACE_RECORD_SIZE.mainlineFree;
}

function u64(view: DataView, at: number): number {
  // Sizes and flags: exact up to 2^53, which no allocation reaches.
  return view.getUint32(at, true) + view.getUint32(at + 4, true) * 2 ** 32;
}

function original(
  view: DataView,
  at: number,
  kind: 'alloc' | 'free',
  type: number,
  cpu: number,
  keys: AddressKeys,
): KmemEvent {
  return kmemEvent({
    op: kind,
    allocator: TYPES[type]!,
    tsNs: Number(view.getBigInt64(at + 48, true)),
    cpu,
    callSite: keys.key(view.getBigUint64(at + 8, true)),
    ptr: keys.key(view.getBigUint64(at + 16, true)),
    bytesReq: kind === 'alloc' ? u64(view, at + 24) : 0,
    bytesAlloc: kind === 'alloc' ? u64(view, at + 32) : 0,
    gfpFlags: kind === 'alloc' ? u64(view, at + 40) : 0,
    node: view.getInt32(at + 4, true),
  });
}

function mainline(
  view: DataView,
  at: number,
  kind: 'alloc' | 'free',
  type: number,
  cpu: number,
  keys: AddressKeys,
): KmemEvent {
  const alloc = kind === 'alloc';
  return kmemEvent({
    op: kind,
    allocator: TYPES[type]!,
    // No clock in this layout: the global sequence number is the order.
    tsNs: view.getInt32(at + 4, true),
    cpu,
    callSite: keys.key(view.getBigUint64(at + 8, true)),
    ptr: keys.key(view.getBigUint64(at + 16, true)),
    bytesReq: alloc ? u64(view, at + 24) : 0,
    bytesAlloc: alloc ? u64(view, at + 32) : 0,
    gfpFlags: alloc ? view.getUint32(at + 40, true) : 0,
    node: alloc ? view.getInt32(at + 44, true) : -1,
  });
}
