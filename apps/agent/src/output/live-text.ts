import { createFtraceBodyFormatter, eventComm, ftraceTimestamp, type TraceEvent } from '@evtrace/trace-format';

/**
 * Events of `cat --live` as text: the task (`comm-pid`, as trace-cmd prints it, named as the agent sent it), CPU,
 * time in nanoseconds, `system:event` (a session mixes systems), then the body `evtrace cat` prints for a file's
 * event (its `print fmt` evaluated, or libtraceevent's plugin text), from the events decoded by the session's classes.
 */
export function liveTextFormatter(): (e: TraceEvent) => string {
  const names = new Map<number, string>();
  const body = createFtraceBodyFormatter({
    tasks: { get: (pid) => names.get(pid), learn: (pid, comm) => names.set(pid, comm) },
  });
  return (e) => {
    const pid = e.scopes?.['event.context']?.common_pid;
    const comm = eventComm(e);
    if (typeof pid === 'number' && comm !== undefined) names.set(pid, comm);
    const task = typeof pid === 'number' ? `${(comm ?? '<...>').padStart(16)}-${String(pid).padEnd(7)} ` : '';
    const cpu = e.cpu === null ? '---' : String(e.cpu).padStart(3, '0');
    return `${task}[${cpu}] ${ftraceTimestamp(e.tsNs, true)}: ${e.eventClass.name}: ${body(e)}\n`;
  };
}
