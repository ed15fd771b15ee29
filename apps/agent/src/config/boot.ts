/**
 * The sessions a config file declares, created (and started) when the agent boots. A session the agent re-adopted
 * after a restart keeps its state; one that cannot be created is reported and skipped, so one bad session (no tracefs
 * for a kernel source, say) does not keep the others from running.
 */
import type { SessionConfig } from './schema.ts';

/** A session as `evtrace session create` sends it (the protocol's session spec). */
export interface BootSessionSpec {
  readonly name: string;
  readonly events: readonly string[];
  readonly filter?: string;
  readonly mode: SessionConfig['mode'];
  readonly bufferSize: number;
  readonly output?: SessionConfig['output'];
  readonly rotate?: SessionConfig['rotate'];
  readonly source: SessionConfig['source'];
  readonly export?: boolean;
}

/** What booting needs of the agent. */
export interface BootTarget {
  has(name: string): boolean;
  create(spec: BootSessionSpec): Promise<unknown>;
  start(name: string): unknown;
}

/** A config session as a create request: everything but `start`. */
export function sessionSpecOf(session: SessionConfig): BootSessionSpec {
  const { start: _, ...spec } = session;
  return spec;
}

/** Creates and starts the declared sessions in order; returns one line per session saying what happened. */
export async function bootSessions(sessions: readonly SessionConfig[], agent: BootTarget): Promise<string[]> {
  const said: string[] = [];
  for (const session of sessions) {
    if (agent.has(session.name)) {
      said.push(`session ${session.name} (from the config file): kept as recovered`);
      continue;
    }
    try {
      await agent.create(sessionSpecOf(session));
      if (session.start) agent.start(session.name);
      said.push(`session ${session.name} (from the config file): created${session.start ? ' and started' : ''}`);
    } catch (error) {
      const e = error as { code?: unknown; message?: unknown };
      const why = `${typeof e?.code === 'string' ? `${e.code}: ` : ''}${typeof e?.message === 'string' ? e.message : String(error)}`;
      said.push(`session ${session.name} (from the config file): not created: ${why}`);
    }
  }
  return said;
}
