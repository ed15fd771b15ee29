// The events `evtrace demo` producers write, shared by the worker and the command.

/** Record types of the demo stream (compact ids). */
export const DemoType = { sample: 1, alloc: 2, log: 3 } as const;

export const DEMO_TYPE_NAMES: Record<number, string> = { 1: 'sample', 2: 'alloc', 3: 'log' };

/** What a demo worker is told. */
export interface DemoWorkerData {
  buffer: SharedArrayBuffer;
  producer: number;
  events: number;
  /** Int32 words: [0] producers ready, [1] go. Producers start together so their events interleave. */
  barrier: SharedArrayBuffer;
}
