/**
 * Builds the standalone evtrace (out/evtrace): one executable that needs no Node on the host, made with Node's single
 * executable applications. The CLI is bundled into one CommonJS file (Node 24 runs no ES module as a SEA's main);
 * the worker threads' bundles, koffi's native module and Perfetto's .proto files ride along as assets; the blob is
 * injected into a copy of the Node that runs this script. src/standalone/runtime.ts serves what the sources load from
 * files at run time. Run by `pnpm --filter @evtrace/agent package` after the build (slow, so not part of it).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const app = fileURLToPath(new URL('..', import.meta.url));
const out = join(app, 'out');
const require = createRequire(import.meta.url);

/** Where the sources reach for files at run time, and what stands in for each in the bundle (runtime.ts). */
const REWRITES = [
  // Before the general rewrite: a require esbuild bundles, resolved from trace-format, which depends on protobufjs.
  {
    what: 'protobufjs loaded on first use',
    from: /\bcreateRequire\d*\(import\.meta\.url\)\("protobufjs"\)/g,
    to: 'require("protobufjs")',
  },
  { what: 'createRequire(import.meta.url)', from: /\bcreateRequire\d*\(import\.meta\.url\)/g, to: 'standaloneRequire' },
  { what: 'new Worker(', from: /\bnew Worker\d*\(/g, to: 'new StandaloneWorker(' },
  {
    what: "kmemtrace's perf-data.wasm read",
    from: /new WebAssembly\.Module\(perfDataWasmBytes\d*\(\)\)/g,
    to: 'new WebAssembly.Module(standaloneRawAsset("perf-data.wasm"))',
  },
  {
    what: "Perfetto's .proto reads",
    from: /const dir = perfettoProtoRoot\(\);(\s*for \(const file of FILES\) protobuf\.parse\()\w+\(\w+\(dir, file\), "utf8"\)/g,
    to: '$1standaloneAsset(file)',
  },
] as const;

/** Applies REWRITES to evtrace's own modules, counting each, so that a source that changed fails the build here. */
function rewrites(counts: Map<string, number>): Plugin {
  return {
    name: 'evtrace-standalone-rewrites',
    setup(b) {
      b.onLoad({ filter: /\/(packages\/[^/]+|apps\/agent)\/(src|dist)\/.*\.[jt]s$/ }, (args) => {
        if (args.path.includes('/node_modules/') || args.path.includes('/src/standalone/')) return undefined;
        let text = readFileSync(args.path, 'utf8');
        for (const r of REWRITES) {
          text = text.replace(r.from, (...m: string[]) => {
            counts.set(r.what, (counts.get(r.what) ?? 0) + 1);
            return r.to.replace('$1', m[1] ?? '');
          });
        }
        return { contents: text, loader: args.path.endsWith('.ts') ? 'ts' : 'js' };
      });
    },
  };
}

/** One CommonJS bundle of `entry` with the standalone runtime injected; returns how often each rewrite applied. */
async function bundle(entry: string, outfile: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    inject: [join(app, 'src/standalone/runtime.ts')],
    // Worker files are found by name (StandaloneWorker); any other import.meta left is an error, not an empty object.
    define: { 'import.meta.url': '"file:///evtrace/evtrace.js"' },
    logOverride: { 'empty-import-meta': 'error' },
    logLevel: 'warning',
    plugins: [rewrites(counts)],
  });
  return counts;
}

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const main = await bundle(join(app, 'src/standalone/main.ts'), join(out, 'evtrace.cjs'));
for (const r of REWRITES) {
  if (!main.has(r.what)) throw new Error(`standalone: no ${r.what} found to rewrite; update scripts/standalone.ts`);
}
// A createRequire the rewrite missed would look for files beside a bundle that has none.
if (/createRequire\w*\)?\("file:/.test(readFileSync(join(out, 'evtrace.cjs'), 'utf8'))) {
  throw new Error('standalone: a createRequire(import.meta.url) was left in the bundle; update REWRITES');
}
const tracefs = dirname(require.resolve('@evtrace/tracefs'));
await bundle(join(tracefs, 'reader-worker.js'), join(out, 'reader-worker.js'));
const kmemtrace = dirname(require.resolve('@evtrace/kmemtrace'));
await bundle(join(kmemtrace, 'perf-data-worker.js'), join(out, 'perf-data-worker.js'));
await bundle(join(app, 'src/commands/demo-worker.ts'), join(out, 'demo-worker.js'));
await bundle(join(app, 'src/sliced-lines-worker.ts'), join(out, 'sliced-lines-worker.js'));

// The assets: worker bundles by file name, koffi's native module, kmemtrace's WebAssembly reader, Perfetto's schema by
// its path in trace-format.
const fromKoffi = createRequire(require.resolve('koffi'));
const koffiDir = dirname(fromKoffi.resolve(`@koromix/koffi-${process.platform}-${process.arch}/package.json`));
const traceFormat = join(dirname(require.resolve('@evtrace/trace-format')), '..');
const protoText = readFileSync(join(traceFormat, 'src/output/perfetto-schema.ts'), 'utf8');
const protos = [...protoText.matchAll(/'(protos\/[\w/]+\.proto)'/g)].map((m) => m[1] as string);
const assets: Record<string, string> = {
  'reader-worker.js': join(out, 'reader-worker.js'),
  'perf-data-worker.js': join(out, 'perf-data-worker.js'),
  'demo-worker.js': join(out, 'demo-worker.js'),
  'sliced-lines-worker.js': join(out, 'sliced-lines-worker.js'),
  'koffi.node': join(koffiDir, `${process.platform}_${process.arch}`, 'koffi.node'),
  'perf-data.wasm': join(kmemtrace, 'perf-data.wasm'),
  ...Object.fromEntries(protos.map((p) => [p, join(traceFormat, p)])),
};
const config = {
  main: join(out, 'evtrace.cjs'),
  output: join(out, 'evtrace.blob'),
  disableExperimentalSEAWarning: true,
  useCodeCache: true,
  // As cli.ts's shebang: V8's young generation capped small.
  execArgv: ['--max-semi-space-size=4'],
  assets,
};
writeFileSync(join(out, 'sea-config.json'), `${JSON.stringify(config, null, 2)}\n`);
execFileSync(process.execPath, ['--experimental-sea-config', join(out, 'sea-config.json')], { stdio: 'inherit' });

const binary = join(out, 'evtrace');
copyFileSync(process.execPath, binary);
chmodSync(binary, 0o755);
// Node's debug information is most of its size and no use to a user's stack trace.
try {
  execFileSync('strip', ['--strip-debug', binary]);
} catch {}
type Inject = (file: string, name: string, blob: Buffer, options: { sentinelFuse: string }) => Promise<void>;
const { inject } = require('postject') as { inject: Inject };
await inject(binary, 'NODE_SEA_BLOB', readFileSync(config.output), {
  sentinelFuse: 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2',
});
process.stdout.write(`${binary}\n`);
