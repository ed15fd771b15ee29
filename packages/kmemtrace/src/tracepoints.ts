/**
 * kmem tracepoints from the trace-format event model: any evtrace input (trace.dat, CTF, raw pages, a live session)
 * becomes {@link KmemEvent}s. Knows today's events and those of older kernels: `kmalloc_node` and
 * `kmem_cache_alloc_node` (before 6.1), `kmem_cache_alloc` without `name` or `bytes_*`, `accounted`.
 */
import type { EventClass, FieldValue, Kallsyms, TraceEvent } from '@evtrace/trace-format';
import { AddressKeys } from './address.ts';
import { type KmemEvent, type KmemOp, type KmemSource, kmemEvent } from './event.ts';
import { type GfpTable, gfpNamer, parseGfpTable } from './gfp.ts';
import { internName } from './names.ts';
import { addressNamer } from './symbols.ts';

export type KmemKind = { readonly op: KmemOp; readonly allocator: KmemEvent['allocator'] };

const KINDS: Readonly<Record<string, KmemKind>> = {
  kmalloc: { op: 'alloc', allocator: 'kmalloc' },
  kmalloc_node: { op: 'alloc', allocator: 'kmalloc' },
  kfree: { op: 'free', allocator: 'kmalloc' },
  kmem_cache_alloc: { op: 'alloc', allocator: 'cache' },
  kmem_cache_alloc_node: { op: 'alloc', allocator: 'cache' },
  kmem_cache_free: { op: 'free', allocator: 'cache' },
  mm_page_alloc: { op: 'page_alloc', allocator: 'page' },
  mm_page_free: { op: 'page_free', allocator: 'page' },
};

/** The kmem event an event class is, by name: `kmem:kmalloc` (ftrace) or `kmem_kmalloc` (LTTng); undefined else. */
export function kmemKind(eventClass: Pick<EventClass, 'name'>): KmemKind | undefined {
  const name = eventClass.name;
  const colon = name.lastIndexOf(':');
  if (colon >= 0) return name.slice(0, colon) === 'kmem' ? KINDS[name.slice(colon + 1)] : undefined;
  return KINDS[name] ?? (name.startsWith('kmem_') ? KINDS[name.slice(5)] : undefined);
}

/** The gfp flag table of the recording kernel, from the first kmem class whose print fmt has one. */
export function gfpTableOf(classes: readonly EventClass[]): GfpTable | undefined {
  for (const c of classes) {
    if (c.printFormat === undefined || kmemKind(c) === undefined) continue;
    const table = parseGfpTable(c.printFormat);
    if (table !== undefined) return table;
  }
  return undefined;
}

const num = (v: FieldValue | undefined): number =>
  typeof v === 'number' && Number.isFinite(v)
    ? v
    : typeof v === 'bigint'
      ? Number(v)
      : typeof v === 'boolean'
        ? Number(v)
        : 0;

// ftrace common_flags: TRACE_FLAG_HARDIRQ 0x08, TRACE_FLAG_SOFTIRQ 0x10, TRACE_FLAG_NMI 0x40.
export const INTERRUPT_FLAGS = 0x08 | 0x10 | 0x40;

/** An address field's key: 0 when the field is absent or of no address type (a foreign class of the same name). */
function addr(v: FieldValue | undefined, keys: AddressKeys): number {
  if (typeof v === 'bigint') return v >= 0n && v <= 0xffff_ffff_ffff_ffffn ? keys.key(v) : 0;
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0 ? keys.key(v) : 0;
  if (typeof v === 'string') return keys.keyOfHex(v) ?? 0;
  return 0;
}

/** Converts one trace event; undefined for events that are not kmem allocator events. */
export function fromTraceEvent(e: TraceEvent, keys: AddressKeys): KmemEvent | undefined {
  const kind = kmemKind(e.eventClass);
  if (kind === undefined) return undefined;
  // ftrace readers keep the common fields in the event context.
  const flags = e.scopes?.['event.context']?.common_flags ?? e.fields.common_flags;
  return fromFields(kind, Number(e.tsNs), e.cpu ?? -1, e.fields, flags, keys);
}

/** A kmem event of `kind` from its payload fields (trace-format values; addresses as bigint, number or hex text). */
export function fromFields(
  kind: KmemKind,
  tsNs: number,
  cpu: number,
  f: Readonly<Record<string, FieldValue>>,
  flags: FieldValue | undefined,
  keys: AddressKeys,
): KmemEvent {
  const base = {
    op: kind.op,
    allocator: kind.allocator,
    tsNs,
    cpu,
    ...(typeof flags === 'number' ? { interrupt: (flags & INTERRUPT_FLAGS) !== 0 } : {}),
  };
  if (kind.allocator === 'page') {
    const pfn = f.pfn;
    return kmemEvent({
      ...base,
      callSite: 0,
      // pfn -1 (a failed allocation) keys as -1.
      ptr: typeof pfn === 'bigint' && pfn === 0xffff_ffff_ffff_ffffn ? -1 : num(pfn),
      bytesReq: 0,
      bytesAlloc: 0,
      gfpFlags: num(f.gfp_flags),
      node: -1,
      order: num(f.order),
      ...(f.migratetype !== undefined ? { migratetype: num(f.migratetype) } : {}),
    });
  }
  const name = f.name;
  return kmemEvent({
    ...base,
    callSite: addr(f.call_site, keys),
    ptr: addr(f.ptr, keys),
    bytesReq: num(f.bytes_req),
    bytesAlloc: num(f.bytes_alloc),
    gfpFlags: num(f.gfp_flags),
    node: f.node === undefined ? -1 : num(f.node),
    ...(typeof name === 'string' ? { cache: internName(name) } : {}),
  });
}

/** What a trace reader offers that the kmem source uses. */
export interface TraceInput {
  readonly eventClasses: readonly EventClass[];
  events(): Iterable<TraceEvent>;
  readonly metadata?: { readonly kallsyms: () => Kallsyms | undefined };
}

/**
 * The kmem events of a trace, symbolized through the trace's kallsyms (or `kallsyms` given), gfp flags named by the
 * recording kernel's own table when its format files carry one.
 */
export function traceSource(trace: TraceInput, options: { readonly kallsyms?: Kallsyms } = {}): KmemSource {
  const keys = new AddressKeys();
  const kallsyms = options.kallsyms ?? trace.metadata?.kallsyms();
  const names = addressNamer(keys, kallsyms);
  const table = gfpTableOf(trace.eventClasses);
  return {
    events: (function* () {
      for (const e of trace.events()) {
        const k = fromTraceEvent(e, keys);
        if (k !== undefined) yield k;
      }
    })(),
    ...names,
    gfpNames: gfpNamer(table),
    diagnostics: [],
  };
}
