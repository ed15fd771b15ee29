import type { Command } from 'commander';
import type { CliIO, Register } from '../command.ts';

/**
 * Every verb and how to load it: one module per verb under commands/, imported only when the command line needs it,
 * so `evtrace record` does not load the ring buffer or the decoders of `cat`: module loading is most of a short
 * command's CPU.
 */
const COMMANDS: Readonly<Record<string, () => Promise<Register>>> = {
  agent: async () => (await import('./agent.ts')).registerAgent,
  bts: async () => (await import('./bts.ts')).registerBts,
  cat: async () => (await import('./cat.ts')).registerCat,
  completion: async () => (await import('./completion.ts')).completionCommand(registerCommands),
  convert: async () => (await import('./convert.ts')).registerConvert,
  demo: async () => (await import('./demo.ts')).registerDemo,
  filter: async () => (await import('./filter.ts')).registerFilter,
  fleet: async () => (await import('./fleet.ts')).registerFleet,
  kmem: async () => (await import('./kmem.ts')).registerKmem,
  list: async () => (await import('./list.ts')).registerList,
  ls: async () => (await import('./ls.ts')).registerLs,
  mce: async () => (await import('./mce.ts')).registerMce,
  persistent: async () => (await import('./persistent.ts')).registerPersistent,
  record: async () => (await import('./record.ts')).registerRecord,
  session: async () => (await import('./session.ts')).registerSession,
};

/**
 * The verbs a command line needs: the one it starts with; none for `--version` alone; every one otherwise (the
 * program's help lists them all, an unknown verb gets suggestions).
 */
export function commandsFor(argv: readonly string[]): readonly string[] {
  const [first] = argv;
  if (first !== undefined && Object.hasOwn(COMMANDS, first)) return [first];
  if (argv.length === 1 && (first === '-V' || first === '--version')) return [];
  return Object.keys(COMMANDS);
}

/** Adds the verbs `argv` needs (every verb without `argv`) that the program does not have yet. */
export async function registerCommands(program: Command, io: CliIO, argv?: readonly string[]): Promise<void> {
  const have = new Set(program.commands.map((c) => c.name()));
  const names = (argv === undefined ? Object.keys(COMMANDS) : commandsFor(argv)).filter((n) => !have.has(n));
  const registers = await Promise.all(names.map((name) => COMMANDS[name]!()));
  for (const register of registers) register(program, io);
}
