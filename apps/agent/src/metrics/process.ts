import type { AgentHealth } from './types.ts';

/** The health fields a process measures of itself: its uptime (memory and CPU are prom-client's `process_*`). */
export function processHealth(startTimeMs: number): Pick<AgentHealth, 'uptimeSeconds'> {
  return {
    uptimeSeconds: Math.max(0, (Date.now() - startTimeMs) / 1000),
  };
}
