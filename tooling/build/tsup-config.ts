/**
 * The tsup settings every evtrace package builds with: ESM for Node 22, declarations, source maps.
 *
 * Libraries keep plain `node:` imports, so that consumers' bundlers and tools see which built-ins they use. The
 * command-line apps pass `builtins` to take them through `process.getBuiltinModule()` (see node-builtins.ts): their
 * start-up is what each command pays.
 */
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
    // Built-ins keep their `node:` prefix (and reach the plugin with it where an app uses it).
    removeNodeProtocol: false,
    esbuildPlugins: builtins === undefined ? esbuildPlugins : [nodeBuiltins(builtins), ...esbuildPlugins],
    ...rest,
  };
}
