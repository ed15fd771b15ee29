import type { Command } from 'commander';
import type { CliIO } from '../command.ts';
import { setExamples } from '../help.ts';
import { addListingCommand } from './persistent.ts';

/** `evtrace ls [--json]`: the persistent buffers of both backends, through the running agent when there is one. */
export function registerLs(program: Command, io: CliIO): void {
  const cmd = addListingCommand(program, 'ls', io)
    .summary('list persistent buffers (user-space and kernel)')
    .description(
      `Lists the named persistent buffers of both backends: user-space buffers (files in /dev/shm/evtrace or
--dir) and kernel ones (tracefs instances evtrace.p.*, the boot-time persistent ring buffer), with size, mode, fill,
records lost, writers, readers, owner and creation time. Buffers that cannot be read are listed with the reason.
When an agent runs (--socket, EVTRACE_AGENT_SOCKET or the default socket), the agent lists them: what it can open,
with the session attached to each (SESSION; see evtrace session attach). Otherwise this process lists them.
The one listing of buffers: \`evtrace persistent ls\` is the same command. Events: \`evtrace list\`; the agent's
sessions: \`evtrace session list\`.`,
    );
  setExamples(
    cmd,
    `evtrace ls
evtrace ls --json | jq '.buffers[] | {name, fill, lost, session}'
evtrace ls --no-agent                     what this user can open, whatever the agent sees`,
  );
}
