/**
 * Severity as the Linux kernel grades a machine check (arch/x86/kernel/cpu/mce/severity.c: the Intel rule table, first
 * match wins, and the AMD rules), mapped onto the SDM's error classes (Intel SDM vol. 3B, "Machine-Check Error
 * Classification": uncorrected UC, the uncorrected-recoverable UCR classes SRAR / SRAO / UCNA, corrected CE) and AMD's
 * deferred errors. Pure: the kernel also looks at where the CPU was executing, which a log does not say; those rules
 * are graded for user context and the grade's `why` says so.
 */
import type { StatusBits } from './bits.ts';
import { bit } from './bits.ts';

/** How bad an error is, worst last: the `severity` key of the JSON output. */
export type Severity = 'corrected' | 'deferred' | 'ucna' | 'srao' | 'srar' | 'fatal';

/** Order of severities, for sorting and "worst of". */
export const SEVERITY_ORDER: readonly Severity[] = ['corrected', 'deferred', 'ucna', 'srao', 'srar', 'fatal'];

/** SDM classification: CE, UCNA, SRAO, SRAR, UC (uncorrected, not recoverable); DE for AMD deferred errors. */
export type SdmClass = 'CE' | 'DE' | 'UCNA' | 'SRAO' | 'SRAR' | 'UC';

export interface Grade {
  readonly severity: Severity;
  readonly sdmClass: SdmClass;
  /** The kernel rule that matched, in its words where it has them. */
  readonly why: string;
  /** The combination of bits is impossible or illegal (the kernel panics or ignores it): say so. */
  readonly impossible?: string;
}

const GRADES = new Map<string, Grade>();

/** Grades are shared constants: grading allocates nothing. */
function g(severity: Severity, sdmClass: SdmClass, why: string, impossible?: string): Grade {
  // Each rule has its own literal `why` (an interned string, its hash cached): the key.
  let grade = GRADES.get(why);
  if (grade === undefined)
    GRADES.set(
      why,
      (grade = Object.freeze(impossible ? { severity, sdmClass, why, impossible } : { severity, sdmClass, why })),
    );
  return grade;
}

const MCACOD_DATA = 0x0134;
const MCACOD_INSTR = 0x0150;
const MCACOD_L3WB = 0x017a;

/**
 * Grades an Intel (or other non-AMD) record. `ser` says whether the CPU supports software error recovery
 * (MCG_CAP.SER_P); when the record did not carry MCG_CAP, S or AR set imply it (they are reserved otherwise).
 */
export function gradeIntel(s: StatusBits, mcgstatus: bigint, ser: boolean | undefined): Grade {
  const mcip = bit(mcgstatus, 2);
  const serP = ser ?? (s.signaled || s.actionRequired);
  const code = s.mcaCode & 0xefff;
  if (!s.valid) return g('corrected', 'CE', 'Invalid (MCi_STATUS.VAL clear): nothing to act on');
  if (!s.uncorrected) return g('corrected', 'CE', 'Corrected error');
  if (s.processorContextCorrupt) return g('fatal', 'UC', 'Processor context corrupt');
  if (mcip && !bit(mcgstatus, 0) && !bit(mcgstatus, 1)) {
    return g('fatal', 'UC', 'Neither restart nor error IP');
  }
  if (!serP) {
    if (s.overflow) return g('fatal', 'UC', 'Overflowed uncorrected');
    return mcip
      ? g('fatal', 'UC', 'Uncorrected error in a machine-check exception without software error recovery')
      : g('ucna', 'UCNA', 'Uncorrected error found by polling, no action required');
  }
  if (!s.enabled && !s.signaled) return g('ucna', 'UCNA', 'Spurious not enabled');
  if (!s.signaled && !s.actionRequired) return g('ucna', 'UCNA', 'Uncorrected no action required');
  if (!s.signaled && s.actionRequired) {
    return g(
      'fatal',
      'UC',
      'Illegal combination (UCNA with AR=1)',
      'AR is set without S: the SDM reserves this combination',
    );
  }
  if (s.actionRequired) {
    if (s.overflow) return g('fatal', 'UC', 'Action required with lost events');
    if (code === MCACOD_DATA) return g('srar', 'SRAR', 'Action required: data load error');
    if (code === MCACOD_INSTR) return g('srar', 'SRAR', 'Action required: instruction fetch error');
    return g('fatal', 'UC', 'Action required: unknown MCACOD');
  }
  if (s.overflow) return g('srao', 'SRAO', 'Action optional with lost events');
  if ((code & 0xfff0) === 0x00c0) return g('srao', 'SRAO', 'Action optional: memory scrubbing error');
  if (code === MCACOD_L3WB) return g('srao', 'SRAO', 'Action optional: last level cache writeback error');
  return g('srao', 'SRAO', 'Action optional unknown MCACOD');
}

/** Grades an AMD record (the kernel's mce_severity_amd, for an error taken in user context). */
export function gradeAmd(s: StatusBits, mcgstatus: bigint): Grade {
  if (!s.valid) return g('corrected', 'CE', 'Invalid (MCA_STATUS.Val clear): nothing to act on');
  if (s.processorContextCorrupt) return g('fatal', 'UC', 'Processor context corrupt');
  if (s.uncorrected) {
    if (s.taskContextCorrupt && !bit(mcgstatus, 0)) {
      return g('fatal', 'UC', 'Task context corrupt and no restart IP');
    }
    if (bit(mcgstatus, 2)) return g('srar', 'SRAR', 'Uncorrected error in an exception: the affected task is killed');
    return g('ucna', 'UCNA', 'Uncorrected error found by polling');
  }
  if (s.deferred) return g('deferred', 'DE', 'Deferred error: poisoned data not yet consumed');
  return g('corrected', 'CE', 'Corrected error');
}

/** The worse of two severities. */
export function worse(a: Severity, b: Severity): Severity {
  return SEVERITY_ORDER.indexOf(a) >= SEVERITY_ORDER.indexOf(b) ? a : b;
}
