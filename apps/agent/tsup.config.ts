import { defineConfig } from 'tsup';

export default defineConfig({
  // The demo's worker thread runs from dist as its own file.
  entry: { index: 'src/index.ts', cli: 'src/cli.ts', 'demo-worker': 'src/commands/demo-worker.ts' },
  format: ['esm'],
  dts: { entry: 'src/index.ts' },
  sourcemap: true,
  clean: true,
  target: 'node22',
});
