/**
 * The per-sample work of reading a perf.data of kmem tracepoints, compiled to WebAssembly (AssemblyScript): the walk
 * of the data section's records, each kmem sample's fields decoded as it is read (in file order) into its CPU's
 * queue, and the queues merged into perf's order (time, then file order). perf-data-wasm.ts feeds it the file a
 * chunk at a time and hands what it delivers to the analysis.
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

/** Call sites by address: open addressing, ids 1, 2, ... in the order read; each id's address key. */
let siteSlots = 0;
let siteKeys: usize = 0;
let siteIds: usize = 0;
let siteCount = 0;
let siteAddress: usize = 0;
let siteAddressRoom = 0;
/** The key the analysis gives each site (the order delivered: the one-thread reader's order), 0 before. */
let siteDelivered: usize = 0;
let deliveredSites = 0;
/** Address keys by delivered key - 1. */
let deliveredAddress: usize = 0;

function growSites(): void {
  const old = siteSlots;
  const oldKeys = siteKeys;
  const oldIds = siteIds;
  siteSlots = old === 0 ? 1024 : old * 2;
  siteKeys = heap.alloc(<usize>siteSlots * 8);
  siteIds = heap.alloc(<usize>siteSlots * 4);
  memory.fill(siteIds, 0, <usize>siteSlots * 4);
  const mask = siteSlots - 1;
  for (let i = 0; i < old; i++) {
    const id = load<i32>(oldIds + ((<usize>i) << 2));
    if (id === 0) continue;
    const k = load<u64>(oldKeys + ((<usize>i) << 3));
    let s = <i32>(mix(k) & <u32>mask);
    while (load<i32>(siteIds + ((<usize>s) << 2)) !== 0) s = (s + 1) & mask;
    store<u64>(siteKeys + ((<usize>s) << 3), k);
    store<i32>(siteIds + ((<usize>s) << 2), id);
  }
  if (old !== 0) {
    heap.free(oldKeys);
    heap.free(oldIds);
  }
}

/** The id of the call site at `a` (its address key `key`), made when new. */
function siteId(a: u64, key: f64): i32 {
  const mask = siteSlots - 1;
  let s = <i32>(mix(a) & <u32>mask);
  for (;;) {
    const id = load<i32>(siteIds + ((<usize>s) << 2));
    if (id === 0) break;
    if (load<u64>(siteKeys + ((<usize>s) << 3)) === a) return id;
    s = (s + 1) & mask;
  }
  const id = ++siteCount;
  store<u64>(siteKeys + ((<usize>s) << 3), a);
  store<i32>(siteIds + ((<usize>s) << 2), id);
  if (id >= siteAddressRoom) {
    const room = siteAddressRoom === 0 ? 1024 : siteAddressRoom * 2;
    siteAddress = siteAddress === 0 ? heap.alloc(<usize>room * 8) : heap.realloc(siteAddress, <usize>room * 8);
    siteDelivered = siteDelivered === 0 ? heap.alloc(<usize>room * 4) : heap.realloc(siteDelivered, <usize>room * 4);
    deliveredAddress =
      deliveredAddress === 0 ? heap.alloc(<usize>room * 8) : heap.realloc(deliveredAddress, <usize>room * 8);
    memory.fill(siteDelivered + <usize>siteAddressRoom * 4, 0, <usize>(room - siteAddressRoom) * 4);
    siteAddressRoom = room;
  }
  store<f64>(siteAddress + ((<usize>id) << 3), key);
  if (id * 2 > siteSlots) growSites();
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

/** Cache names: ids 0, 1, ... by their bytes, kept in `names` (offset and length per id). */
let nameSlots = 0;
let nameHashes: usize = 0;
let nameIds: usize = 0;
let nameCount = 0;
let nameBytes: usize = 0;
let nameUsed = 0;
let nameRoom = 0;
let nameIndex: usize = 0;
let nameIndexRoom = 0;

function growNames(): void {
  const old = nameSlots;
  const oldHashes = nameHashes;
  const oldIds = nameIds;
  nameSlots = old === 0 ? 256 : old * 2;
  nameHashes = heap.alloc(<usize>nameSlots * 8);
  nameIds = heap.alloc(<usize>nameSlots * 4);
  memory.fill(nameIds, 0xff, <usize>nameSlots * 4);
  const mask = nameSlots - 1;
  for (let i = 0; i < old; i++) {
    const id = load<i32>(oldIds + ((<usize>i) << 2));
    if (id < 0) continue;
    const h = load<u64>(oldHashes + ((<usize>i) << 3));
    let s = <i32>(mix(h) & <u32>mask);
    while (load<i32>(nameIds + ((<usize>s) << 2)) >= 0) s = (s + 1) & mask;
    store<u64>(nameHashes + ((<usize>s) << 3), h);
    store<i32>(nameIds + ((<usize>s) << 2), id);
  }
  if (old !== 0) {
    heap.free(oldHashes);
    heap.free(oldIds);
  }
}

function sameName(id: i32, from: usize, n: i32): bool {
  const at = load<i32>(nameIndex + ((<usize>id) << 3));
  if (load<i32>(nameIndex + ((<usize>id) << 3) + 4) !== n) return false;
  return memory.compare(nameBytes + <usize>at, from, <usize>n) === 0;
}

function nameId(from: usize, n: i32): i32 {
  // biome-ignore lint/correctness/noPrecisionLoss: a u64 literal (FNV-1a's offset basis), exact in AssemblyScript
  let h: u64 = 0xcbf29ce484222325;
  for (let i = 0; i < n; i++) {
    h ^= <u64>load<u8>(from + <usize>i);
    h *= 0x100000001b3;
  }
  const mask = nameSlots - 1;
  let s = <i32>(mix(h) & <u32>mask);
  for (;;) {
    const id = load<i32>(nameIds + ((<usize>s) << 2));
    if (id < 0) break;
    if (load<u64>(nameHashes + ((<usize>s) << 3)) === h && sameName(id, from, n)) return id;
    s = (s + 1) & mask;
  }
  const id = nameCount++;
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
  store<u64>(nameHashes + ((<usize>s) << 3), h);
  store<i32>(nameIds + ((<usize>s) << 2), id);
  if (nameCount * 2 > nameSlots) growNames();
  return id;
}

/** Cache names: how many, and where name `id`'s bytes lie. */
export function names(): i32 {
  return nameCount;
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
  growSites();
  growNames();
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

// ---- Delivery: the queues merged, oldest first (ties in file order), into a batch of columns. ----

/** Whether queue a's next row comes before queue b's. */
function before(a: i32, b: i32): bool {
  const ra = qRows[a] + <usize>qHead[a] * ROW;
  const rb = qRows[b] + <usize>qHead[b] * ROW;
  const ta = load<f64>(ra + R_TIME);
  const tb = load<f64>(rb + R_TIME);
  return ta < tb || (ta === tb && load<u32>(ra + R_SEQ) < load<u32>(rb + R_SEQ));
}

/**
 * Writes up to `room` deliverable rows into the batch at `out` (columns of `room` entries each: time f64, pointer
 * f64, CPU i32, call site i32 (delivered key), bytes requested u32, allocated u32, cache id i32, op | allocator << 2
 * u8): how many. A row is deliverable once perf's rounds (or the end) deliver its time.
 */
export function deliver(out: usize, room: i32): i32 {
  const limit = ended ? Infinity : delivered;
  const times = out;
  const ptrs = out + <usize>room * 8;
  const cpuCol = out + <usize>room * 16;
  const siteCol = out + <usize>room * 20;
  const reqCol = out + <usize>room * 24;
  const allocCol = out + <usize>room * 28;
  const cacheCol = out + <usize>room * 32;
  const codeCol = out + <usize>room * 36;
  let n = 0;
  while (n < room) {
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
    store<f64>(times + ((<usize>n) << 3), time);
    store<f64>(ptrs + ((<usize>n) << 3), load<f64>(row + R_PTR));
    store<i32>(cpuCol + ((<usize>n) << 2), best);
    store<i32>(siteCol + ((<usize>n) << 2), deliveredSite(load<i32>(row + R_SITE)));
    store<u32>(reqCol + ((<usize>n) << 2), load<u32>(row + R_REQ));
    store<u32>(allocCol + ((<usize>n) << 2), load<u32>(row + R_ALLOC));
    store<i32>(cacheCol + ((<usize>n) << 2), load<i32>(row + R_CACHE));
    store<u8>(codeCol + <usize>n, load<u8>(row + R_CODE));
    n++;
  }
  return n;
}
