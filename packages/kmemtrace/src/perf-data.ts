/**
 * A perf.data file of kmem tracepoints (`perf kmem record`), read without perf: trace-format's perf.data reader
 * delivers the samples in perf's time order, and each sample's RAW data (the tracepoint record) is read here into
 * {@link KmemColumns} at the field offsets of the event's format file, as the recording kernel described it. Call
 * sites are named through the kernel's symbols as `perf script` names them: the kallsyms perf saved in its build-id
 * cache at record time, else this machine's /proc/kallsyms when it runs the recording kernel.
 */
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { homedir, release } from 'node:os';
import { join } from 'node:path';
import {
  type EventClass,
  type FtraceFieldInfo,
  Kallsyms,
  openPerfData,
  type PerfChunk,
  type PerfDataReader,
  type PerfEventAttr,
  PerfSampleBits,
  parseFormatFile,
  type SampleWalk,
  sampleLayout,
} from '@evtrace/trace-format';
import { AddressKeys } from './address.ts';
import {
  type AnalysisState,
  type AnalyzeOptions,
  analysisOf,
  type Bucket,
  type KmemAnalysis,
  type KmemErrorKind,
  type KmemIssue,
} from './analyze.ts';
import { EXPECTED_INPUT, KmemError, noKmemEvents } from './errors.ts';
import { ALLOCATOR_CODE, KmemColumns, KmemEventStream, type KmemSource, OP_CODE } from './event.ts';
import { gfpNamer } from './gfp.ts';
import { ByteNames, internName } from './names.ts';
import { type PerfDataWasm, perfDataWasm } from './perf-data-wasm.ts';
import { BATCH } from './perf-script.ts';
import { addressNamer } from './symbols.ts';
import { gfpTableOf, kmemKind } from './tracepoints.ts';

/** Options of {@link perfDataSource}. */
export interface PerfDataSourceOptions {
  /** Keep what comes before damage (warned about in `diagnostics`). */
  readonly lenient?: boolean;
  /** Symbols for call sites; by default the build-id cache's or the running kernel's (see the module's comment). */
  readonly kallsyms?: Kallsyms;
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
  /** Decodes the numeric fields (all but the time, the CPU and the cache name) into row `j` of `out`. */
  readonly decode: FieldDecoder;
}

/** A plan's numeric fields decoded from the RAW data at `at` of `v`: straight-line code compiled per event. */
type FieldDecoder = (v: DataView, at: number, out: KmemColumns, j: number, keys: AddressKeys, sites: SiteKeys) => void;

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
  const plan = {
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
  return { ...plan, needs, decode: compileFields(plan) };
}

/**
 * The statements that store a field at `at` + its offset of `v` in `out.<column>[j]` (0 when the event has no such
 * field): the 8-byte integer as two 32-bit words (sizes never pass 2^53).
 */
function intField(column: string, f: Field): string {
  const o = `at + ${f.offset}`;
  const get = (bits: number, signed: boolean, at: string) => `v.get${signed ? 'Int' : 'Uint'}${bits}(${at}, true)`;
  let value: string;
  if (f.offset < 0) value = '0';
  else if (f.size === 1) value = `v.get${f.signed ? 'Int' : 'Uint'}8(${o})`;
  else if (f.size === 8) value = `${get(32, f.signed, `${o} + 4`)} * 4294967296 + ${get(32, false, o)}`;
  else value = get(f.size * 8, f.signed, o);
  return `out.${column}[j] = ${value};`;
}

/** An address field: canonical kernel addresses as exact doubles (see AddressKeys), others keyed by their bigint. */
function addressField(column: string, f: Field): string {
  if (f.size === 4) return `out.${column}[j] = v.getUint32(at + ${f.offset}, true);`;
  if (f.size !== 8) return `out.${column}[j] = 0;`;
  return [
    `hi = v.getUint32(at + ${f.offset + 4}, true);`,
    `lo = v.getUint32(at + ${f.offset}, true);`,
    `out.${column}[j] = hi >>> 20 === 0xfff ? ${TWO52} + (hi & 0xfffff) * 4294967296 + lo`,
    `  : hi >>> 20 === 0 ? hi * 4294967296 + lo : keys.key((BigInt(hi) << 32n) | BigInt(lo));`,
  ].join('\n');
}

/**
 * The plan's decoder as one function of straight-line code: per field, a switch on its size and sign and a call that
 * stayed out of line cost several times what the decoding itself does.
 */
function compileFields(plan: Omit<Plan, 'needs' | 'decode'>): FieldDecoder {
  const fields = [plan.callSite, plan.ptr, plan.bytesReq, plan.bytesAlloc, plan.gfpFlags, plan.node, plan.pfn];
  // Offsets and sizes are integers the format file gave: nothing else is written into the code.
  for (const f of [...fields, plan.order, plan.migratetype])
    if (!Number.isInteger(f.offset) || !Number.isInteger(f.size)) throw new RangeError('a field offset not an integer');
  const body = [`let hi = 0, lo = 0;`, `out.op[j] = ${plan.op};`, `out.allocator[j] = ${plan.allocator};`];
  if (plan.allocator === PAGE)
    body.push(
      intField('ptr', plan.pfn),
      // An unsigned long of all ones: a failed allocation, perf script's `page=(nil)`.
      `if (out.ptr[j] >= ${2 ** 64 - 2048}) out.ptr[j] = -1;`,
      'out.callSite[j] = 0;',
      'out.bytesReq[j] = 0;',
      'out.bytesAlloc[j] = 0;',
      intField('gfpFlags', plan.gfpFlags),
      'out.node[j] = -1;',
      intField('order', plan.order),
      plan.migratetype.offset >= 0 ? intField('migratetype', plan.migratetype) : 'out.migratetype[j] = NaN;',
    );
  else
    body.push(
      plan.callSite.offset >= 0
        ? `${addressField('callSite', plan.callSite)}\nsites.key(out.callSite, j, v, at + ${plan.callSite.offset});`
        : 'out.callSite[j] = 0;',
      addressField('ptr', plan.ptr),
      intField('bytesReq', plan.bytesReq),
      intField('bytesAlloc', plan.bytesAlloc),
      intField('gfpFlags', plan.gfpFlags),
      plan.node.offset >= 0 ? intField('node', plan.node) : 'out.node[j] = -1;',
      'out.order[j] = 0;',
      'out.migratetype[j] = NaN;',
    );
  body.push('out.gfpText[j] = undefined;');
  return new Function('v', 'at', 'out', 'j', 'keys', 'sites', body.join('\n')) as FieldDecoder;
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
  let out = new KmemColumns(BATCH);
  /** Where the batch being decoded gives each row's cache name id (-1: none), for a reader on another thread. */
  let cacheIds: Int32Array | undefined;
  let count = 0;
  let skipped = 0;
  /** The samples' order found by another reader of the file, on another thread (see PerfDataState.replay). */
  let walked: SampleWalk | undefined;
  const skip = (offset: number, why: string) => {
    if (!options.lenient) throw new KmemError('ERR_KMEM_INPUT', why, { file, offset });
    if (++skipped <= 10) diagnostics.push(`${file}: byte ${offset}: ${why}; skipped`);
  };
  // Where each attribute's samples hold their time and CPU (-1: not recorded).
  const layouts = reader.header.attrs.map(sampleLayout);
  const timeAt = layouts.map((l) => l.time);
  const cpuAt = layouts.map((l) => l.cpu);
  /** Decodes a sample into the next row of `out` as the reader delivers it (see trace-format's SampleVisitor). */
  function visit(chunk: PerfChunk, at: number, attr: number, rawAt: number, rawSize: number): void {
    const plan = plans[attr];
    if (plan === undefined) return;
    if (rawAt < 0 || rawSize < plan.needs) {
      skip(
        chunk.base + at,
        `kmem sample with ${Math.max(0, rawSize)} bytes of tracepoint data, fewer than its format's fields`,
      );
      return;
    }
    const v = chunk.view;
    const j = out.length;
    const t = timeAt[attr]!;
    const c = cpuAt[attr]!;
    out.tsNs[j] = t >= 0 ? v.getUint32(at + t, true) + v.getUint32(at + t + 4, true) * 4294967296 : 0;
    out.cpu[j] = c >= 0 ? v.getInt32(at + c, true) : -1;
    plan.decode(v, rawAt, out, j, keys, sites);
    if (plan.name.offset < 0) {
      out.cache[j] = undefined;
      if (cacheIds !== undefined) cacheIds[j] = -1;
      out.length++;
      return;
    }
    const loc = v.getUint32(rawAt + plan.name.offset, true);
    const from = rawAt + (loc & 0xffff);
    let to = from + (loc >>> 16);
    if ((loc & 0xffff) + (loc >>> 16) > rawSize) {
      skip(chunk.base + at, 'kmem cache name outside its sample');
      return;
    }
    const bytes = chunk.bytes;
    while (to > from && bytes[to - 1] === 0) to--;
    let id = recent.find(v, from, to);
    if (id < 0) {
      id = caches.id(bytes, from, to);
      if (id === cacheNames.length) cacheNames.push(internName(caches.text(id)));
      recent.note(bytes, from, to, id);
    }
    out.cache[j] = cacheNames[id];
    if (cacheIds !== undefined) cacheIds[j] = id;
    out.length++;
  }
  function* batches(): Generator<KmemColumns> {
    // The reader hands each sample to `visit` and ends a batch after BATCH samples, kmem or not.
    out.length = 0;
    for (const _ of reader.samples(walked, visit)) {
      count += out.length;
      if (out.length > 0) yield out;
      out.length = 0;
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
  perfDataState.set(source, {
    siteAddresses,
    keys,
    cacheNames,
    loadSymbols: () => void symbols(),
    walk: () => reader.walk(),
    replay: (w) => {
      walked = w;
    },
    into: (columns, ids) => {
      out = columns;
      cacheIds = ids;
    },
    analyseInWasm: (options) => analyseInWasm(options),
  });
  return source;

  /** See PerfDataState.analyseInWasm. */
  function analyseInWasm(options: AnalyzeOptions): KmemAnalysis | undefined {
    const wasmPlans = wasmLayout();
    if (wasmPlans === undefined) return undefined;
    const w = perfDataWasm();
    const { id, time, cpu, ids } = wasmPlans;
    w.configureLayout(id, time, cpu, BigInt(Math.min(...ids)));
    plans.forEach((plan, event) => {
      const l = layouts[event]!;
      w.configureSample(event, l.fixed, l.attr.sampleType & PerfSampleBits.RAW ? l.fixed : -1);
      for (const i of reader.header.attrs[event]!.ids) w.configureId(BigInt(i), event);
      if (plan === undefined) return;
      const at = (f: Field) => (f.offset >= 0 ? f.offset : -1);
      w.configureEvent(
        event,
        plan.op | (plan.allocator << 2),
        plan.callSite.offset,
        plan.ptr.offset,
        at(plan.bytesReq),
        at(plan.bytesAlloc),
        at(plan.name),
        plan.needs,
      );
    });
    const intervalNs = options.intervalNs ?? 100_000_000;
    w.configureAnalysis(intervalNs, options.kfreeOfCacheObjectIsError === true, options.examplesPerKind ?? 20);
    w.start();
    const declined = w.DECLINED.value;
    const chunk = 1 << 20;
    const buffer = w.reserve(chunk);
    const { offset, size } = reader.header.data;
    const fd = openSync(file, 'r');
    try {
      for (let at = offset, end = offset + size; at < end; ) {
        const length = Math.min(chunk, end - at);
        const read = readSync(fd, new Uint8Array(w.memory.buffer, buffer, length), 0, length, at);
        if (read < length && read < 8) return undefined;
        const walked = w.walk(buffer, read);
        if (walked === declined || walked === 0) return undefined;
        at += walked;
        w.analyseDeliverable();
      }
    } finally {
      closeSync(fd);
    }
    w.end();
    w.analyseDeliverable();
    if (w.events.value === 0 || w.sparseTime()) return undefined;
    const memory = w.memory.buffer;
    for (let k = cacheNames.length; k < w.names(); k++)
      cacheNames.push(internName(Buffer.from(memory, w.nameStart(k), w.nameLength(k)).toString('utf8')));
    // Names told apart by their bytes, compared as text by the analysis: two that read alike (bytes that are no
    // UTF-8) would be two caches there and one here.
    if (new Set(cacheNames).size < cacheNames.length) return undefined;
    siteAddresses.push(...new Float64Array(memory, w.siteAddresses(), w.sites()));
    const lost = w.lost.value;
    if (lost > 0) diagnostics.push(`${file}: the kernel lost ${lost} events while recording`);
    return analysisOf(wasmAnalysisState(w, cacheNames, intervalNs));
  }

  /**
   * Where the WebAssembly reader finds each sample's fields, when it can read this file: every event's samples with
   * their id, time and CPU at one place, the kmem events' RAW data at one place (nothing of variable size before it),
   * slab events only, with 8-byte call sites, pointers and sizes.
   */
  function wasmLayout(): { id: number; time: number; cpu: number; ids: number[] } | undefined {
    const first = layouts[0];
    if (first === undefined || first.id < 0 || first.time < 0 || first.cpu < 0 || layouts.length > 64) return undefined;
    if (layouts.some((l) => l.id !== first.id || l.time !== first.time || l.cpu !== first.cpu)) return undefined;
    const ids: number[] = [];
    for (const [event, l] of layouts.entries()) {
      ids.push(...l.attr.ids);
      // Nothing of variable size before the RAW data: its size lies right after the fixed fields.
      if ((l.attr.sampleType & (PerfSampleBits.READ | PerfSampleBits.CALLCHAIN)) !== 0) return undefined;
      const plan = plans[event];
      if (plan === undefined) continue;
      if ((l.attr.sampleType & PerfSampleBits.RAW) === 0) return undefined;
      if (plan.allocator === PAGE || plan.callSite.size !== 8 || plan.ptr.size !== 8) return undefined;
      if ([plan.bytesReq, plan.bytesAlloc].some((f) => f.offset >= 0 && f.size !== 8)) return undefined;
    }
    if (ids.length === 0) return undefined;
    const low = Math.min(...ids);
    if (ids.some((i) => i - low >= 4096)) return undefined;
    return { id: first.id, time: first.time, cpu: first.cpu, ids };
  }
}

/** What the WebAssembly reader's analysis gathered, read out of its memory (copies). */
function wasmAnalysisState(w: PerfDataWasm, names: readonly string[], intervalNs: number): AnalysisState {
  const memory = w.memory.buffer;
  const f64 = (at: number, n: number) => new Float64Array(memory, at, n).slice();
  const sites = w.allocSites();
  const pointers = w.pointers();
  const buckets: [number, Bucket][] = [];
  const b = new Float64Array(memory, w.bucketAt(), w.slots() * 6);
  for (let slot = 0; slot < w.slots(); slot++) {
    const at = slot * 6;
    if (b[at + 5] !== 1) continue;
    buckets.push([
      slot,
      { allocs: b[at]!, frees: b[at + 1]!, allocBytes: b[at + 2]!, freeBytes: b[at + 3]!, liveDelta: b[at + 4]! },
    ]);
  }
  const name = (id: number) => (id >= 0 ? names[id] : undefined);
  const examples: KmemIssue[] = [];
  const e = new Float64Array(memory, w.exampleAt(), w.exampleCount.value * 8);
  for (let at = 0; at < e.length; at += 8) {
    const kind = ISSUE_KINDS[e[at]!]!;
    const allocSite = e[at + 5]!;
    const [a, b2] = [e[at + 6]!, e[at + 7]!];
    examples.push({
      kind,
      tsNs: e[at + 1]!,
      cpu: e[at + 2]!,
      ptr: e[at + 3]!,
      callSite: e[at + 4]!,
      ...(Number.isNaN(allocSite) ? {} : { allocSite }),
      detail: issueDetail(kind, a, b2, name),
    });
  }
  const count = (kind: number) => w.issueCount(kind);
  return {
    siteKeys: f64(w.allocSiteKeys(), sites),
    siteHit: f64(w.siteColumn(0), sites),
    siteAlloc: f64(w.siteColumn(1), sites),
    siteReq: f64(w.siteColumn(2), sites),
    sitePing: f64(w.siteColumn(3), sites),
    ptrKeys: f64(w.pointerKeys(), pointers),
    rows: f64(w.pointerRows(), pointers * 8),
    states: new Uint8Array(memory, w.pointerStates(), pointers).slice(),
    buckets,
    counts: {
      events: w.events.value,
      allocs: w.allocs.value,
      frees: w.frees.value,
      failed: w.failed.value,
      req: w.reqSum.value,
      alloc: w.allocSum.value,
      freed: w.freedSum.value,
      crossCpu: w.crossCpu.value,
      first: w.first.value,
      last: w.last.value,
    },
    pages: {
      allocs: 0,
      frees: 0,
      failed: 0,
      pagesAllocated: 0,
      pagesFreed: 0,
      allocFreed: 0,
      allocOnly: 0,
      freeOnly: 0,
      byOrderMigratetype: new Map(),
      byOrder: new Map(),
      byMigratetype: new Map(),
      byGfp: new Map(),
    },
    errorCounts: {
      wrong_free: count(0),
      wrong_cache: count(1),
      double_free: count(2),
      unknown_free: count(3),
      short_alloc: count(4),
      missed_free: count(5),
    },
    examples,
    intervalNs,
  };
}

/** The issue kinds by the WebAssembly analysis's numbers. */
const ISSUE_KINDS: readonly KmemErrorKind[] = [
  'wrong_free',
  'wrong_cache',
  'double_free',
  'unknown_free',
  'short_alloc',
  'missed_free',
];

/** An issue's detail, as KmemAnalyzer words it, from the two figures the WebAssembly analysis keeps. */
function issueDetail(kind: KmemErrorKind, a: number, b: number, name: (id: number) => string | undefined): string {
  switch (kind) {
    case 'short_alloc':
      return `${a} bytes allocated for ${b} requested`;
    case 'missed_free':
      return 'allocated again while live: its free was not seen';
    case 'unknown_free':
      return 'free of a pointer not allocated in the window';
    case 'double_free':
      return 'freed again without an allocation in between';
    case 'wrong_cache':
      return `allocated from ${name(a)}, freed to ${name(b)}`;
    default: {
      if (a === 0) return 'kmalloc object freed with kmem_cache_free';
      const allocatedIn = name(b);
      return `kmem_cache object${allocatedIn ? ` (${allocatedIn})` : ''} freed with kfree`;
    }
  }
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
  /** Has the events come in the order another source's `walk` found (the source opened before the walk is done). */
  readonly replay: (walked: SampleWalk) => void;
  /** The cache names met so far, by id. */
  readonly cacheNames: readonly string[];
  /**
   * Has the next batch decoded into `columns` (of BATCH events), each row's cache name id into `ids`: a reader on
   * another thread hands both over as they are.
   */
  readonly into: (columns: KmemColumns, ids: Int32Array) => void;
  /**
   * Reads and analyses the file with the WebAssembly reader (perf-data-wasm.ts): the analysis `analyze` would make
   * of the source's events, or undefined when that reader declines the file, before or part way (the source's
   * events are then not to be used: open it again and read it with the TypeScript reader, which reports what stopped
   * the other).
   */
  readonly analyseInWasm: (options: AnalyzeOptions) => KmemAnalysis | undefined;
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
