/**
 * How `evtrace record` and `evtrace agent` end on a signal. Each of SIGHUP (the terminal closed), SIGINT (Ctrl-C),
 * SIGQUIT (Ctrl-\) and SIGTERM (kill, systemd) stops them cleanly: tracefs instances removed, outputs finished, exit
 * status 0, as trace-cmd record does after Ctrl-C (perf record re-raises the signal instead; a script that stops a
 * recording by a signal would then have to tell a clean stop from a crash by the status). A signal that arrives while
 * the command is already stopping is reported and ignored, so that a second Ctrl-C or a terminal closed during
 * cleanup cannot leave a half-written output; SIGKILL still ends it at once.
 */

/** The signals that stop a recording or the agent cleanly. */
export const STOP_SIGNALS = ['SIGHUP', 'SIGINT', 'SIGQUIT', 'SIGTERM'] as const satisfies readonly NodeJS.Signals[];

export type StopSignal = (typeof STOP_SIGNALS)[number];

/** The handlers installed by {@link onStopSignals}. */
export interface StopSignals {
  /** The first stop signal received, undefined until one arrives. */
  readonly received: StopSignal | undefined;
  /** Removes the handlers: the signals' default actions apply again. Call it only once cleanup is over. */
  dispose(): void;
}

/**
 * Calls `onStop` on the first of {@link STOP_SIGNALS}, and `onRepeat` (if given) on every later one, which is
 * otherwise ignored until {@link StopSignals.dispose}.
 */
export function onStopSignals(
  onStop: (signal: StopSignal) => void,
  onRepeat?: (signal: StopSignal) => void,
): StopSignals {
  let received: StopSignal | undefined;
  const handlers = STOP_SIGNALS.map((signal) => {
    const handler = () => {
      if (received !== undefined) return onRepeat?.(signal);
      received = signal;
      onStop(signal);
    };
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  return {
    get received() {
      return received;
    },
    dispose() {
      for (const [signal, handler] of handlers) process.removeListener(signal, handler);
    },
  };
}
