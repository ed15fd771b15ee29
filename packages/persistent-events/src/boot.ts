/**
 * The kernel's boot-time persistent ring buffer: `reserve_mem=SIZE:ALIGN:LABEL` keeps a memory range across soft
 * reboots and `trace_instance=NAME@LABEL` (or `NAME@ADDRESS:SIZE`) puts an instance's ring buffer in it, so the
 * events written before a crash are readable in `instances/NAME` after the next boot (its `last_boot_info` file gives
 * the address deltas). Documentation/trace/debugging.rst, "persistent buffer".
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One `reserve_mem=` range. */
export interface ReservedMemory {
  size: string;
  align: string;
  label: string;
}

/** One `trace_instance=` entry of the command line that maps an instance to persistent memory. */
export interface BootInstanceParam {
  name: string;
  /** Flags after `^` (e.g. `traceoff`, `traceprintk`). */
  flags: string[];
  /** The reserve_mem label (`NAME@LABEL`) ... */
  label?: string;
  /** ... or the physical range (`NAME@0xADDR:SIZE`). */
  address?: string;
  size?: string;
  /** Events enabled at boot (`,sched:*,irq:*`). */
  events: string[];
}

/** Parses the persistent-buffer parameters of a kernel command line. Backup instances (`B=NAME`) are not mapped. */
export function parseBootParams(cmdline: string): { reserved: ReservedMemory[]; instances: BootInstanceParam[] } {
  const reserved: ReservedMemory[] = [];
  const instances: BootInstanceParam[] = [];
  // Arguments after a bare `--` go to init, not the kernel.
  const words = cmdline.trim().split(/\s+/);
  const end = words.indexOf('--');
  for (const word of end < 0 ? words : words.slice(0, end)) {
    const eq = word.indexOf('=');
    if (eq < 0) continue;
    const key = word.slice(0, eq);
    const value = word.slice(eq + 1);
    if (key === 'reserve_mem') {
      const [size, align, label] = value.split(':');
      if (size && align && label) reserved.push({ size, align, label });
    } else if (key === 'trace_instance') {
      const [head, ...events] = value.split(',');
      const at = head!.indexOf('@');
      // NAME=OTHER is a backup copy, not a mapping.
      if (at < 0 || head!.slice(0, at).includes('=')) continue;
      const [name, ...flags] = head!.slice(0, at).split('^');
      const target = head!.slice(at + 1);
      const range = /^(0x[0-9a-fA-F]+|\d+):(\w+)$/.exec(target);
      instances.push({
        name: name!,
        flags,
        ...(range ? { address: range[1]!, size: range[2]! } : { label: target }),
        events: events.filter(Boolean),
      });
    }
  }
  return { reserved, instances };
}

/** A boot-time persistent buffer of this kernel. */
export interface BootBuffer {
  name: string;
  /** The instance directory. */
  path: string;
  param: BootInstanceParam;
  /** The reserve_mem range it lives in (label form). */
  reserved?: ReservedMemory;
  /** `last_boot_info` of the instance, when the kernel provides it. */
  lastBootInfo?: string;
}

/** What {@link detectBootBuffers} found. */
export interface BootDetection {
  buffers: BootBuffer[];
  /** Why there is none, for users (undefined when there is at least one). */
  absent?: string;
}

/**
 * Finds the boot-time persistent buffers: instances named by `trace_instance=NAME@...` on the command line that
 * exist under `tracefs/instances`, plus any instance carrying a `last_boot_info` file.
 */
export function detectBootBuffers(tracefs: string, cmdline: string, instanceNames: readonly string[]): BootDetection {
  const { reserved, instances } = parseBootParams(cmdline);
  const buffers: BootBuffer[] = [];
  const seen = new Set<string>();
  const info = (dir: string) => {
    try {
      return readFileSync(join(dir, 'last_boot_info'), 'utf8');
    } catch {
      return undefined;
    }
  };
  for (const param of instances) {
    const path = join(tracefs, 'instances', param.name);
    if (!existsSync(path)) continue;
    const res = reserved.find((r) => r.label === param.label);
    const last = info(path);
    buffers.push({
      name: param.name,
      path,
      param,
      ...(res ? { reserved: res } : {}),
      ...(last !== undefined ? { lastBootInfo: last } : {}),
    });
    seen.add(param.name);
  }
  for (const name of instanceNames) {
    if (seen.has(name)) continue;
    const path = join(tracefs, 'instances', name);
    const last = info(path);
    if (last !== undefined) buffers.push({ name, path, param: { name, flags: [], events: [] }, lastBootInfo: last });
  }
  if (buffers.length > 0) return { buffers };
  const absent =
    instances.length === 0
      ? 'this kernel has no boot-time persistent ring buffer: the command line has no trace_instance=NAME@LABEL (with reserve_mem=SIZE:ALIGN:LABEL)'
      : `the command line maps ${instances.map((i) => i.name).join(', ')} to persistent memory, but no such instance exists under ${join(tracefs, 'instances')} (the kernel could not reserve the memory, or lacks the feature)`;
  return { buffers, absent };
}
