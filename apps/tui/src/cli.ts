#!/usr/bin/env node
// Checked before anything else loads: on an older Node the imports below fail with errors that do not say why.
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  process.stderr.write(
    `evtrace-view: ERR_VIEW_NODE_VERSION: needs Node.js >= 22.18 (this is ${process.version}); install Node 24 LTS\n`,
  );
  process.exit(1);
}
// A reader that goes away (`evtrace-view trace.dat | head`) ends the output, not the program with a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(0);
});
// React's development build checks and warns on every render: several times slower per frame.
process.env.NODE_ENV ??= 'production';
const { enableCompileCache } = await import('node:module');
enableCompileCache?.();
const { runViewer } = await import('./main.ts');
process.exitCode = await runViewer(process.argv.slice(2));
// Stdin in raw mode or a closing worker may keep the loop alive after the viewer is done: exit once stdout has
// taken everything written to it.
process.stdout.write('', () => process.exit());
