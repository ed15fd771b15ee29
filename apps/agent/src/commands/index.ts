import type { Command } from 'commander';
import type { CliIO } from '../program.ts';

/** Adds every verb to the program. One module per verb under commands/. */
export function registerCommands(_program: Command, _io: CliIO): void {}
