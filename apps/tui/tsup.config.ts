import { defineConfig } from 'tsup';

export default defineConfig({
  // The demo producer runs from dist as its own file (a worker thread).
  entry: { index: 'src/index.ts', cli: 'src/cli.ts', 'demo-worker': 'src/data/demo-worker.ts' },
  format: ['esm'],
  dts: { entry: 'src/index.ts' },
  sourcemap: true,
  clean: true,
  target: 'node22',
});
