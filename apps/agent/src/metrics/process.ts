import type { AgentHealth } from './types.ts';

/** The health fields a process measures of itself: uptime, resident memory and CPU time. */
export function processHealth(startTimeMs: number): Pick<AgentHealth, 'uptimeSeconds' | 'rssBytes' | 'cpuSeconds'> {
  const cpu = process.cpuUsage();
  return {
    uptimeSeconds: Math.max(0, (Date.now() - startTimeMs) / 1000),
    rssBytes: process.memoryUsage.rss(),
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
  };
}
