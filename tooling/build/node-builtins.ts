/**
 * An esbuild plugin for the packages' builds: Node built-in modules are taken with `process.getBuiltinModule()`
 * instead of ESM `import`.
 *
 * Why: an ESM import of a built-in builds a module namespace from every export, which runs every lazy getter on the
 * module: `node:fs` loads fs/promises and readline, `node:util` its diff and argument parsers, `node:process` the
 * report and finalization modules, start-up CPU that `getBuiltinModule` does not spend; commander alone imports all
 * three, so every `evtrace` command paid it before doing anything (apps/agent/src/commands/end-to-end.bench.ts prints
 * a command's CPU). A bundle reads only the names it uses (the rest is tree-shaken), so no getter runs that the code
 * does not reach.
 *
 * Modules listed as `lazy` load on first use instead of at start-up: commander imports `node:child_process` for
 * executable subcommands, which evtrace never runs.
 */
import { builtinModules, createRequire } from 'node:module';
import type { Plugin } from 'esbuild';

const NAMESPACE = 'evtrace-node-builtin';
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** Every public built-in, with and without the `node:` prefix. */
const BUILTINS = new Set(builtinModules.filter((m) => !m.startsWith('_')).flatMap((m) => [m, `node:${m}`]));

export interface NodeBuiltinsOptions {
  /** Built-ins (`node:child_process`) loaded when first used. Their exports must be functions or classes. */
  readonly lazy?: readonly string[];
}

/** The module's source: each named export read only if used (a pure call is dropped with its unused binding). */
function eagerModule(name: string, names: readonly string[]): string {
  return [
    `const m = process.getBuiltinModule(${JSON.stringify(name)});`,
    'export default m;',
    ...names.map((n) => `export const ${n} = /* @__PURE__ */ (() => m.${n})();`),
  ].join('\n');
}

/** The module's source when loaded on first use: every export forwards calls and `new` to the real one. */
function lazyModule(name: string, names: readonly string[]): string {
  return [
    'let m;',
    `const load = () => (m ??= process.getBuiltinModule(${JSON.stringify(name)}));`,
    'const forward = (key) => function (...args) {',
    '  const target = load()[key];',
    '  return new.target ? Reflect.construct(target, args, new.target) : Reflect.apply(target, this, args);',
    '};',
    'export default new Proxy({}, { get: (_, key) => load()[key], has: (_, key) => key in load() });',
    ...names.map((n) => `export const ${n} = /* @__PURE__ */ forward(${JSON.stringify(n)});`),
  ].join('\n');
}

export function nodeBuiltins(options: NodeBuiltinsOptions = {}): Plugin {
  const lazy = new Set(options.lazy ?? []);
  return {
    name: 'evtrace-node-builtins',
    setup(build) {
      build.onResolve({ filter: /^(node:)?[a-z_/]+$/ }, (args) => {
        if (!BUILTINS.has(args.path)) return undefined;
        return { path: args.path.startsWith('node:') ? args.path : `node:${args.path}`, namespace: NAMESPACE };
      });
      build.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => {
        // Export names as this Node has them (the one that builds is the one that runs the tests).
        const mod = createRequire(import.meta.url)(args.path) as Record<string, unknown>;
        const names = Object.keys(mod).filter((k) => IDENTIFIER.test(k) && k !== 'default');
        if (!lazy.has(args.path)) return { contents: eagerModule(args.path, names), loader: 'js' };
        const notCallable = names.filter((n) => typeof mod[n] !== 'function');
        if (notCallable.length > 0) {
          return { errors: [{ text: `${args.path} cannot load lazily: ${notCallable.join(', ')} are not functions` }] };
        }
        return { contents: lazyModule(args.path, names), loader: 'js' };
      });
    },
  };
}
