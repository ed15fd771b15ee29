import type { Command } from 'commander';
import { setExamples } from '../help.ts';
import { addCommand, type CliIO } from '../program.ts';
import { formatListing, type PersistentTarget, persistentList } from './persistent.ts';

/** `evtrace ls [--json]`: the persistent buffers of both backends. */
export function registerLs(program: Command, io: CliIO): void {
  const cmd = addCommand(program, 'ls')
    .summary('list persistent buffers (user-space and kernel)')
    .description(
      `Lists the named persistent buffers of both backends: user-space buffers (files in /dev/shm/evtrace or
--dir) and kernel ones (tracefs instances evtrace.p.*, the boot-time persistent ring buffer), with size, mode, fill,
records lost, writers, readers, owner and creation time. Buffers this user cannot read are listed with the reason.`,
    )
    .option('--json', 'print {buffers, unreadable, kernelUnavailable?, bootAbsent?} as JSON')
    .option('--dir <dir>', 'directory of user-space buffers (default $EVTRACE_PERSISTENT_DIR or /dev/shm/evtrace)')
    .action((o: PersistentTarget & { json?: boolean }) => {
      io.stdout(formatListing(persistentList(o), !!o.json));
    });
  setExamples(
    cmd,
    `evtrace ls
evtrace ls --json | jq '.buffers[] | {name, fill, lost}'`,
  );
}
