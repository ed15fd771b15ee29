/** The NATS connection flags (@evtrace/fleet's one table of them) on a command: `evtrace agent` and `fleet` verbs. */
import { CONNECTION_FLAGS } from '@evtrace/fleet';
import type { Command } from 'commander';

/** Adds `--nats-credentials`, `--nats-user`, `--nats-password`, `--nats-token`, the TLS files and `--nats-stream`. */
export function addConnectionFlags(cmd: Command): Command {
  for (const f of CONNECTION_FLAGS) cmd.option(`--${f.name} <${f.value}>`, f.description);
  return cmd;
}
