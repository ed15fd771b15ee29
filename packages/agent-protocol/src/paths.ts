import { join } from 'node:path';

/**
 * Where the agent listens unless told otherwise: `$EVTRACE_AGENT_SOCKET`; for root `/run/evtrace/agent.sock`; for
 * others `$XDG_RUNTIME_DIR/evtrace/agent.sock`, or `/tmp/evtrace-UID/agent.sock` without a runtime directory.
 */
export function defaultSocketPath(env: NodeJS.ProcessEnv = process.env, uid = process.getuid?.() ?? 0): string {
  const explicit = env.EVTRACE_AGENT_SOCKET;
  if (explicit !== undefined && explicit !== '') return explicit;
  if (uid === 0) return '/run/evtrace/agent.sock';
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime !== undefined && runtime !== '') return join(runtime, 'evtrace', 'agent.sock');
  return `/tmp/evtrace-${uid}/agent.sock`;
}
