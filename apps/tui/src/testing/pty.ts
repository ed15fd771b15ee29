/** evtrace-view (the built `dist/cli.js`) in a real pseudo-terminal, its screen kept by {@link Screen}. */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pty from '@lydell/node-pty';
import { Screen } from './screen.ts';

export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

export interface RunningViewer {
  readonly screen: Screen;
  /** Everything written to the terminal so far. */
  output(): string;
  type(keys: string): void;
  resize(cols: number, rows: number): void;
  kill(signal?: string): void;
  /** Waits until the screen's text satisfies `ok`; throws with the screen after `ms`. */
  waitFor(ok: string | ((text: string) => boolean), ms?: number): Promise<string>;
  readonly exited: Promise<{ exitCode: number; signal?: number }>;
}

export function startViewer(
  args: readonly string[],
  options: { cols?: number; rows?: number; env?: Record<string, string | undefined> } = {},
): RunningViewer {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build @evtrace/tui first (pnpm turbo run build)`);
  const cols = options.cols ?? 120;
  const rows = options.rows ?? 30;
  const screen = new Screen(cols, rows);
  let output = '';
  const merged: Record<string, string | undefined> = {
    ...process.env,
    TERM: 'xterm-256color',
    NO_COLOR: undefined,
    FORCE_COLOR: undefined,
    ...options.env,
  };
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(merged)) if (v !== undefined) env[k] = v;
  const p = pty.spawn(process.execPath, [CLI, ...args], { cols, rows, env });
  p.onData((d) => {
    output += d;
    screen.write(d);
  });
  const exited = new Promise<{ exitCode: number; signal?: number }>((resolve) => p.onExit(resolve));
  return {
    screen,
    output: () => output,
    type: (keys) => p.write(keys),
    resize(c, r) {
      screen.resize(c, r);
      p.resize(c, r);
    },
    kill: (signal) => p.kill(signal),
    async waitFor(ok, ms = 45_000) {
      const test = typeof ok === 'string' ? (t: string) => t.includes(ok) : ok;
      for (let waited = 0; waited < ms; waited += 50) {
        const text = screen.text();
        if (test(text)) return text;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`screen never matched ${String(ok)}; it shows:\n${screen.text()}`);
    },
    exited,
  };
}
