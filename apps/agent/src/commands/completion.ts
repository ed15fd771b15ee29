import type { Command } from 'commander';
import { commandTree } from '../cli-tree.ts';
import { addCommand, type CliIO } from '../command.ts';
import { completionScript, SHELLS, type Shell } from '../completion.ts';
import { setExamples } from '../help.ts';

/**
 * `evtrace completion bash|zsh|fish`. Takes the registration of every verb from the command index, so that the
 * script covers the whole tree whatever this command line loaded.
 */
export function completionCommand(
  registerAll: (program: Command, io: CliIO) => Promise<void>,
): (program: Command, io: CliIO) => void {
  return (program, io) => {
    const cmd = addCommand(program, 'completion')
      .summary('print a shell completion script (bash, zsh or fish)')
      .description(
        `Prints a script that completes evtrace's commands, their options and the values of options with a fixed set,
and file names elsewhere, for the given shell.`,
      )
      .argument('<shell>', `the shell: ${SHELLS.join(', ')}`)
      .action(async (shell: string) => {
        await registerAll(program, io);
        io.stdout(completionScript(shell as Shell, commandTree(program)));
      });
    cmd.registeredArguments[0]!.choices(SHELLS);
    setExamples(
      cmd,
      `source <(evtrace completion bash)                 in ~/.bashrc
evtrace completion bash > /usr/share/bash-completion/completions/evtrace
eval "$(evtrace completion zsh)"                  in ~/.zshrc, after compinit
evtrace completion fish > ~/.config/fish/completions/evtrace.fish`,
    );
  };
}
