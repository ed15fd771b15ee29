import type { Command } from 'commander';
import type { CliIO } from '../program.ts';
import { registerCat } from './cat.ts';
import { registerConvert } from './convert.ts';
import { registerDemo } from './demo.ts';
import { registerFilter } from './filter.ts';
import { registerList } from './list.ts';
import { registerRecord } from './record.ts';

/** Adds every verb to the program. One module per verb under commands/. */
export function registerCommands(program: Command, io: CliIO): void {
  registerCat(program, io);
  registerConvert(program, io);
  registerDemo(program, io);
  registerFilter(program, io);
  registerList(program, io);
  registerRecord(program, io);
}
