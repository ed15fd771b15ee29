#!/usr/bin/env -S node --max-semi-space-size=4
// The young generation capped small: left to grow, V8 enlarges it far beyond what a stream of short-lived events
// needs, and it was most of `cat`'s and `convert`'s peak RSS, for no CPU time measured.
// Checked before anything else loads: on an older Node the imports below fail with errors that do not say why.
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  process.stderr.write(
    `evtrace: ERR_CLI_NODE_VERSION: needs Node.js >= 22.18 (this is ${process.version}); install Node 24 LTS\n`,
  );
  process.exit(1);
}
// V8's compiled code cached on disk (in os.tmpdir(), as tsc does; NODE_DISABLE_COMPILE_CACHE=1 turns it off):
// compiling commander and the command's modules was a measurable share of a short command's CPU.
const { enableCompileCache } = await import('node:module');
enableCompileCache?.();
const { runCli } = await import('./program.ts');
const { wroteThroughStream } = await import('./stdio.ts');
const code = await runCli(process.argv.slice(2));
process.exitCode = code;
// When nothing is left but the standard streams and everything was written synchronously (stdio.ts), end here:
// letting the event loop run dry first tears down the heap and V8's platform, CPU spent on nothing (end-to-end.bench.ts
// in commands/ prints a command's CPU). A command that left a child, a server, a timer or queued output behind still
// ends when they do.
const idle = (resource: string) => resource === 'PipeWrap' || resource === 'TTYWrap';
if (process.platform === 'linux' && !wroteThroughStream() && process.getActiveResourcesInfo().every(idle)) {
  process.exit(code);
}
