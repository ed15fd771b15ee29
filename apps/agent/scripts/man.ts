/**
 * Writes the manual pages (dist/man/*.1) from the command tree, after the build: the same text as `--help`.
 * Run by `pnpm build`; package.json's `man` field lists what it writes.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import pkg from '../package.json' with { type: 'json' };
import { commandTree } from '../src/cli-tree.ts';
import { registerCommands } from '../src/commands/index.ts';
import { manPages } from '../src/man.ts';
import { createProgram } from '../src/program.ts';

const io = { stdout: () => {}, stderr: () => {} };
const program = createProgram(io);
await registerCommands(program, io);
const dir = new URL('../dist/man/', import.meta.url);
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
for (const [name, text] of manPages(commandTree(program), { version: pkg.version }))
  writeFileSync(new URL(name, dir), text);
