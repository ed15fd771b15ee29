import { defineConfig } from 'tsup';
import { packageConfig } from '../../tooling/build/tsup-config.ts';

export default defineConfig(
  packageConfig({
    // Built-ins through process.getBuiltinModule (tooling/build/node-builtins.ts): each command starts sooner;
    // node:child_process (with its net and dgram) loads only when something is spawned.
    builtins: { lazy: ['node:child_process'] },
    // The demo producer and the agent stream's reader run from dist as their own files (worker threads).
    entry: {
      index: 'src/index.ts',
      cli: 'src/cli.ts',
      'demo-worker': 'src/data/demo-worker.ts',
      'agent-stream-worker': 'src/data/agent-stream-worker.ts',
    },
    dts: { entry: 'src/index.ts' },
  }),
);
