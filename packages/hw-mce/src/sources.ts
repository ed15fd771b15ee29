/**
 * Live sources of machine checks and memory errors for the agent:
 *
 * - {@link TracefsMceSource}: `mce:mce_record` and `ras:mc_event` enabled in a private tracefs instance (never the
 *   top-level one), their per-CPU `trace_pipe_raw` pages decoded through the running kernel's format files;
 * - `readMcelogDevice` (./mcelog-device.ts): the records waiting in /dev/mcelog, its ABI read through its ioctls;
 * - {@link EdacPoller}: the EDAC sysfs counters polled, reporting what changed since the last poll.
 *
 * Each is pulled by the caller (`poll()`), so it fits any event loop or the agent's source interface.
 */
import {
  closeSync,
  existsSync,
  constants as fs,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  compileRecordDecoder,
  type EventClass,
  kernelPageLayout,
  parseFormatFile,
  readPage,
} from '@evtrace/trace-format';
import { createInstance, findTracefs, type Instance } from '@evtrace/tracefs';
import { type EdacControllerCounters, type EdacEvent, readEdacSysfs } from './edac.ts';
import { type InputNote, MceError } from './errors.ts';
import { edacFromTraceFields, mceFromTraceFields } from './inputs/ftrace.ts';
import type { MceRecord } from './record.ts';

const LIVE_EVENTS = [
  ['mce', 'mce_record'],
  ['ras', 'mc_event'],
] as const;

export interface LiveBatch {
  readonly records: MceRecord[];
  readonly edac: EdacEvent[];
  readonly notes: InputNote[];
}

/** mce_record and mc_event from a private tracefs instance. */
export class TracefsMceSource {
  readonly instance: Instance;
  /** The events that exist on this kernel and were enabled (`mce:mce_record`, `ras:mc_event`). */
  readonly enabled: string[];
  /** Why the others were not (this VM has no mce tracepoint, for example). */
  readonly missing: string[];
  readonly #fds: { cpu: number; fd: number }[] = [];
  readonly #classes = new Map<number, { cls: EventClass; decode: ReturnType<typeof compileRecordDecoder> }>();
  readonly #page: Buffer;
  readonly #layout = kernelPageLayout();

  /**
   * `instance` names an existing instance to read instead of creating one (rasdaemon's, or one another tool set up):
   * it is used as it is and left in place by {@link close}, which only disables the events this source enabled.
   *
   * @throws MceError `ERR_MCE_SOURCE` when tracefs is missing, or neither event exists, or the kernel refuses.
   */
  constructor(options: { tracefs?: string; instance?: string } = {}) {
    let root: string;
    try {
      root = options.tracefs ?? findTracefs();
    } catch (error) {
      throw new MceError('ERR_MCE_SOURCE', `no tracefs: ${(error as Error).message}`, { cause: error });
    }
    this.enabled = [];
    this.missing = [];
    for (const [system, event] of LIVE_EVENTS) {
      try {
        const text = readFileSync(join(root, 'events', system, event, 'format'), 'utf8');
        const cls = parseFormatFile(text, { system });
        this.#classes.set(cls.id, { cls, decode: compileRecordDecoder(cls) });
        this.enabled.push(`${system}:${event}`);
      } catch (error) {
        this.missing.push(`${system}:${event} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
      }
    }
    if (this.enabled.length === 0) {
      throw new MceError(
        'ERR_MCE_SOURCE',
        `neither mce:mce_record nor ras:mc_event exists on this kernel: ${this.missing.join(', ')}`,
        {
          location: { file: join(root, 'events') },
        },
      );
    }
    try {
      this.instance = options.instance === undefined ? createInstance(root) : adoptInstance(root, options.instance);
    } catch (error) {
      if (error instanceof MceError) throw error;
      throw new MceError('ERR_MCE_SOURCE', (error as Error).message, { cause: error });
    }
    try {
      for (const name of this.enabled)
        writeFileSync(join(this.instance.path, 'events', ...name.split(':'), 'enable'), '1');
      writeFileSync(join(this.instance.path, 'tracing_on'), '1');
      const perCpu = join(this.instance.path, 'per_cpu');
      for (const d of readdirSync(perCpu).filter((n) => /^cpu\d+$/.test(n))) {
        const fd = openSync(join(perCpu, d, 'trace_pipe_raw'), fs.O_RDONLY | fs.O_NONBLOCK);
        this.#fds.push({ cpu: Number(d.slice(3)), fd });
      }
    } catch (error) {
      this.close();
      throw new MceError(
        'ERR_MCE_SOURCE',
        `cannot enable ${this.enabled.join(', ')}: ${(error as NodeJS.ErrnoException).code ?? error}`,
        {
          location: { file: this.instance.path },
          cause: error,
        },
      );
    }
    this.#page = Buffer.alloc(this.#layout.pageSize);
  }

  /** Reads every page the kernel has filled since the last poll. */
  poll(): LiveBatch {
    const batch: LiveBatch = { records: [], edac: [], notes: [] };
    const view = new DataView(this.#page.buffer, this.#page.byteOffset, this.#page.byteLength);
    for (const { cpu, fd } of this.#fds) {
      for (;;) {
        let n: number;
        try {
          n = readSync(fd, this.#page, 0, this.#page.length, null);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
          throw new MceError('ERR_MCE_SOURCE', `reading cpu${cpu}: ${(error as NodeJS.ErrnoException).code ?? error}`, {
            cause: error,
          });
        }
        if (n <= 0) break;
        try {
          readPage(this.#page.subarray(0, n), 0, this.#layout, (tsNs, start, length) => {
            const type = view.getUint16(start, true);
            const c = this.#classes.get(type);
            if (c === undefined) return;
            const { fields } = c.decode(this.#page, view, start, length);
            if (c.cls.name.endsWith('mce_record'))
              batch.records.push(mceFromTraceFields(fields, { kind: 'trace', file: `cpu${cpu}` }));
            else batch.edac.push(edacFromTraceFields(fields, { kind: 'trace', file: `cpu${cpu}` }, tsNs));
          });
        } catch (error) {
          batch.notes.push({
            location: { file: `cpu${cpu}` },
            message: `corrupt page skipped: ${(error as Error).message}`,
          });
        }
      }
    }
    return batch;
  }

  /** Closes the pipes and removes the instance (the kernel's tracing state is left as found). */
  close(): void {
    for (const { fd } of this.#fds.splice(0)) closeSync(fd);
    this.instance?.remove();
  }
}

/** An existing instance, used as found: removing it only disables the mce and ras events in it. */
function adoptInstance(root: string, name: string): Instance {
  const path = join(root, 'instances', name);
  if (!existsSync(join(path, 'per_cpu')))
    throw new MceError('ERR_MCE_SOURCE', `no tracefs instance ${name} (no per_cpu directory)`, {
      location: { file: path },
    });
  return {
    name,
    path,
    remove() {
      for (const [system, event] of LIVE_EVENTS) {
        try {
          writeFileSync(join(path, 'events', system, event, 'enable'), '0');
        } catch {}
      }
    },
  };
}

/** A counter that grew between two polls. */
export interface EdacChange {
  readonly mc: number;
  /** `total` for the controller's counters, else the DIMM (`dimm0`, `csrow1/ch0`). */
  readonly what: string;
  readonly label: string;
  readonly ceDelta: number;
  readonly ueDelta: number;
}

/** Polls EDAC sysfs counters and reports growth (a counter that went down was reset: its new value counts). */
export class EdacPoller {
  readonly #root: string | undefined;
  #last = new Map<string, { ce: number; ue: number }>();
  #primed = false;

  constructor(options: { sysfs?: string } = {}) {
    this.#root = options.sysfs;
  }

  /** The counters now and what grew since the previous poll (nothing on the first). */
  poll(): { controllers: EdacControllerCounters[]; changes: EdacChange[]; notes: InputNote[] } {
    const { controllers, notes } = this.#root === undefined ? readEdacSysfs() : readEdacSysfs(this.#root);
    const now = new Map<string, { ce: number; ue: number; mc: number; what: string; label: string }>();
    for (const c of controllers) {
      now.set(`${c.mc}/total`, { ce: c.ce, ue: c.ue, mc: c.mc, what: 'total', label: c.name });
      for (const d of c.dimms)
        now.set(`${c.mc}/${d.name}`, { ce: d.ce, ue: d.ue ?? 0, mc: c.mc, what: d.name, label: d.label });
    }
    const changes: EdacChange[] = [];
    if (this.#primed) {
      for (const [key, v] of now) {
        const before = this.#last.get(key) ?? { ce: 0, ue: 0 };
        const ceDelta = v.ce >= before.ce ? v.ce - before.ce : v.ce;
        const ueDelta = v.ue >= before.ue ? v.ue - before.ue : v.ue;
        if (ceDelta > 0 || ueDelta > 0) changes.push({ mc: v.mc, what: v.what, label: v.label, ceDelta, ueDelta });
      }
    }
    this.#last = new Map([...now].map(([k, v]) => [k, { ce: v.ce, ue: v.ue }]));
    this.#primed = true;
    return { controllers, changes, notes };
  }
}
