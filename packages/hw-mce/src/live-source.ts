/**
 * The hardware source of the evtrace agent: machine checks and memory errors from every live input this host has,
 * decoded as they arrive and delivered into a session as `mce:mce_record` and `ras:mc_event` events through the same
 * {@link EventSource} interface as the kernel and demo sources (so trace-shots, `evtrace cat --live` and the
 * viewer's Hardware view read them like any recording).
 *
 * Inputs, each used when it exists (what is not used is listed in `missing` with the reason):
 * - tracefs `mce:mce_record` and `ras:mc_event`, read in a private instance ({@link TracefsMceSource});
 * - /dev/mcelog, only when the `mce_record` tracepoint is not read (the kernel reports each machine check to both);
 * - EDAC sysfs counters, polled: counter growth becomes `ras:mc_event` events only when the tracepoint is not read
 *   (it reports the same errors).
 *
 * Every record is re-encoded with the format files of the tracepoints (the running kernel's when it has them, else
 * this package's copies) into one stream of ftrace pages stamped with the time the agent saw it (CLOCK_MONOTONIC).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  compileRecordEncoder,
  type EventClass,
  type EventSource,
  type FieldValue,
  FTRACE_PAGE_RECORD,
  HEADER_EVENT_TEXT,
  headerPageText,
  kernelPageLayout,
  type PageSink,
  packPages,
  parseFormatFile,
  type RecordEncoder,
  readPage,
  type SourceCpuCounters,
  type TimedRecord,
} from '@evtrace/trace-format';
import { findTracefs } from '@evtrace/tracefs';
import type { CpuKind } from './cpu.ts';
import { type DecodedMce, decodeMce } from './decode.ts';
import { EDAC_ERROR_TYPES, EDAC_SYSFS, type EdacEvent } from './edac.ts';
import { type InputNote, MceError } from './errors.ts';
import { MC_EVENT_FORMAT, MCE_RECORD_FORMAT, MCE_THRESHOLD_FORMAT } from './formats.ts';
import { MCELOG_DEVICE, readMcelogDevice } from './mcelog-device.ts';
import type { MceRecord } from './record.ts';
import { EdacPoller, TracefsMceSource } from './sources.ts';
import type { TrackerEvent } from './tracker.ts';

/** Options of {@link HardwareSource}. */
export interface HardwareSourceOptions {
  /** The tracefs mount point; `false`: do not read the tracepoints. Default: found. */
  readonly tracefs?: string | false;
  /** An existing tracefs instance to read instead of a private one (see {@link TracefsMceSource}). */
  readonly instance?: string;
  /** The mcelog device; `false`: do not read it. Default /dev/mcelog (when it exists). */
  readonly mcelog?: string | false;
  /** The EDAC sysfs directory; `false`: do not poll it. Default /sys/devices/system/edac (when it exists). */
  readonly edacSysfs?: string | false;
  /** How often /dev/mcelog and EDAC are read, in ms (the tracepoints at every poll). Default 1000. */
  readonly intervalMs?: number;
  /** Decode as this CPU instead of the one each record names. */
  readonly cpu?: CpuKind;
  /** Each machine check, decoded, before it is written (metrics, tracking). */
  readonly onMce?: (decoded: DecodedMce) => void;
  /** Each memory error event, before it is written. */
  readonly onEdac?: (event: EdacEvent) => void;
  /** Problems met while reading (corrupt pages, unreadable counters): the input goes on. */
  readonly onNote?: (note: InputNote) => void;
}

const LAYOUT = kernelPageLayout(4096);
const NONE: readonly FieldValue[] = Object.freeze([]);

/** The `mce:mce_record` fields of a record (the inverse of reading them: every input lands in the same event). */
export function mceTraceFields(r: MceRecord): Record<string, FieldValue> {
  return {
    mcgcap: r.mcgcap,
    mcgstatus: r.mcgstatus,
    status: r.status,
    addr: r.addr,
    misc: r.misc,
    synd: r.synd,
    ipid: r.ipid,
    ip: r.ip,
    tsc: r.tsc,
    ppin: r.ppin,
    walltime: r.time,
    cpu: r.cpu,
    cpuid: r.cpuid,
    apicid: r.apicid ?? 0,
    socketid: r.socketid ?? 0,
    cs: r.cs,
    bank: r.bank,
    cpuvendor: r.cpuvendor ?? 0,
    microcode: r.microcode,
    v_data: NONE,
  };
}

/** The `ras:mc_event` fields of an EDAC event. */
export function mcEventTraceFields(e: EdacEvent): Record<string, FieldValue> {
  let grainBits = 0;
  while (grainBits < 63 && 1n << BigInt(grainBits) < e.grain) grainBits++;
  return {
    error_type: Math.max(0, EDAC_ERROR_TYPES.indexOf(e.errorType)),
    msg: e.message,
    label: e.label,
    error_count: Math.min(e.count, 0xffff),
    mc_index: e.mc & 0xff,
    top_layer: e.layers[0],
    middle_layer: e.layers[1],
    lower_layer: e.layers[2],
    address: BigInt.asIntN(64, e.address),
    grain_bits: grainBits,
    syndrome: BigInt.asIntN(64, e.syndrome),
    driver_detail: e.driverDetail,
  };
}

/** What was done about a crossed threshold, as its `evtrace:mce_threshold` event says. */
export interface ThresholdOutcome {
  /** `none`, `trigger`, `account`, `soft-offline`, `hard-offline` or `soft-then-hard-offline`. */
  readonly action: string;
  /** `ok`, `disabled` (an action the agent was not allowed to take), or `failed: ` and the reason. */
  readonly result: string;
}

/** The `evtrace:mce_threshold` fields of a tracker event and what was done about it. */
export function thresholdTraceFields(e: TrackerEvent, outcome: ThresholdOutcome): Record<string, FieldValue> {
  const r = e.record.record;
  return {
    kind: e.kind,
    location: [e.address !== undefined ? `page 0x${e.address.toString(16)}` : '', e.env.LOCATION ?? '']
      .filter(Boolean)
      .join(' '),
    message: e.message,
    threshold: e.env.THRESHOLD ?? '',
    action: outcome.action,
    result: outcome.result,
    count: Math.min(Number(e.env.TOTALCOUNT ?? 0) || 0, 0xffffffff),
    cpu: r.cpu >>> 0,
    bank: r.bank >>> 0,
    addr: e.address ?? r.addr,
  };
}

/** The agent's source of machine checks and memory errors. */
export class HardwareSource implements EventSource {
  readonly kind = 'mce';
  readonly demo = false;
  readonly cpus: readonly number[] = [0];
  readonly pageSize = LAYOUT.pageSize;
  eventClasses: readonly EventClass[] = [];
  /** The inputs read (`tracefs mce:mce_record`, `/dev/mcelog`, `EDAC /sys/devices/system/edac`...). */
  readonly inputs: string[] = [];
  /** The inputs not read, each with the reason. */
  readonly missing: string[] = [];
  readonly #o: HardwareSourceOptions;
  #tracefs: TracefsMceSource | undefined;
  #mcelog: string | undefined;
  #edac: EdacPoller | undefined;
  #formats = new Map<string, string>();
  #mceEncoder: RecordEncoder | undefined;
  #edacEncoder: RecordEncoder | undefined;
  #thresholdEncoder: RecordEncoder | undefined;
  /** Crossings reported since the last poll wrote its records, written after them. */
  #thresholds: Record<string, FieldValue>[] = [];
  #sink: PageSink | undefined;
  #lastInputs = 0;
  #lastTs = 0n;
  #counters = { events: 0, lost: 0, bytes: 0 };

  constructor(options: HardwareSourceOptions = {}) {
    this.#o = options;
  }

  get resource(): string | undefined {
    return this.#tracefs?.instance.name;
  }

  prepare(): void {
    const o = this.#o;
    let root: string | undefined;
    if (o.tracefs !== false) {
      try {
        root = o.tracefs ?? findTracefs();
        this.#tracefs = new TracefsMceSource({
          tracefs: root,
          ...(o.instance !== undefined ? { instance: o.instance } : {}),
        });
        this.inputs.push(...this.#tracefs.enabled.map((e) => `tracefs ${e}`));
        this.missing.push(...this.#tracefs.missing.map((e) => `tracefs ${e}`));
      } catch (error) {
        this.missing.push(`tracefs: ${(error as Error).message}`);
      }
    }
    const traced = (name: string) => this.#tracefs?.enabled.includes(name) === true;
    const mcelog = o.mcelog === false ? undefined : (o.mcelog ?? MCELOG_DEVICE);
    if (mcelog !== undefined) {
      if (traced('mce:mce_record')) this.missing.push(`${mcelog}: not read (mce:mce_record reports the same records)`);
      else if (!existsSync(mcelog))
        this.missing.push(`${mcelog}: absent (no CONFIG_X86_MCELOG_LEGACY or no machine-check support)`);
      else {
        this.#mcelog = mcelog;
        this.inputs.push(mcelog);
      }
    }
    const edac = o.edacSysfs === false ? undefined : (o.edacSysfs ?? EDAC_SYSFS);
    if (edac !== undefined) {
      if (!existsSync(join(edac, 'mc'))) this.missing.push(`EDAC ${edac}: no memory controller (no EDAC driver)`);
      else if (traced('ras:mc_event'))
        this.missing.push(`EDAC ${edac}: counters not polled as events (ras:mc_event reports the same errors)`);
      else {
        this.#edac = new EdacPoller({ sysfs: edac });
        this.inputs.push(`EDAC ${edac}`);
      }
    }
    if (this.inputs.length === 0) {
      this.close();
      throw new MceError('ERR_MCE_SOURCE', `no machine-check or EDAC input on this host: ${this.missing.join('; ')}`);
    }
    // The kernel's formats when it has the events, else this package's copies; one class per tracepoint.
    for (const [system, event, fallback] of [
      ['mce', 'mce_record', MCE_RECORD_FORMAT],
      ['ras', 'mc_event', MC_EVENT_FORMAT],
    ] as const) {
      let text: string = fallback;
      if (root !== undefined) {
        try {
          text = readFileSync(join(root, 'events', system, event, 'format'), 'utf8');
        } catch {}
      }
      this.#formats.set(`${system}/${event}`, text);
    }
    this.#formats.set('evtrace/mce_threshold', MCE_THRESHOLD_FORMAT);
    const mce = parseFormatFile(this.#formats.get('mce/mce_record')!, { system: 'mce' });
    const ras = parseFormatFile(this.#formats.get('ras/mc_event')!, { system: 'ras' });
    const threshold = parseFormatFile(MCE_THRESHOLD_FORMAT, { system: 'evtrace' });
    this.eventClasses = [mce, ras, threshold];
    this.#mceEncoder = compileRecordEncoder(mce);
    this.#edacEncoder = compileRecordEncoder(ras);
    this.#thresholdEncoder = compileRecordEncoder(threshold);
    // Primed now: EDAC counts that existed before the agent started are not new errors.
    this.#edac?.poll();
  }

  writeMetadata(dir: string): void {
    mkdirSync(join(dir, 'events'), { recursive: true });
    writeFileSync(join(dir, 'events', 'header_page'), headerPageText(LAYOUT));
    writeFileSync(join(dir, 'events', 'header_event'), HEADER_EVENT_TEXT);
    for (const [name, text] of this.#formats) {
      mkdirSync(join(dir, 'events', name), { recursive: true });
      writeFileSync(join(dir, 'events', name, 'format'), text);
    }
    writeFileSync(join(dir, 'buffer_subbuf_size_kb'), `${LAYOUT.pageSize / 1024}\n`);
    // Time stamps are process.hrtime: CLOCK_MONOTONIC, the kernel's `mono` trace clock.
    writeFileSync(join(dir, 'trace_clock'), '[mono]\n');
    writeFileSync(join(dir, 'saved_cmdlines'), '');
  }

  start(sinks: readonly PageSink[]): void {
    if (this.#mceEncoder === undefined)
      throw new MceError('ERR_MCE_SOURCE', 'HardwareSource: prepare() before start()');
    this.#sink = sinks[0];
  }

  /**
   * A threshold crossed (by a record `onMce` was just given, typically): an `evtrace:mce_threshold` event written after
   * the records of the current poll, or at the next one.
   */
  noteThreshold(e: TrackerEvent, outcome: ThresholdOutcome): void {
    this.#thresholds.push(thresholdTraceFields(e, outcome));
  }

  poll(): number {
    if (this.#sink === undefined) return 0;
    const records: MceRecord[] = [];
    const edac: EdacEvent[] = [];
    if (this.#tracefs !== undefined) {
      const batch = this.#tracefs.poll();
      records.push(...batch.records);
      edac.push(...batch.edac);
      for (const n of batch.notes) this.#o.onNote?.(n);
    }
    const now = Date.now();
    if (now - this.#lastInputs >= (this.#o.intervalMs ?? 1000)) {
      this.#lastInputs = now;
      if (this.#mcelog !== undefined) {
        try {
          const r = readMcelogDevice({ path: this.#mcelog });
          records.push(...r.records);
          for (const n of r.notes) this.#o.onNote?.(n);
        } catch (error) {
          // The note carries the location; the message without its `file: ` prefix.
          const message = (error as Error).message;
          const prefix = `${this.#mcelog}: `;
          this.#o.onNote?.({
            location: { file: this.#mcelog },
            message: message.startsWith(prefix) ? message.slice(prefix.length) : message,
          });
        }
      }
      if (this.#edac !== undefined) {
        const { changes, notes } = this.#edac.poll();
        for (const n of notes) this.#o.onNote?.(n);
        for (const c of changes) {
          if (c.what === 'total') continue;
          for (const [type, count] of [
            ['corrected', c.ceDelta],
            ['uncorrected', c.ueDelta],
          ] as const) {
            if (count > 0) edac.push(edacChange(c.mc, c.what, c.label, type, count));
          }
        }
      }
    }
    if (records.length === 0 && edac.length === 0 && this.#thresholds.length === 0) return 0;
    const out: TimedRecord[] = [];
    let bytes = 0;
    const put = (data: Uint8Array) => {
      out.push({ tsNs: this.#stamp(), data });
      bytes += data.length;
    };
    for (const r of records) {
      this.#o.onMce?.(decodeMce(r, this.#o.cpu !== undefined ? { cpu: this.#o.cpu } : {}));
      put(this.#mceEncoder!(mceTraceFields(r), { common_pid: 0 }));
      // What this record crossed comes right after it.
      for (const t of this.#thresholds.splice(0)) put(this.#thresholdEncoder!(t, { common_pid: 0 }));
    }
    for (const t of this.#thresholds.splice(0)) put(this.#thresholdEncoder!(t, { common_pid: 0 }));
    for (const e of edac) {
      this.#o.onEdac?.(e);
      put(this.#edacEncoder!(mcEventTraceFields(e), { common_pid: 0 }));
    }
    const pages = packPages(out, LAYOUT);
    for (let at = 0; at < pages.length; at += LAYOUT.pageSize) {
      const page = pages.subarray(at, at + LAYOUT.pageSize);
      // A page the sink refuses (a full discard-mode buffer) loses its records, not the whole batch.
      let records = 0;
      let recordBytes = 0;
      readPage(page, 0, LAYOUT, (_ts, _start, length) => {
        records++;
        recordBytes += length;
      });
      const ts = Number(page.readBigUInt64LE(0));
      if (this.#sink.writeBytes(FTRACE_PAGE_RECORD, page, ts)) {
        this.#counters.events += records;
        this.#counters.bytes += recordBytes;
      } else this.#counters.lost += records;
    }
    this.#sink.flush();
    return bytes;
  }

  /** Time stamps never go back in the one stream. */
  #stamp(): bigint {
    const t = process.hrtime.bigint();
    if (t > this.#lastTs) this.#lastTs = t;
    return this.#lastTs;
  }

  stop(): void {
    this.poll();
  }

  counters(): readonly SourceCpuCounters[] {
    return [{ cpu: 0, ...this.#counters }];
  }

  close(): void {
    this.#tracefs?.close();
    this.#tracefs = undefined;
    this.#sink = undefined;
  }
}

/** EDAC counter growth as the event the tracepoint would have carried. */
function edacChange(
  mc: number,
  what: string,
  label: string,
  type: 'corrected' | 'uncorrected',
  count: number,
): EdacEvent {
  // dimmN / rankN: the layer index; csrowN/chK: csrow and channel.
  const nums = [...what.matchAll(/\d+/g)].map((m) => Number(m[0]));
  return {
    errorType: type,
    count,
    message: `EDAC ${what} counter grew by ${count} (polled)`,
    label,
    mc,
    layers: [nums[0] ?? -1, nums[1] ?? -1, -1],
    address: 0n,
    grain: 1n,
    syndrome: 0n,
    driverDetail: '',
    source: { kind: 'edac-sysfs', file: `mc${mc}/${what}` },
  };
}
