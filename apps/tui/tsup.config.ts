import { defineConfig } from 'tsup';
import { packageConfig } from '../../tooling/build/tsup-config.ts';

export default defineConfig(
  packageConfig({
    // Built-ins through process.getBuiltinModule (tooling/build/node-builtins.ts): each command starts sooner;
    // node:child_process (with its net and dgram) loads only when something is spawned.
    builtins: { lazy: ['node:child_process'] },
    // The demo producer runs from dist as its own file (a worker thread).
    entry: { index: 'src/index.ts', cli: 'src/cli.ts', 'demo-worker': 'src/data/demo-worker.ts' },
    dts: { entry: 'src/index.ts' },
  }),
);
