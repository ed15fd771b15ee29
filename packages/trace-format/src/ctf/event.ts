import type { EventClass, TraceEvent } from '../model/types.ts';
import type { CyclesToNs } from './clock.ts';
import type { Scopes, Struct } from './stream-class.ts';

/**
 * A decoded event. Its time is kept in clock cycles and converted to nanoseconds (a bigint) only when read, which
 * spares two bigint allocations per event for consumers that never look.
 */
export class CtfEvent implements TraceEvent {
  /** Clock value in cycles: what the merge compares when every stream shares one clock. */
  readonly cycles: number | bigint;
  readonly cpu: number | null;
  readonly eventClass: EventClass;
  readonly fields: Struct;
  readonly scopes: Scopes;
  readonly #toNs: CyclesToNs;
  #ns: bigint | undefined;

  constructor(
    cycles: number | bigint,
    toNs: CyclesToNs,
    cpu: number | null,
    cls: EventClass,
    fields: Struct,
    scopes: Scopes,
  ) {
    this.cycles = cycles;
    this.#toNs = toNs;
    this.cpu = cpu;
    this.eventClass = cls;
    this.fields = fields;
    this.scopes = scopes;
    this.#ns = undefined;
  }

  get tsNs(): bigint {
    if (this.#ns === undefined) this.#ns = this.#toNs(this.cycles);
    return this.#ns;
  }

  /**
   * The nanoseconds from `earlier` to this event as a number, with no bigint made, when both count one clock's
   * nanoseconds in numbers (exact, being integers below 2^53); undefined otherwise (`tsNs` tells then).
   */
  nsSince(earlier: TraceEvent): number | undefined {
    if (!(earlier instanceof CtfEvent) || earlier.#toNs !== this.#toNs || !this.#toNs.nanoseconds) return undefined;
    const a = this.cycles;
    const b = earlier.cycles;
    return typeof a === 'number' && typeof b === 'number' ? a - b : undefined;
  }
}
