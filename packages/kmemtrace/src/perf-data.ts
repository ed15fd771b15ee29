/**
 * A perf.data file of kmem tracepoints (`perf kmem record`), read without perf: trace-format's perf.data reader
 * delivers the samples in perf's time order, and each sample's RAW data (the tracepoint record) is read here into
 * {@link KmemColumns} at the field offsets of the event's format file, as the recording kernel described it. Call
 * sites are named through the kernel's symbols as `perf script` names them: the kallsyms perf saved in its build-id
 * cache at record time, else this machine's /proc/kallsyms when it runs the recording kernel.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir, release } from 'node:os';
import { join } from 'node:path';
import {
  type EventClass,
  type FtraceFieldInfo,
  Kallsyms,
  openPerfData,
  type PerfDataReader,
  type PerfEventAttr,
  type PerfSamples,
  parseFormatFile,
  type SampleWalk,
} from '@evtrace/trace-format';
import { AddressKeys } from './address.ts';
import { EXPECTED_INPUT, KmemError, noKmemEvents } from './errors.ts';
import { ALLOCATOR_CODE, KmemColumns, KmemEventStream, type KmemSource, OP_CODE } from './event.ts';
import { gfpNamer } from './gfp.ts';
import { ByteNames, internName } from './names.ts';
import { BATCH } from './perf-script.ts';
import { addressNamer } from './symbols.ts';
import { gfpTableOf, kmemKind } from './tracepoints.ts';

/** Options of {@link perfDataSource}. */
export interface PerfDataSourceOptions {
  /** Keep what comes before damage (warned about in `diagnostics`). */
  readonly lenient?: boolean;
  /** Symbols for call sites; by default the build-id cache's or the running kernel's (see the module's comment). */
  readonly kallsyms?: Kallsyms;
  /** The samples' order found by another reader of the file (trace-format's `PerfDataReader.walk`), on another thread. */
  readonly walked?: SampleWalk;
}

/** Where a field lies in a record, as its format file says: -1 offset when the event has no such field. */
interface Field {
  readonly offset: number;
  readonly size: number;
  readonly signed: boolean;
}

const NONE: Field = { offset: -1, size: 0, signed: false };

/** What a kmem event's record holds, by the fields the analysis reads. */
interface Plan {
  readonly op: number;
  readonly allocator: number;
  /** Bytes a record must have for every field below. */
  readonly needs: number;
  readonly callSite: Field;
  readonly ptr: Field;
  readonly bytesReq: Field;
  readonly bytesAlloc: Field;
  readonly gfpFlags: Field;
  readonly node: Field;
  /** `__data_loc char[] name` (the cache name of kernels since 6.1). */
  readonly name: Field;
  readonly pfn: Field;
  readonly order: Field;
  readonly migratetype: Field;
}

function planOf(eventClass: EventClass): Plan | undefined {
  const kind = kmemKind(eventClass);
  const fields = eventClass.ftrace?.fields;
  if (kind === undefined || fields === undefined) return undefined;
  const byName = new Map(fields.map((f) => [f.name, f]));
  const field = (name: string, numeric = true): Field => {
    const f: FtraceFieldInfo | undefined = byName.get(name);
    if (f === undefined) return NONE;
    if (numeric && ![1, 2, 4, 8].includes(f.size)) return NONE;
    return { offset: f.offset, size: f.size, signed: f.signed };
  };
  const nameField = byName.get('name');
  const plan: Plan = {
    op: OP_CODE[kind.op],
    allocator: ALLOCATOR_CODE[kind.allocator],
    needs: 0,
    callSite: field('call_site'),
    ptr: field('ptr'),
    bytesReq: field('bytes_req'),
    bytesAlloc: field('bytes_alloc'),
    gfpFlags: field('gfp_flags'),
    node: field('node'),
    name: nameField?.cType.startsWith('__data_loc') && nameField.size === 4 ? field('name') : NONE,
    pfn: field('pfn'),
    order: field('order'),
    migratetype: field('migratetype'),
  };
  const needs = Math.max(
    ...[
      plan.callSite,
      plan.ptr,
      plan.bytesReq,
      plan.bytesAlloc,
      plan.gfpFlags,
      plan.node,
      plan.name,
      plan.pfn,
      plan.order,
      plan.migratetype,
    ].map((f) => f.offset + f.size),
  );
  return { ...plan, needs };
}

/**
 * Stores a little-endian integer field (0 when absent) at `out[j]`; 64-bit values beyond 2^53 lose their low bits, as
 * sizes never are. It stores rather than returns: a double returned from a function not inlined is boxed, an
 * allocation per field and event.
 */
function int(v: DataView, at: number, f: Field, out: Float64Array, j: number): void {
  const o = at + f.offset;
  switch (f.size) {
    case 1:
      out[j] = f.signed ? v.getInt8(o) : v.getUint8(o);
      return;
    case 2:
      out[j] = f.signed ? v.getInt16(o, true) : v.getUint16(o, true);
      return;
    case 4:
      out[j] = f.signed ? v.getInt32(o, true) : v.getUint32(o, true);
      return;
    case 8:
      out[j] = (f.signed ? v.getInt32(o + 4, true) : v.getUint32(o + 4, true)) * 4294967296 + v.getUint32(o, true);
      return;
    default:
      out[j] = 0;
  }
}

/** The kernel symbols a perf.data's call sites resolve through, as perf finds them; undefined when none fit. */
export function perfKallsyms(reader: Pick<PerfDataReader, 'kernelBuildId' | 'osRelease'>): Kallsyms | undefined {
  const buildId = reader.kernelBuildId;
  const cacheDir = process.env.PERF_BUILDID_DIR ?? join(homedir(), '.debug');
  const candidates: string[] = [];
  if (buildId !== undefined) candidates.push(join(cacheDir, '[kernel.kallsyms]', buildId, 'kallsyms'));
  if (reader.osRelease === undefined || reader.osRelease === release()) candidates.push('/proc/kallsyms');
  for (const path of candidates) {
    try {
      if (!existsSync(path)) continue;
      const k = Kallsyms.parse(readFileSync(path));
      if (k.size > 0) return k;
    } catch {
      // Unreadable: the next candidate, or addresses in hex.
    }
  }
  return undefined;
}

/**
 * The kmem events of a perf.data file, in the order `perf script` prints them, read as they are iterated (a batch of
 * columns at a time). Call sites are named `symbol+0xoff` (and ordered by that name), keyed in the order they are met,
 * as the perf script reader names and keys them; pointers in hex; gfp flags by the recording kernel's table.
 * @throws KmemError `ERR_KMEM_INPUT` for a perf.data without kmem tracepoint events; trace-format's
 * `ERR_TRACE_PERF_DATA` for a damaged file (unless `lenient`).
 */
export function perfDataSource(file: string, options: PerfDataSourceOptions = {}): KmemSource {
  const reader = openPerfData(file, { lenient: options.lenient === true, batch: BATCH });
  let classes = reader.attrClasses;
  if (options.lenient && reader.eventClasses.length === 0 && reader.header.features.size === 0) {
    // A file cut short has lost the feature sections that trail its data, the formats with them: the running
    // kernel's formats stand in for the events whose ids they carry (a recording of this machine), with a warning.
    classes = runningKernelClasses(reader.header.attrs);
    if (classes.some((c) => c !== undefined))
      reader.warnings.push(`${file}: no tracing data (the file is cut short): the running kernel's kmem formats used`);
  }
  const plans = classes.map((c) => (c === undefined ? undefined : planOf(c)));
  if (!plans.some((p) => p !== undefined))
    throw new KmemError(
      'ERR_KMEM_INPUT',
      `a perf.data without kmem tracepoint events (record them with perf kmem record): expected ${EXPECTED_INPUT}`,
      { file },
    );
  const keys = new AddressKeys();
  let kallsyms: Kallsyms | undefined | null = options.kallsyms;
  const symbols = () => {
    if (kallsyms === undefined) {
      kallsyms = perfKallsyms(reader) ?? null;
      if (kallsyms === null)
        reader.warnings.push(
          `${file}: no symbols of the recording kernel (${reader.osRelease ?? 'release unknown'}, build id ${reader.kernelBuildId ?? 'unknown'}: not in perf's build-id cache, and not the running kernel): call sites in hex; give them with --kallsyms`,
        );
    }
    return kallsyms ?? undefined;
  };
  const sites = new SiteKeys();
  const siteAddresses = sites.addresses;
  let named: ReturnType<typeof addressNamer> | undefined;
  const siteName = (key: number) => {
    if (key < 1 || key > siteAddresses.length) return '';
    named ??= addressNamer(keys, symbols());
    return named.siteName(siteAddresses[key - 1]!);
  };
  const caches = new ByteNames();
  const cacheNames: string[] = [];
  const recent = new RecentNames();
  const diagnostics = reader.warnings;
  const out = new KmemColumns(BATCH);
  let count = 0;
  let skipped = 0;
  const skip = (offset: number, why: string) => {
    if (!options.lenient) throw new KmemError('ERR_KMEM_INPUT', why, { file, offset });
    if (++skipped <= 10) diagnostics.push(`${file}: byte ${offset}: ${why}; skipped`);
  };
  /**
   * Decodes a batch of samples into `out`. A plain function the generator calls, not the generator's own loop: it is
   * optimized as soon as its loop runs hot, where a generator's loop waits for the generator to be resumed.
   */
  function decode(s: PerfSamples): void {
    out.length = 0;
    for (let i = 0; i < s.length; i++) {
      const plan = plans[s.attr[i]!];
      if (plan === undefined) continue;
      const rawAt = s.rawAt[i]!;
      const v = s.chunk[i]!.view;
      if (rawAt < 0 || s.rawSize[i]! < plan.needs) {
        skip(
          s.offset[i]!,
          `kmem sample with ${Math.max(0, s.rawSize[i]!)} bytes of tracepoint data, fewer than its format's fields`,
        );
        continue;
      }
      const j = out.length++;
      out.op[j] = plan.op;
      out.allocator[j] = plan.allocator;
      out.tsNs[j] = s.time[i]!;
      out.cpu[j] = s.cpu[i]!;
      if (plan.allocator === PAGE) {
        int(v, rawAt, plan.pfn, out.ptr, j);
        // An unsigned long of all ones: a failed allocation, perf script's `page=(nil)`.
        if (out.ptr[j]! >= 2 ** 64 - 2048) out.ptr[j] = -1;
        out.callSite[j] = 0;
        out.bytesReq[j] = 0;
        out.bytesAlloc[j] = 0;
        int(v, rawAt, plan.gfpFlags, out.gfpFlags, j);
        out.node[j] = -1;
        int(v, rawAt, plan.order, out.order, j);
        if (plan.migratetype.offset >= 0) int(v, rawAt, plan.migratetype, out.migratetype, j);
        else out.migratetype[j] = Number.NaN;
        out.cache[j] = undefined;
        out.gfpText[j] = undefined;
        continue;
      }
      if (plan.callSite.offset >= 0) {
        address(v, rawAt, plan.callSite, keys, out.callSite, j);
        sites.key(out.callSite, j, v, rawAt + plan.callSite.offset);
      } else out.callSite[j] = 0;
      address(v, rawAt, plan.ptr, keys, out.ptr, j);
      int(v, rawAt, plan.bytesReq, out.bytesReq, j);
      int(v, rawAt, plan.bytesAlloc, out.bytesAlloc, j);
      int(v, rawAt, plan.gfpFlags, out.gfpFlags, j);
      if (plan.node.offset >= 0) int(v, rawAt, plan.node, out.node, j);
      else out.node[j] = -1;
      out.order[j] = 0;
      out.migratetype[j] = Number.NaN;
      out.gfpText[j] = undefined;
      if (plan.name.offset >= 0) {
        const loc = v.getUint32(rawAt + plan.name.offset, true);
        const from = rawAt + (loc & 0xffff);
        let to = from + (loc >>> 16);
        if ((loc & 0xffff) + (loc >>> 16) > s.rawSize[i]!) {
          out.length--;
          skip(s.offset[i]!, 'kmem cache name outside its sample');
          continue;
        }
        const bytes = s.chunk[i]!.bytes;
        while (to > from && bytes[to - 1] === 0) to--;
        let id = recent.find(v, from, to);
        if (id < 0) {
          id = caches.id(bytes, from, to);
          if (id === cacheNames.length) cacheNames.push(internName(caches.text(id)));
          recent.note(bytes, from, to, id);
        }
        out.cache[j] = cacheNames[id];
      } else out.cache[j] = undefined;
    }
  }
  function* batches(): Generator<KmemColumns> {
    for (const s of reader.samples(options.walked)) {
      decode(s);
      count += out.length;
      if (out.length > 0) yield out;
    }
    if (skipped > 10) diagnostics.push(`${file}: ${skipped} kmem samples skipped in all`);
    if (count === 0) throw noKmemEvents(file, skipped);
  }
  const source: KmemSource = {
    events: new KmemEventStream(() => batches()),
    siteName,
    ptrName: (key) => keys.hex(key),
    ptrBytes: (key, out) => keys.writeHex(key, out),
    siteOrder: siteName,
    gfpNames: gfpNamer(gfpTableOf(reader.eventClasses)),
    diagnostics,
  };
  perfDataState.set(source, { siteAddresses, keys, loadSymbols: () => void symbols(), walk: () => reader.walk() });
  return source;
}

/**
 * What names a perf.data source's keys: its call sites' address keys by site key, and its address keys. A source
 * whose events were decoded on another thread adopts that thread's (perf-data-thread.ts).
 */
export interface PerfDataState {
  readonly siteAddresses: number[];
  readonly keys: AddressKeys;
  /** Loads the kernel symbols now rather than at the first name. */
  readonly loadSymbols: () => void;
  /**
   * Walks the file with the source's reader to order the samples, for another thread to read them (the source's own
   * events are then not read).
   */
  readonly walk: () => SampleWalk | undefined;
}

/** The state of each source {@link perfDataSource} made. */
export const perfDataState = new WeakMap<KmemSource, PerfDataState>();

/** The kmem tracepoint formats of the mounted tracefs, for the attributes whose tracepoint id is theirs. */
function runningKernelClasses(attrs: readonly PerfEventAttr[]): (EventClass | undefined)[] {
  const byId = new Map<number, EventClass>();
  try {
    const mount = /^\S+ (\S+) tracefs /m.exec(readFileSync('/proc/mounts', 'utf8'))?.[1];
    if (mount !== undefined)
      for (const name of readdirSync(join(mount, 'events', 'kmem'))) {
        const format = join(mount, 'events', 'kmem', name, 'format');
        if (!existsSync(format)) continue;
        const c = parseFormatFile(readFileSync(format, 'utf8'), { file: format, system: 'kmem' });
        byId.set(c.id, c);
      }
  } catch {
    // No tracefs here, or not readable: no formats.
  }
  return attrs.map((a) => (a.type === 2 ? byId.get(Number(a.config)) : undefined));
}

const PAGE = ALLOCATOR_CODE.page;
const TWO52 = 2 ** 52;

/** Stores at `out[j]` the key of an address field (0 when absent), without a bigint for canonical addresses. */
function address(v: DataView, at: number, f: Field, keys: AddressKeys, out: Float64Array, j: number): void {
  if (f.size !== 8) {
    out[j] = f.size === 4 ? v.getUint32(at + f.offset, true) : 0;
    return;
  }
  const o = at + f.offset;
  const hi = v.getUint32(o + 4, true);
  const lo = v.getUint32(o, true);
  const top = hi >>> 20;
  if (top === 0xfff) out[j] = TWO52 + (hi & 0xfffff) * 4294967296 + lo;
  else if (top === 0) out[j] = hi * 4294967296 + lo;
  else out[j] = keys.key((BigInt(hi) << 32n) | BigInt(lo));
}

/**
 * The cache name last met of each length (up to 63 bytes) and its id: a sample's name is most often the one last met
 * of its length, and comparing it four bytes at a time costs less than hashing it.
 */
class RecentNames {
  readonly #bytes = new Uint8Array(64 * 64);
  readonly #view = new DataView(this.#bytes.buffer);
  readonly #ids = new Int32Array(64).fill(-1);

  /** The id of the name at `from` to `to` of `v` when it is the last noted of its length, else -1. */
  find(v: DataView, from: number, to: number): number {
    const n = to - from;
    if (n >= 64) return -1;
    const id = this.#ids[n]!;
    if (id < 0) return -1;
    const at = n * 64;
    let k = 0;
    for (; k + 4 <= n; k += 4) if (v.getInt32(from + k, true) !== this.#view.getInt32(at + k, true)) return -1;
    for (; k < n; k++) if (v.getUint8(from + k) !== this.#bytes[at + k]) return -1;
    return id;
  }

  /** Notes the name at `from` to `to` of `bytes` as the last of its length, with its id. */
  note(bytes: Uint8Array, from: number, to: number, id: number): void {
    const n = to - from;
    if (n >= 64) return;
    this.#bytes.set(bytes.subarray(from, to), n * 64);
    this.#ids[n] = id;
  }
}

function hash(hi: number, lo: number): number {
  const h = Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b);
  return h ^ (h >>> 15);
}

/**
 * Call sites keyed 1, 2, ... in the order they are first met, as the perf script reader keys their text (tables
 * that order ties by key then read alike): an open-addressing table on the address's two 32-bit words, which costs
 * no allocation per event.
 */
class SiteKeys {
  /** The address key of each site, by site key - 1. */
  readonly addresses: number[] = [];
  #hi = new Int32Array(1024);
  #lo = new Int32Array(1024);
  /** Site key per slot, 0 when empty. */
  #ids = new Int32Array(1024);

  /**
   * Replaces the address key at `keys[j]` by the site key of that address, the 8 bytes at `o` in `v` (in place: a
   * double passed to a call or returned would be boxed).
   */
  key(keys: Float64Array, j: number, v: DataView, o: number): void {
    const lo = v.getInt32(o, true);
    const hi = v.getInt32(o + 4, true);
    const mask = this.#ids.length - 1;
    for (let slot = hash(hi, lo) & mask; ; slot = (slot + 1) & mask) {
      const id = this.#ids[slot]!;
      if (id === 0) {
        this.addresses.push(keys[j]!);
        this.#ids[slot] = this.addresses.length;
        this.#hi[slot] = hi;
        this.#lo[slot] = lo;
        keys[j] = this.addresses.length;
        if (this.addresses.length * 2 > this.#ids.length) this.#grow();
        return;
      }
      if (this.#lo[slot] === lo && this.#hi[slot] === hi) {
        keys[j] = id;
        return;
      }
    }
  }

  #grow(): void {
    const { hi, lo, ids } = { hi: this.#hi, lo: this.#lo, ids: this.#ids };
    this.#hi = new Int32Array(ids.length * 2);
    this.#lo = new Int32Array(ids.length * 2);
    this.#ids = new Int32Array(ids.length * 2);
    const mask = this.#ids.length - 1;
    for (let s = 0; s < ids.length; s++) {
      if (ids[s] === 0) continue;
      let slot = hash(hi[s]!, lo[s]!) & mask;
      while (this.#ids[slot] !== 0) slot = (slot + 1) & mask;
      this.#ids[slot] = ids[s]!;
      this.#hi[slot] = hi[s]!;
      this.#lo[slot] = lo[s]!;
    }
  }
}
