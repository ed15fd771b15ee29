import { defineConfig } from 'tsup';
import { packageConfig } from '../../tooling/build/tsup-config.ts';

export default defineConfig(
  packageConfig({
    entry: ['src/index.ts', 'src/testing.ts'],
  }),
);
