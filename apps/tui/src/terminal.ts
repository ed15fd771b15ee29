/**
 * Terminal manners Ink does not cover: the alternate screen and a visible cursor are restored however the process
 * ends (a crash, SIGTERM, SIGHUP), not only on a clean exit.
 */
import type { ReactElement } from 'react';
import { errorLine } from './errors.ts';

const LEAVE_ALT_SCREEN = '\x1b[?1049l';
const SHOW_CURSOR = '\x1b[?25h';

/**
 * Installs handlers that restore the terminal before the process dies; returns the function that removes them.
 * `restore` runs at most once.
 */
export function guardTerminal(stdout: NodeJS.WriteStream, onSignal: () => void): () => void {
  let restored = false;
  const restore = () => {
    if (restored) return;
    restored = true;
    try {
      stdout.write(`${SHOW_CURSOR}${LEAVE_ALT_SCREEN}`);
    } catch {}
  };
  const crash = (error: unknown) => {
    restore();
    // A crash is a bug whatever its code: the stack's frames follow the error line, to say where.
    const frames = error instanceof Error ? (error.stack ?? '').split('\n').filter((l) => /^\s+at /.test(l)) : [];
    process.stderr.write(`evtrace-view: ${errorLine(error)}\n${frames.map((f) => `${f}\n`).join('')}`);
    process.exit(1);
  };
  const signal = () => {
    onSignal();
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
  process.on('SIGTERM', signal);
  process.on('SIGHUP', signal);
  process.on('exit', restore);
  return () => {
    process.off('uncaughtException', crash);
    process.off('unhandledRejection', crash);
    process.off('SIGTERM', signal);
    process.off('SIGHUP', signal);
    process.off('exit', restore);
  };
}

/** The streams a full-screen view draws on and reads keys from. */
export interface ScreenIO {
  readonly stdin: NodeJS.ReadStream;
  readonly stdout: NodeJS.WriteStream;
  readonly stderr: NodeJS.WriteStream;
}

/**
 * Draws `element` with Ink on the alternate screen until it exits, at most `maxFps` frames a second; the terminal is
 * restored however the process ends.
 */
export async function drawFullScreen(element: ReactElement, io: ScreenIO, maxFps: number): Promise<void> {
  const { render } = await import('ink');
  const instance = render(element, {
    stdin: io.stdin,
    stdout: io.stdout,
    stderr: io.stderr,
    exitOnCtrlC: false,
    patchConsole: false,
    alternateScreen: true,
    // Ink turns itself off in CI environments; a terminal is a terminal wherever it is.
    interactive: true,
    maxFps,
  });
  const unguard = guardTerminal(io.stdout, () => instance.unmount());
  try {
    await instance.waitUntilExit();
  } finally {
    unguard();
  }
}
