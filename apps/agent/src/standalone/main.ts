/**
 * The standalone evtrace's entry point (scripts/standalone.ts bundles it into one CommonJS file for Node's single
 * executable applications, whose Node 24 runs no ES module as main, so no top-level await): cli.ts without the Node
 * version check (the binary carries its own Node) and without the compile cache (the blob carries V8's code cache).
 */
import { runCli } from '../program.ts';
import { wroteThroughStream } from '../stdio.ts';

void runCli(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
  // As in cli.ts: nothing left but the standard streams and everything written synchronously, end now.
  const idle = (resource: string) => resource === 'PipeWrap' || resource === 'TTYWrap';
  if (!wroteThroughStream() && process.getActiveResourcesInfo().every(idle)) process.exit(code);
});
