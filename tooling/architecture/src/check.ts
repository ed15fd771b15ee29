/** Prints the workspace's import problems (see imports.ts), one a line; exits 1 when there is any. */
import { checkImports, ROOT } from './imports.ts';

const problems = checkImports(ROOT);
for (const problem of problems) process.stdout.write(`${problem}\n`);
process.stderr.write(
  problems.length === 0 ? 'imports keep to the layers; no import loop\n' : `${problems.length} import problems\n`,
);
process.exitCode = problems.length === 0 ? 0 : 1;
