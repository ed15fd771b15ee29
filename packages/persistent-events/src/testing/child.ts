/** Test support: node child processes running a module script against this package's sources. */
import { type ChildProcess, spawn } from 'node:child_process';

/** The package entry, for child scripts to import. */
export const INDEX = new URL('../index.ts', import.meta.url).pathname;

/** Starts `node` on an ES module text (optionally as another user through runuser). */
export function startNode(script: string, options: { user?: string; stdin?: boolean } = {}): ChildProcess {
  const args = ['--input-type=module', '-e', script];
  const stdio = [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] as ('pipe' | 'ignore')[];
  return options.user
    ? spawn('runuser', ['-u', options.user, '--', process.execPath, ...args], { stdio })
    : spawn(process.execPath, args, { stdio });
}

/** Runs a script to its end: exit status, signal, stdout and stderr. */
export function runNode(
  script: string,
  options: { user?: string } = {},
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  const child = startNode(script, options);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

/** Resolves with the first stdout line for which `test` holds. */
export function waitForLine(child: ChildProcess, test: (line: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    const onData = (d: Buffer) => {
      buf += d;
      let nl = buf.indexOf('\n');
      while (nl >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (test(line)) {
          child.stdout!.off('data', onData);
          resolve(line);
          return;
        }
        nl = buf.indexOf('\n');
      }
    };
    child.stdout!.on('data', onData);
    child.on('exit', (code, signal) => reject(new Error(`child exited (${code ?? signal}) first: ${err}`)));
  });
}
