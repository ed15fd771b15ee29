import type { Command } from 'commander';
import { addCommand, type CliIO } from '../command.ts';
import { setExamples } from '../help.ts';
import { formatListing, type ListVia, listBuffers } from './persistent.ts';

/** `evtrace ls [--json]`: the persistent buffers of both backends, through the running agent when there is one. */
export function registerLs(program: Command, io: CliIO): void {
  const cmd = addCommand(program, 'ls')
    .summary('list persistent buffers (user-space and kernel)')
    .description(
      `Lists the named persistent buffers of both backends: user-space buffers (files in /dev/shm/evtrace or
--dir) and kernel ones (tracefs instances evtrace.p.*, the boot-time persistent ring buffer), with size, mode, fill,
records lost, writers, readers, owner and creation time. Buffers that cannot be read are listed with the reason.
When an agent runs (--socket, EVTRACE_AGENT_SOCKET or the default socket), the agent lists them: what it can open,
with the session attached to each (SESSION; see evtrace session attach). Otherwise this process lists them.`,
    )
    .option('--json', 'print {buffers, unreadable, kernelUnavailable?, bootAbsent?} as JSON')
    .option('--dir <dir>', 'directory of user-space buffers (default $EVTRACE_PERSISTENT_DIR or /dev/shm/evtrace)')
    .option('--socket <path>', "the agent's control socket (an agent that does not answer there is an error)")
    .option('--no-agent', 'list directly, not through a running agent')
    .action(async (o: ListVia & { json?: boolean }) => {
      const r = await listBuffers(o);
      if (r.agent !== undefined) io.stderr(`evtrace: listed by the agent (pid ${r.agent.pid}) at ${r.agent.socket}\n`);
      io.stdout(formatListing(r.listing, !!o.json));
    });
  setExamples(
    cmd,
    `evtrace ls
evtrace ls --json | jq '.buffers[] | {name, fill, lost, session}'
evtrace ls --no-agent                     what this user can open, whatever the agent sees`,
  );
}
