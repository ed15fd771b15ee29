/**
 * The per-sample work of reading and analysing a perf.data of kmem tracepoints, compiled to WebAssembly
 * (AssemblyScript): the walk of the data section's records, each kmem sample's fields decoded as it is read (in file
 * order) into its CPU's queue, the queues merged into perf's order (time, then file order) and each event analysed as
 * KmemAnalyzer (src/analyze.ts) analyses it, figure for figure. perf-data.ts feeds it the file a chunk at a time and
 * reads the analysis out of its memory into a KmemAnalysis (`analysisOf`, shared with KmemAnalyzer).
 *
 * It takes only the common case and declines the rest (`walk` returns DECLINED): a damaged record, a sample of an
 * unknown event, a CPU's samples out of time order or a sample earlier than what perf's rounds already delivered
 * (perf's order is then not the time order), a non-canonical address, a figure past 32 bits. The TypeScript reader
 * then reads the file and reports what it meets, as it always did.
 */

// ---- Configuration, set by the loader from the file's header and the events' formats. ----

const MAX_ATTRS = 64;
const MAX_CPUS = 1024;
/** Per event (attribute): op | allocator << 2 for a kmem event, -1 for another; then RAW offsets of its fields. */
const eventCode = new StaticArray<i32>(MAX_ATTRS);
const siteAt = new StaticArray<i32>(MAX_ATTRS);
const ptrAt = new StaticArray<i32>(MAX_ATTRS);
const reqAt = new StaticArray<i32>(MAX_ATTRS);
const allocAt = new StaticArray<i32>(MAX_ATTRS);
const nameAt = new StaticArray<i32>(MAX_ATTRS);
const needs = new StaticArray<i32>(MAX_ATTRS);
/** Per event: the bytes of a sample's fixed fields, and where its RAW size lies (-1: no RAW data). */
const fixedSize = new StaticArray<i32>(MAX_ATTRS);
const rawSizeAt = new StaticArray<i32>(MAX_ATTRS);
/** Event + 1 by sample id - idBase (0: unknown). */
const ID_SPAN = 4096;
const eventById = new StaticArray<i32>(ID_SPAN);
let idBase: u64 = 0;
/** Where a sample record holds its id, time and CPU (the same for every event: checked by the loader). */
let idAt = 0;
let timeAt = 0;
let cpuAt = 0;

export function configureLayout(id: i32, time: i32, cpu: i32, base: u64): void {
  idAt = id;
  timeAt = time;
  cpuAt = cpu;
  idBase = base;
  for (let i = 0; i < ID_SPAN; i++) eventById[i] = 0;
  for (let i = 0; i < MAX_ATTRS; i++) eventCode[i] = -1;
}

/** Event `event`'s samples: `fixed` bytes of fixed fields, their RAW size at `raw` (-1: none), id `id`. */
export function configureSample(event: i32, fixed: i32, raw: i32): void {
  fixedSize[event] = fixed;
  rawSizeAt[event] = raw;
}

export function configureId(id: u64, event: i32): void {
  eventById[<i32>(id - idBase)] = event + 1;
}

export function configureEvent(
  event: i32,
  code: i32,
  site: i32,
  ptr: i32,
  req: i32,
  alloc: i32,
  name: i32,
  need: i32,
): void {
  eventCode[event] = code;
  siteAt[event] = site;
  ptrAt[event] = ptr;
  reqAt[event] = req;
  allocAt[event] = alloc;
  nameAt[event] = name;
  needs[event] = need;
}

/** Scratch memory for the loader (a chunk of the file, the delivered batch). */
export function reserve(bytes: usize): usize {
  return heap.alloc(bytes);
}

// ---- Queues: a CPU's kmem samples as read, 40 bytes each. ----

const ROW = 40;
const R_TIME = 0; // f64
const R_SEQ = 8; // u32, the sample's place in the file
const R_SITE = 12; // i32, the call site's id here (in the order read)
const R_PTR = 16; // f64, the pointer's address key
const R_REQ = 24; // u32
const R_ALLOC = 28; // u32
const R_CACHE = 32; // i32, the cache name's id (-1: none)
const R_CODE = 36; // u8

const qRows = new StaticArray<usize>(MAX_CPUS);
const qHead = new StaticArray<i32>(MAX_CPUS);
const qTail = new StaticArray<i32>(MAX_CPUS);
const qRoom = new StaticArray<i32>(MAX_CPUS);
/** The newest time queued on each CPU (its samples must come in time order). */
const qLast = new StaticArray<f64>(MAX_CPUS);
let cpus = 0;
let sequence: u32 = 0;

/** perf's rounds: the newest time read, the limit of the next round's delivery, and of the last one delivered. */
let newest: f64 = 0;
let next: f64 = 0;
let delivered: f64 = -Infinity;
let ended = false;

/** Lost events the kernel counted (PERF_RECORD_LOST, LOST_SAMPLES). */
export let lost: f64 = 0;

function rowFor(cpu: i32): usize {
  if (cpu >= cpus) {
    for (let c = cpus; c <= cpu; c++) {
      qHead[c] = 0;
      qTail[c] = 0;
      qRoom[c] = 0;
      qLast[c] = -Infinity;
    }
    cpus = cpu + 1;
  }
  let tail = qTail[cpu];
  if (tail === qRoom[cpu]) {
    const head = qHead[cpu];
    const rows = qRows[cpu];
    if (head > 0) {
      // The delivered front is given back before growing.
      memory.copy(rows, rows + <usize>head * ROW, <usize>(tail - head) * ROW);
      tail -= head;
      qHead[cpu] = 0;
      qTail[cpu] = tail;
    }
    if (tail === qRoom[cpu]) {
      const room = qRoom[cpu] === 0 ? 4096 : qRoom[cpu] * 2;
      qRows[cpu] = rows === 0 ? heap.alloc(<usize>room * ROW) : heap.realloc(rows, <usize>room * ROW);
      qRoom[cpu] = room;
    }
  }
  qTail[cpu] = tail + 1;
  return qRows[cpu] + <usize>tail * ROW;
}

// ---- Addresses, call sites and cache names. ----

const TWO32: f64 = 4294967296;
const TWO52: f64 = 4503599627370496;

/** The address key of a canonical address (kmemtrace's AddressKeys), or -1 for another. */
function addressKey(a: u64): f64 {
  const hi = <u32>(a >> 32);
  const lo = <f64>(<u32>a);
  if (hi >>> 20 === 0xfff) return TWO52 + <f64>(hi & 0xfffff) * TWO32 + lo;
  if (hi >>> 20 === 0) return <f64>hi * TWO32 + lo;
  return -1;
}

function mix(k: u64): u32 {
  // biome-ignore lint/correctness/noPrecisionLoss: a u64 literal, exact in AssemblyScript
  return <u32>((k * 0x9e3779b97f4a7c15) >> 32);
}

/**
 * An open-addressing table from 64-bit keys to dense ids 0, 1, ... in the order added, with the keys by id (each
 * table of this module: call sites by address, cache names by hash, pointers and sites by their analysis keys).
 */
class Keys {
  slots: i32 = 0;
  keys: usize = 0;
  ids: usize = 0;
  size: i32 = 0;
  byId: usize = 0;
  room: i32 = 0;

  constructor() {
    this.grow();
  }

  grow(): void {
    const old = this.slots;
    const oldKeys = this.keys;
    const oldIds = this.ids;
    this.slots = old === 0 ? 1024 : old * 2;
    this.keys = heap.alloc(<usize>this.slots * 8);
    this.ids = heap.alloc(<usize>this.slots * 4);
    memory.fill(this.ids, 0xff, <usize>this.slots * 4);
    const mask = this.slots - 1;
    for (let i = 0; i < old; i++) {
      const id = load<i32>(oldIds + ((<usize>i) << 2));
      if (id < 0) continue;
      const k = load<u64>(oldKeys + ((<usize>i) << 3));
      let s = <i32>(mix(k) & <u32>mask);
      while (load<i32>(this.ids + ((<usize>s) << 2)) >= 0) s = (s + 1) & mask;
      store<u64>(this.keys + ((<usize>s) << 3), k);
      store<i32>(this.ids + ((<usize>s) << 2), id);
    }
    if (old !== 0) {
      heap.free(oldKeys);
      heap.free(oldIds);
    }
  }

  /** The id of `k`, or -1. */
  get(k: u64): i32 {
    const mask = this.slots - 1;
    let s = <i32>(mix(k) & <u32>mask);
    let id = load<i32>(this.ids + ((<usize>s) << 2));
    while (id >= 0) {
      if (load<u64>(this.keys + ((<usize>s) << 3)) === k) return id;
      s = (s + 1) & mask;
      id = load<i32>(this.ids + ((<usize>s) << 2));
    }
    return -1;
  }

  /** The id of `k`, added (with the next id) when absent: check `size` before and after to know which. */
  intern(k: u64): i32 {
    const mask = this.slots - 1;
    let s = <i32>(mix(k) & <u32>mask);
    for (;;) {
      const id = load<i32>(this.ids + ((<usize>s) << 2));
      if (id < 0) break;
      if (load<u64>(this.keys + ((<usize>s) << 3)) === k) return id;
      s = (s + 1) & mask;
    }
    const id = this.size++;
    if (id >= this.room) {
      const room = this.room === 0 ? 1024 : this.room * 2;
      this.byId = this.byId === 0 ? heap.alloc(<usize>room * 8) : heap.realloc(this.byId, <usize>room * 8);
      this.room = room;
    }
    store<u64>(this.byId + ((<usize>id) << 3), k);
    store<u64>(this.keys + ((<usize>s) << 3), k);
    store<i32>(this.ids + ((<usize>s) << 2), id);
    if (this.size * 2 > this.slots) this.grow();
    return id;
  }
}

/** Call sites by address (ids in the order read), each id's address key, and its delivered key (0: not yet). */
const siteTable = new Keys();
let siteAddress: usize = 0;
let siteDelivered: usize = 0;
let siteRoom = 0;
let deliveredSites = 0;
/** Address keys by delivered key - 1. */
let deliveredAddress: usize = 0;

/** The id of the call site at `a` (its address key `key`), made when new. */
function siteId(a: u64, key: f64): i32 {
  const before = siteTable.size;
  const id = siteTable.intern(a);
  if (id === before) {
    if (id >= siteRoom) {
      const room = siteRoom === 0 ? 1024 : siteRoom * 2;
      siteAddress = siteAddress === 0 ? heap.alloc(<usize>room * 8) : heap.realloc(siteAddress, <usize>room * 8);
      siteDelivered = siteDelivered === 0 ? heap.alloc(<usize>room * 4) : heap.realloc(siteDelivered, <usize>room * 4);
      deliveredAddress =
        deliveredAddress === 0 ? heap.alloc(<usize>room * 8) : heap.realloc(deliveredAddress, <usize>room * 8);
      memory.fill(siteDelivered + <usize>siteRoom * 4, 0, <usize>(room - siteRoom) * 4);
      siteRoom = room;
    }
    store<f64>(siteAddress + ((<usize>id) << 3), key);
  }
  return id;
}

/** The delivered key of site `id` (1, 2, ... in the order delivered). */
function deliveredSite(id: i32): i32 {
  let k = load<i32>(siteDelivered + ((<usize>id) << 2));
  if (k === 0) {
    k = ++deliveredSites;
    store<i32>(siteDelivered + ((<usize>id) << 2), k);
    store<f64>(deliveredAddress + ((<usize>(k - 1)) << 3), load<f64>(siteAddress + ((<usize>id) << 3)));
  }
  return k;
}

/** Address keys of the sites by delivered key - 1: `sites()` of them. */
export function siteAddresses(): usize {
  return deliveredAddress;
}
export function sites(): i32 {
  return deliveredSites;
}

/** Cache names: ids 0, 1, ... by their bytes' hash, the bytes kept (offset and length per id). */
const nameTable = new Keys();
let nameBytes: usize = 0;
let nameUsed = 0;
let nameRoom = 0;
let nameIndex: usize = 0;
let nameIndexRoom = 0;
/** Two names of one hash met: the file is declined (never seen; a 64-bit hash of a few hundred names). */
let nameCollision = false;

function nameId(from: usize, n: i32): i32 {
  // biome-ignore lint/correctness/noPrecisionLoss: a u64 literal (FNV-1a's offset basis), exact in AssemblyScript
  let h: u64 = 0xcbf29ce484222325;
  for (let i = 0; i < n; i++) {
    h ^= <u64>load<u8>(from + <usize>i);
    h *= 0x100000001b3;
  }
  const before = nameTable.size;
  const id = nameTable.intern(h);
  if (id < before) {
    const at = load<i32>(nameIndex + ((<usize>id) << 3));
    const same =
      load<i32>(nameIndex + ((<usize>id) << 3) + 4) === n &&
      memory.compare(nameBytes + <usize>at, from, <usize>n) === 0;
    if (!same) nameCollision = true;
    return id;
  }
  if (nameUsed + n > nameRoom) {
    nameRoom = max(nameRoom * 2, nameUsed + n + 4096);
    nameBytes = nameBytes === 0 ? heap.alloc(<usize>nameRoom) : heap.realloc(nameBytes, <usize>nameRoom);
  }
  memory.copy(nameBytes + <usize>nameUsed, from, <usize>n);
  if (id >= nameIndexRoom) {
    nameIndexRoom = nameIndexRoom === 0 ? 256 : nameIndexRoom * 2;
    nameIndex =
      nameIndex === 0 ? heap.alloc(<usize>nameIndexRoom * 8) : heap.realloc(nameIndex, <usize>nameIndexRoom * 8);
  }
  store<i32>(nameIndex + ((<usize>id) << 3), nameUsed);
  store<i32>(nameIndex + ((<usize>id) << 3) + 4, n);
  nameUsed += n;
  return id;
}

/** Cache names: how many, and where name `id`'s bytes lie. */
export function names(): i32 {
  return nameTable.size;
}
export function nameStart(id: i32): usize {
  return nameBytes + <usize>load<i32>(nameIndex + ((<usize>id) << 3));
}
export function nameLength(id: i32): i32 {
  return load<i32>(nameIndex + ((<usize>id) << 3) + 4);
}

// ---- The walk. ----

export const DECLINED = -1;
/** Why the walk declined: the number of the check that failed (for tests and debugging), 0 while it has not. */
export let declined = 0;
function decline(why: i32): i32 {
  declined = why;
  return DECLINED;
}
const SAMPLE = 9;
const FINISHED_ROUND = 68;
const LOST = 2;
const LOST_SAMPLES = 13;
const AUXTRACE = 71;
const U32: u64 = 0xffffffff;

export function start(): void {
  growRows();
  growSiteColumns();
}

/**
 * Walks the whole records of `len` bytes at `at` (the data section from where the last call stopped): the bytes
 * walked (a record cut by the chunk's end is walked from the next chunk), or DECLINED.
 */
export function walk(at: usize, len: i32): i32 {
  let p = 0;
  while (p + 8 <= len) {
    const r = at + <usize>p;
    const size = <i32>load<u16>(r + 6);
    if (size < 8) return decline(1);
    if (p + size > len) break;
    const type = load<u32>(r);
    p += size;
    if (type === SAMPLE) {
      if (size < idAt + 8) return decline(2);
      const slot = <i64>load<u64>(r + <usize>idAt) - <i64>idBase;
      if (slot < 0 || slot >= ID_SPAN) return decline(3);
      const event = eventById[<i32>slot] - 1;
      if (event < 0) return decline(4);
      // Shorter than its fields, or RAW data past its end: damage, for the TypeScript reader to report.
      if (size < fixedSize[event]) return decline(5);
      const rawAt = rawSizeAt[event];
      let rawSize = 0;
      if (rawAt >= 0) {
        if (rawAt + 4 > size) return decline(6);
        rawSize = <i32>load<u32>(r + <usize>rawAt);
        if (rawSize < 0 || rawAt + 4 + rawSize > size) return decline(7);
      }
      const cpu = <i32>load<u32>(r + <usize>cpuAt);
      if (cpu < 0 || cpu >= MAX_CPUS) return decline(8);
      const time = <f64>load<u64>(r + <usize>timeAt);
      // Earlier than a round already delivered, or than the CPU's sample before it: not perf's time order.
      if (time < delivered) return decline(9);
      if (cpu < cpus && time < qLast[cpu]) return decline(10);
      if (time > newest) newest = time;
      const seq = sequence++;
      const code = eventCode[event];
      if (code < 0) continue;
      if (rawAt < 0 || rawSize < needs[event]) return decline(11);
      const raw = r + <usize>rawAt + 4;
      const ptr = addressKey(load<u64>(raw + <usize>ptrAt[event]));
      const siteAddr = load<u64>(raw + <usize>siteAt[event]);
      const siteKey = addressKey(siteAddr);
      if (ptr < 0 || siteKey < 0) return decline(12);
      let req: u64 = 0;
      let alloc: u64 = 0;
      if (reqAt[event] >= 0) req = load<u64>(raw + <usize>reqAt[event]);
      if (allocAt[event] >= 0) alloc = load<u64>(raw + <usize>allocAt[event]);
      if (req > U32 || alloc > U32) return decline(13);
      let cache = -1;
      if (nameAt[event] >= 0) {
        const loc = load<u32>(raw + <usize>nameAt[event]);
        const from = <i32>(loc & 0xffff);
        let n = <i32>(loc >>> 16);
        if (from + n > rawSize) return decline(14);
        while (n > 0 && load<u8>(raw + <usize>(from + n - 1)) === 0) n--;
        cache = nameId(raw + <usize>from, n);
        if (nameCollision) return decline(16);
      }
      const row = rowFor(cpu);
      qLast[cpu] = time;
      store<f64>(row + R_TIME, time);
      store<u32>(row + R_SEQ, seq);
      store<i32>(row + R_SITE, siteId(siteAddr, siteKey));
      store<f64>(row + R_PTR, ptr);
      store<u32>(row + R_REQ, <u32>req);
      store<u32>(row + R_ALLOC, <u32>alloc);
      store<i32>(row + R_CACHE, cache);
      store<u8>(row + R_CODE, <u8>code);
    } else if (type === FINISHED_ROUND) {
      // perf delivers what is not later than the newest time of the rounds before.
      if (next > delivered) delivered = next;
      next = newest;
    } else if (type === LOST && size >= 24) {
      lost += <f64>load<u64>(r + 16);
    } else if (type === LOST_SAMPLES && size >= 16) {
      lost += <f64>load<u64>(r + 8);
    } else if (type === AUXTRACE) {
      return decline(15);
    }
  }
  return p;
}

/** The data section has been walked: everything queued is deliverable. */
export function end(): void {
  ended = true;
}

// ---- Delivery: the queues merged, oldest first (ties in file order), into the analysis. ----

/** Whether queue a's next row comes before queue b's. */
function before(a: i32, b: i32): bool {
  const ra = qRows[a] + <usize>qHead[a] * ROW;
  const rb = qRows[b] + <usize>qHead[b] * ROW;
  const ta = load<f64>(ra + R_TIME);
  const tb = load<f64>(rb + R_TIME);
  return ta < tb || (ta === tb && load<u32>(ra + R_SEQ) < load<u32>(rb + R_SEQ));
}

/** Analyses the deliverable rows, oldest first: how many. A row is deliverable once perf's rounds (or the end) deliver
 * its time. */
export function analyseDeliverable(): i32 {
  const limit = ended ? Infinity : delivered;
  let n = 0;
  for (;;) {
    let best = -1;
    for (let c = 0; c < cpus; c++) {
      if (qHead[c] === qTail[c]) continue;
      if (best < 0 || before(c, best)) best = c;
    }
    if (best < 0) break;
    const row = qRows[best] + <usize>qHead[best] * ROW;
    const time = load<f64>(row + R_TIME);
    if (!(time <= limit)) break;
    qHead[best]++;
    if (qHead[best] === qTail[best]) {
      qHead[best] = 0;
      qTail[best] = 0;
    }
    const code = <i32>load<u8>(row + R_CODE);
    const callSite = <f64>deliveredSite(load<i32>(row + R_SITE));
    const ptr = load<f64>(row + R_PTR);
    const cache = load<i32>(row + R_CACHE);
    tick(time);
    if ((code & 3) === OP_ALLOC)
      analyseAlloc(
        time,
        best,
        callSite,
        ptr,
        <f64>load<u32>(row + R_REQ),
        <f64>load<u32>(row + R_ALLOC),
        code >> 2,
        cache,
      );
    else analyseFree(time, best, callSite, ptr, code >> 2, cache);
    n++;
  }
  return n;
}

// ---- The analysis (KmemAnalyzer's, for slab events), fed by `analyse` instead of a batch. ----

const OP_ALLOC = 0;
const KMALLOC = 0;
const CACHE = 1;
const ZERO_SIZE_PTR: f64 = 16;
/** A pointer's row, as KmemAnalyzer lays it: site, hits, bytes allocated and requested, cross-CPU frees, the last
 * allocation's bytes, CPU (-1 after a free) and time; and its state byte (LIVE | allocator) and cache name id. */
const P = 8;
const P_SITE = 0;
const P_HIT = 1;
const P_ALLOC = 2;
const P_REQ = 3;
const P_PING = 4;
const P_LAST = 5;
const P_CPU = 6;
const P_NS = 7;
const LIVE: u8 = 4;

let intervalNs: f64 = 1e8;
let strictKfree = false;
let examplesPerKind = 20;

export function configureAnalysis(interval: f64, strict: bool, examples: i32): void {
  intervalNs = interval;
  strictKfree = strict;
  examplesPerKind = examples;
}

const ptrs = new Keys();
const siteKeysByAlloc = new Keys();
/** Per pointer: P figures, the state byte and the cache name id. */
let rows: usize = 0;
let pState: usize = 0;
let pCache: usize = 0;
let rowRoom = 0;
/** Per site (dense ids in the order first allocated from): hits, bytes allocated, requested, cross-CPU frees. */
let sCols: usize = 0;
let sRoom = 0;

export let events: f64 = 0;
export let allocs: f64 = 0;
export let frees: f64 = 0;
export let failed: f64 = 0;
export let reqSum: f64 = 0;
export let allocSum: f64 = 0;
export let freedSum: f64 = 0;
export let crossCpu: f64 = 0;
export let first: f64 = 0;
export let last: f64 = 0;

/** Time series buckets by slot: allocs, frees, bytes allocated, freed, change of live bytes (5 f64), and used. */
let buckets: usize = 0;
let bucketRoom = 0;
let bucket: usize = 0;
const unslotted = heap.alloc(48);
let slotNow: f64 = -1;
let slotCount = 0;

/** Issues: counts by kind, and the examples kept (kind, time, cpu, ptr, site, alloc site, two figures). */
const KINDS = 6;
export const WRONG_FREE = 0;
export const WRONG_CACHE = 1;
export const DOUBLE_FREE = 2;
export const UNKNOWN_FREE = 3;
export const SHORT_ALLOC = 4;
export const MISSED_FREE = 5;
const issueCounts = new StaticArray<f64>(KINDS);
const EXAMPLE = 64;
let examples: usize = 0;
let exampleRoom = 0;
export let exampleCount = 0;

function growRows(): void {
  const room = rowRoom === 0 ? 1024 : rowRoom * 2;
  rows = rows === 0 ? heap.alloc(<usize>room * P * 8) : heap.realloc(rows, <usize>room * P * 8);
  pState = pState === 0 ? heap.alloc(<usize>room) : heap.realloc(pState, <usize>room);
  pCache = pCache === 0 ? heap.alloc(<usize>room * 4) : heap.realloc(pCache, <usize>room * 4);
  rowRoom = room;
}

function growSiteColumns(): void {
  const room = sRoom === 0 ? 256 : sRoom * 2;
  const cols = heap.alloc(<usize>room * 32);
  memory.fill(cols, 0, <usize>room * 32);
  for (let c = 0; c < 4; c++)
    if (sRoom !== 0) memory.copy(cols + <usize>c * room * 8, sCols + <usize>c * sRoom * 8, <usize>sRoom * 8);
  if (sRoom !== 0) heap.free(sCols);
  sCols = cols;
  sRoom = room;
}

function site(column: i32, id: i32): usize {
  return sCols + (<usize>column * sRoom + <usize>id) * 8;
}

function issue(kind: i32, ts: f64, cpu: i32, ptr: f64, callSite: f64, allocSite: f64, a: f64, b: f64): void {
  issueCounts[kind] += 1;
  if (issueCounts[kind] > <f64>examplesPerKind) return;
  if (exampleCount === exampleRoom) {
    exampleRoom = exampleRoom === 0 ? 64 : exampleRoom * 2;
    examples =
      examples === 0 ? heap.alloc(<usize>exampleRoom * EXAMPLE) : heap.realloc(examples, <usize>exampleRoom * EXAMPLE);
  }
  const e = examples + <usize>exampleCount * EXAMPLE;
  exampleCount++;
  store<f64>(e, <f64>kind);
  store<f64>(e + 8, ts);
  store<f64>(e + 16, <f64>cpu);
  store<f64>(e + 24, ptr);
  store<f64>(e + 32, callSite);
  store<f64>(e + 40, allocSite);
  store<f64>(e + 48, a);
  store<f64>(e + 56, b);
}

function tick(ts: f64): void {
  if (events++ === 0) first = ts;
  last = ts;
  let slot = Math.floor((ts - first) / intervalNs);
  if (!(slot >= 0)) slot = 0;
  if (slot !== slotNow) {
    slotNow = slot;
    if (slot >= <f64>(1 << 24)) {
      // Figures go to a bucket no slot owns: the file is declined at the end (see sparseTime).
      bucket = unslotted;
      tooManySlots = true;
      return;
    }
    const s = <i32>slot;
    if (s >= bucketRoom) {
      let room = bucketRoom === 0 ? 64 : bucketRoom;
      while (room <= s) room *= 2;
      const b = heap.alloc(<usize>room * 48);
      memory.fill(b, 0, <usize>room * 48);
      if (bucketRoom !== 0) {
        memory.copy(b, buckets, <usize>bucketRoom * 48);
        heap.free(buckets);
      }
      buckets = b;
      bucketRoom = room;
    }
    if (s >= slotCount) slotCount = s + 1;
    bucket = buckets + <usize>s * 48;
    store<f64>(bucket + 40, 1);
  }
}
/** A slot past 2^24 intervals: the time series would be too sparse for an array (the TypeScript analysis takes it). */
let tooManySlots = false;

function add(at: usize, value: f64): void {
  store<f64>(at, load<f64>(at) + value);
}

function analyseAlloc(
  ts: f64,
  cpu: i32,
  callSite: f64,
  ptr: f64,
  req: f64,
  alloc: f64,
  allocator: i32,
  cache: i32,
): void {
  allocs += 1;
  reqSum += req;
  allocSum += alloc;
  add(bucket, 1);
  add(bucket + 16, alloc);
  if (ptr === 0) failed += 1;
  else {
    add(bucket + 32, alloc);
    if (alloc < req) issue(SHORT_ALLOC, ts, cpu, ptr, callSite, NaN, alloc, req);
  }
  const before = ptrs.size;
  const p = ptrs.intern(reinterpret<u64>(ptr));
  if (p >= rowRoom) growRows();
  const r = rows + <usize>p * P * 8;
  if (p === before) {
    store<f64>(r + P_HIT * 8, 1);
    store<f64>(r + P_ALLOC * 8, alloc);
    store<f64>(r + P_REQ * 8, req);
    store<f64>(r + P_PING * 8, 0);
  } else {
    if (load<u8>(pState + <usize>p) & LIVE) {
      issue(MISSED_FREE, ts, cpu, ptr, callSite, load<f64>(r + P_SITE * 8), 0, 0);
      add(bucket + 32, -load<f64>(r + P_LAST * 8));
    }
    add(r + P_HIT * 8, 1);
    add(r + P_ALLOC * 8, alloc);
    add(r + P_REQ * 8, req);
  }
  store<i32>(pCache + ((<usize>p) << 2), cache);
  store<f64>(r + P_SITE * 8, callSite);
  store<f64>(r + P_LAST * 8, alloc);
  store<f64>(r + P_CPU * 8, <f64>cpu);
  store<f64>(r + P_NS * 8, ts);
  store<u8>(pState + <usize>p, <u8>((ptr !== 0 ? LIVE : 0) | allocator));
  const n = siteKeysByAlloc.size;
  const s = siteKeysByAlloc.intern(reinterpret<u64>(callSite));
  if (s >= sRoom) growSiteColumns();
  if (s === n) {
    store<f64>(site(0, s), 1);
    store<f64>(site(1, s), alloc);
    store<f64>(site(2, s), req);
    store<f64>(site(3, s), 0);
  } else {
    add(site(0, s), 1);
    add(site(1, s), alloc);
    add(site(2, s), req);
  }
}

/** Whether cache name `id` is a name JavaScript would count as text (not none, not empty). */
function named(id: i32): bool {
  return id >= 0 && load<i32>(nameIndex + ((<usize>id) << 3) + 4) > 0;
}

function analyseFree(ts: f64, cpu: i32, callSite: f64, ptr: f64, allocator: i32, cache: i32): void {
  frees += 1;
  add(bucket + 8, 1);
  if (ptr === 0 || ptr === ZERO_SIZE_PTR) return;
  const p = ptrs.get(reinterpret<u64>(ptr));
  if (p < 0) {
    issue(UNKNOWN_FREE, ts, cpu, ptr, callSite, NaN, 0, 0);
    return;
  }
  const r = rows + <usize>p * P * 8;
  const lastBytes = load<f64>(r + P_LAST * 8);
  const allocSite = load<f64>(r + P_SITE * 8);
  freedSum += lastBytes;
  if (<f64>cpu !== load<f64>(r + P_CPU * 8)) {
    add(r + P_PING * 8, 1);
    crossCpu += 1;
    const s = siteKeysByAlloc.get(reinterpret<u64>(allocSite));
    if (s >= 0) add(site(3, s), 1);
  }
  store<f64>(r + P_CPU * 8, -1);
  const state = load<u8>(pState + <usize>p);
  if ((state & LIVE) === 0) {
    issue(DOUBLE_FREE, ts, cpu, ptr, callSite, allocSite, 0, 0);
    return;
  }
  store<u8>(pState + <usize>p, state & ~LIVE);
  add(bucket + 24, lastBytes);
  add(bucket + 32, -lastBytes);
  const allocated = <i32>(state & ~LIVE);
  const allocatedIn = load<i32>(pCache + ((<usize>p) << 2));
  if (allocator === CACHE && allocated === KMALLOC)
    issue(WRONG_FREE, ts, cpu, ptr, callSite, allocSite, 0, <f64>allocatedIn);
  else if (allocator === KMALLOC && allocated === CACHE && strictKfree)
    issue(WRONG_FREE, ts, cpu, ptr, callSite, allocSite, 1, <f64>allocatedIn);
  else if (allocator === CACHE && allocated === CACHE && named(cache) && named(allocatedIn) && cache !== allocatedIn)
    issue(WRONG_CACHE, ts, cpu, ptr, callSite, allocSite, <f64>allocatedIn, <f64>cache);
}

// Exports for reading the analysis.
export function issueCount(kind: i32): f64 {
  return issueCounts[kind];
}
export function exampleAt(): usize {
  return examples;
}
export function pointers(): i32 {
  return ptrs.size;
}
export function pointerKeys(): usize {
  return ptrs.byId;
}
export function pointerRows(): usize {
  return rows;
}
export function pointerStates(): usize {
  return pState;
}
export function allocSites(): i32 {
  return siteKeysByAlloc.size;
}
export function allocSiteKeys(): usize {
  return siteKeysByAlloc.byId;
}
/** Site column `column` (0 hits, 1 bytes allocated, 2 requested, 3 cross-CPU frees) by dense site id. */
export function siteColumn(column: i32): usize {
  return sCols + <usize>column * sRoom * 8;
}
export function bucketAt(): usize {
  return buckets;
}
/** Time series slots used: the buckets' count (48 bytes each: five figures, then 1 when the slot was met). */
export function slots(): i32 {
  return slotCount;
}
export function sparseTime(): bool {
  return tooManySlots;
}
