import { defineConfig } from 'tsup';
import { packageConfig } from '../../tooling/build/tsup-config.ts';

export default defineConfig(
  packageConfig({
    // The perf.data reading thread's module ships beside index.js, where analysePerfData looks for it.
    entry: { index: 'src/index.ts', 'perf-data-worker': 'src/perf-data-worker.ts' },
  }),
);
