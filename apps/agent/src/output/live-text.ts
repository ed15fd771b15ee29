import type { LiveEvent } from '@evtrace/agent-protocol';

/**
 * One event of `cat --live` as text, in the style of the file output: the task (`comm-pid`, as trace-cmd prints it)
 * when the agent sent one, CPU, time, event, fields.
 */
export function liveEventText(e: LiveEvent): string {
  const ts = e.ts_ns.padStart(10, '0');
  const task = e.pid === undefined ? '' : `${(e.comm ?? '<...>').padStart(16)}-${String(e.pid).padEnd(7)} `;
  const fields = Object.entries(e.fields)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${task}[${String(e.cpu ?? '-').padStart(3, '0')}] ${ts.slice(0, -9)}.${ts.slice(-9)}: ${e.event}: ${fields}\n`;
}
