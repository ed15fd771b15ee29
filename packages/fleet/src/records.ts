/**
 * The records of the hardware channels, as plain data: the agent decodes machine checks and memory errors (with
 * @evtrace/hw-mce) and hands them over in these shapes, so this package depends on no decoder.
 */

/** Severities from least to most severe (the machine-check scale: corrected, deferred, UCNA, SRAO, SRAR, fatal). */
export const SEVERITIES = ['corrected', 'deferred', 'ucna', 'srao', 'srar', 'fatal'] as const;
export type FleetSeverity = (typeof SEVERITIES)[number];

/** A machine check (`mce` channel) or a memory controller error (`edac` channel). */
export interface HardwareErrorRecord {
  /** When it was seen (ISO 8601). */
  readonly time: string;
  readonly severity: FleetSeverity;
  /** Errors it stands for (an EDAC counter may grow by more than one). */
  readonly count: number;
  /** The DIMM: its label, or its place as the decoder names it; absent when the error is not in memory. */
  readonly dimm?: string;
  readonly bank?: number;
  readonly cpu?: number;
  readonly socket?: number;
  /** One line: how bad, what, where. */
  readonly summary: string;
}

/** A leaky-bucket threshold crossed (`threshold` channel) and what the agent did about it. */
export interface ThresholdRecord {
  readonly time: string;
  /** What crossed: `dimm-ce`, `bank-uc`, `page`... */
  readonly kind: string;
  readonly message: string;
  readonly dimm?: string;
  readonly bank?: number;
  readonly count: number;
  /** The action taken (none, trigger, soft-offline...) and its result (ok, failed: ...). */
  readonly action: string;
  readonly result: string;
}

/** Whether `s` is a severity of {@link SEVERITIES}. */
export function isSeverity(s: unknown): s is FleetSeverity {
  return SEVERITIES.includes(s as FleetSeverity);
}

/** Where a hardware record happened: the DIMM, else `bank N`, else `unknown`. */
export function placeOf(r: { readonly dimm?: string | undefined; readonly bank?: number | undefined }): string {
  return r.dimm ?? (r.bank !== undefined ? `bank ${r.bank}` : 'unknown');
}
