import { defineConfig } from 'tsup';
import { packageConfig } from '../../tooling/build/tsup-config.ts';

export default defineConfig(
  packageConfig({
    // Built-ins through process.getBuiltinModule (tooling/build/node-builtins.ts): each command starts sooner;
    // node:child_process (with its net and dgram) loads only when something is spawned.
    builtins: { lazy: ['node:child_process'] },
    // Worker threads (the demo's producers, the sliced reading of `cat`) run from dist as files of their own.
    entry: {
      index: 'src/index.ts',
      cli: 'src/cli.ts',
      'demo-worker': 'src/commands/demo-worker.ts',
      'sliced-lines-worker': 'src/sliced-lines-worker.ts',
    },
    dts: { entry: 'src/index.ts' },
    // Bundled so that its imports of built-ins go through the plugin too (it never runs executable subcommands,
    // so its node:child_process is never loaded).
    noExternal: ['commander'],
  }),
);
