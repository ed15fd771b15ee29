import { defineConfig } from 'tsup';

// The benchmark as the package runs for its users: built JavaScript, every import bundled. Run from TypeScript
// sources, Node's type stripper invalidates V8's array-buffer-detaching protector, and every typed-array access then
// carries a detach check (see README, Performance): about 1 ns per record here.
export default defineConfig({
  entry: ['src/ringbuf.bench.ts', 'src/ringbuf.bench.worker.ts'],
  outDir: '.bench',
  format: ['esm'],
  platform: 'node',
  target: 'node22',
  noExternal: [/.*/],
  splitting: false,
  clean: true,
  dts: false,
  sourcemap: false,
});
