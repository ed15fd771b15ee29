/** The tsup settings every evtrace package builds with: ESM for Node 22, declarations, source maps. */
import type { Options } from 'tsup';
import { type NodeBuiltinsOptions, nodeBuiltins } from './node-builtins.ts';

export function packageConfig(options: Options & { builtins?: NodeBuiltinsOptions }): Options {
  const { builtins, esbuildPlugins = [], ...rest } = options;
  return {
    format: ['esm'],
    dts: true,
    sourcemap: true,
    clean: true,
    target: 'node22',
    // Built-ins reach the plugin with their `node:` prefix instead of tsup's own external marking.
    removeNodeProtocol: false,
    // node:child_process (with its net and dgram) is needed only when something is spawned.
    esbuildPlugins: [nodeBuiltins(builtins ?? { lazy: ['node:child_process'] }), ...esbuildPlugins],
    ...rest,
  };
}
