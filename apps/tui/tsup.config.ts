import { defineConfig } from 'tsup';
import { packageConfig } from '../../tooling/build/tsup-config.ts';

export default defineConfig(
  packageConfig({
    // The demo producer runs from dist as its own file (a worker thread).
    entry: { index: 'src/index.ts', cli: 'src/cli.ts', 'demo-worker': 'src/data/demo-worker.ts' },
    dts: { entry: 'src/index.ts' },
  }),
);
