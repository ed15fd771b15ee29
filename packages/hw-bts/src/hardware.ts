/**
 * The hardware branch source: which branch-tracing PMUs this machine has (sysfs), and capture through perf's
 * `intel_bts` PMU when it exists. Where none exists, the reason names what was looked for and what was found.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { BtsError } from './errors.ts';
import { describeProbe, probeBts } from './perf-event.ts';
import { resolveProgram } from './which.ts';

/** What branch tracing the hardware offers. */
export interface HardwareSupport {
  /** The `intel_bts` PMU (Branch Trace Store). */
  readonly bts: boolean;
  /** The `intel_pt` PMU (Processor Trace). */
  readonly pt: boolean;
  /** Last Branch Records (the core PMU's `caps/branches`). */
  readonly lbr: boolean;
  /** PMUs present under /sys/bus/event_source/devices. */
  readonly pmus: readonly string[];
  /** Why BTS capture cannot run, when it cannot. */
  readonly why?: string;
}

const DEVICES = '/sys/bus/event_source/devices';

/** Looks at /sys/bus/event_source/devices for intel_bts, intel_pt and LBR. */
export function detectHardware(devices = DEVICES): HardwareSupport {
  let pmus: string[] = [];
  try {
    pmus = readdirSync(devices).sort();
  } catch (error) {
    return {
      bts: false,
      pt: false,
      lbr: false,
      pmus,
      why: `cannot list ${devices}: ${(error as NodeJS.ErrnoException).code}`,
    };
  }
  const bts = pmus.includes('intel_bts');
  const pt = pmus.includes('intel_pt');
  let lbr = false;
  try {
    lbr = Number(readFileSync(`${devices}/cpu/caps/branches`, 'utf8').trim()) > 0;
  } catch {}
  const why = bts
    ? undefined
    : `no intel_bts PMU in ${devices} (present: ${pmus.join(', ') || 'none'}; intel_pt ${pt ? 'present' : 'absent'}, LBR ${lbr ? 'present' : 'absent'}): a virtual machine usually hides BTS; use the QEMU software source`;
  return { bts, pt, lbr, pmus, ...(why !== undefined ? { why } : {}) };
}

/**
 * Records `program args` with `perf record -e intel_bts//u` into `output` (a perf.data that {@link decodePerfData}
 * reads). Fails with ERR_BTS_UNSUPPORTED, saying why, when the PMU is absent.
 */
export async function captureHardware(
  program: string,
  args: readonly string[],
  options: { output: string; kernel?: boolean; devices?: string },
): Promise<{ status: number | null }> {
  const hw = detectHardware(options.devices);
  if (!hw.bts) throw new BtsError('ERR_BTS_UNSUPPORTED', hw.why ?? 'no intel_bts PMU');
  // The PMU is listed: ask the kernel whether this process may use it (permissions, perf_event_paranoid).
  const probe = probeBts(options.devices);
  if (!probe.ok && probe.errno !== undefined) throw new BtsError('ERR_BTS_UNSUPPORTED', describeProbe(probe));
  const perf = resolveProgram('perf');
  if (!existsSync(perf)) throw new BtsError('ERR_BTS_CAPTURE', 'perf is not on PATH (Debian: linux-perf)');
  const event = options.kernel ? 'intel_bts//' : 'intel_bts//u';
  const child = spawn(perf, ['record', '-q', '-e', event, '-o', options.output, '--', program, ...args], {
    stdio: 'inherit',
  });
  return new Promise((resolve, reject) => {
    child.on('error', (error) =>
      reject(new BtsError('ERR_BTS_CAPTURE', `cannot run perf: ${error.message}`, {}, error)),
    );
    child.on('close', (status) => resolve({ status }));
  });
}
