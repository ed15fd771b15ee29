import { defineConfig } from 'tsup';
import { packageConfig } from '../../tooling/build/tsup-config.ts';

export default defineConfig(
  packageConfig({
    // The reader thread's module ships beside index.js, where the recorder looks for it.
    entry: { index: 'src/index.ts', 'reader-worker': 'src/record/reader-worker.ts' },
  }),
);
