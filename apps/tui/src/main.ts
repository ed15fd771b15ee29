/**
 * evtrace-view's program: picks the source from the command line, then draws the viewer on a terminal or, without
 * one, writes JSON lines.
 */

import { defaultSocketPath } from '@evtrace/agent-protocol';
import { createElement } from 'react';
import pkg from '../package.json' with { type: 'json' };
import { parseViewerArgs, type ViewerArgs } from './args.ts';
import { attachAgent } from './data/agent-source.ts';
import { startDemoSource } from './data/demo-source.ts';
import { openFileSource } from './data/file-source.ts';
import type { ViewerSource } from './data/source.ts';
import { errorLine, ViewerError } from './errors.ts';
import { runFleetView } from './fleet/run.ts';
import { MANUAL } from './help.ts';
import { liveToJsonLines, traceToJsonLines } from './jsonl.ts';
import { drawFullScreen, type ScreenIO } from './terminal.ts';
import { colourWanted } from './ui/theme.ts';

/** Exit statuses, as the evtrace CLI's. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** Where the program reads and writes; tests pass their own. */
export interface ViewerIO extends ScreenIO {
  readonly env: NodeJS.ProcessEnv;
}

/** Runs evtrace-view and resolves to its exit status; reports every error on stderr (`evtrace-view: CODE: message`). */
export async function runViewer(argv: readonly string[], io: ViewerIO = processIO()): Promise<number> {
  try {
    const args = parseViewerArgs(argv);
    if (args.help) {
      io.stdout.write(MANUAL);
      return EXIT.ok;
    }
    if (args.version) {
      io.stdout.write(`${pkg.version}\n`);
      return EXIT.ok;
    }
    const interactive = io.stdin.isTTY === true && io.stdout.isTTY === true;
    const write = (text: string) => io.stdout.write(text);
    if (args.fleet !== undefined) {
      const colour = interactive && terminalColour(io.env);
      await runFleetView(args.fleet, io, {
        interactive,
        colour,
        ...(args.limit !== undefined ? { limit: args.limit } : {}),
      });
      return EXIT.ok;
    }
    if (!interactive && args.trace !== undefined) {
      traceToJsonLines(args.trace, write, args.limit);
      return EXIT.ok;
    }
    const source = await openSource(args, interactive);
    try {
      if (!interactive) {
        const stop = new AbortController();
        const onInt = () => stop.abort();
        process.once('SIGINT', onInt);
        process.once('SIGTERM', onInt);
        await liveToJsonLines(source, write, args.limit, stop.signal);
        process.off('SIGINT', onInt);
        process.off('SIGTERM', onInt);
        return EXIT.ok;
      }
      await draw(source, io);
      const summary = source.summary?.();
      if (summary !== undefined) io.stderr.write(`evtrace-view: ${summary}\n`);
      return EXIT.ok;
    } finally {
      await source.close();
    }
  } catch (error) {
    io.stderr.write(`evtrace-view: ${errorLine(error)}\n`);
    const usage = error instanceof ViewerError && error.code === 'ERR_VIEW_USAGE';
    if (usage) io.stderr.write('evtrace-view: see evtrace-view --help\n');
    return usage ? EXIT.usage : EXIT.failure;
  }
}

/** The source the arguments name: a trace file, an agent session, or (no argument, no agent) the demo. */
async function openSource(args: ViewerArgs, interactive: boolean): Promise<ViewerSource> {
  if (args.trace !== undefined) return openFileSource(args.trace);
  const agent = await attachAgent({
    ...(args.agent !== undefined ? { socket: args.agent } : {}),
    ...(args.session !== undefined ? { session: args.session } : {}),
  });
  if (agent !== undefined) return agent;
  return startDemoSource({
    reason: `no agent at ${defaultSocketPath()}`,
    // JSON lines need every event; the screen samples a fast stream.
    sample: interactive,
    ...(args.demoRate !== undefined ? { rate: args.demoRate } : {}),
  });
}

/** FORCE_COLOR's level for a colour terminal: 3 with COLORTERM truecolor/24bit, 2 for a 256-colour TERM, else 1. */
function colourDepth(env: NodeJS.ProcessEnv): string {
  if (env.COLORTERM === 'truecolor' || env.COLORTERM === '24bit') return '3';
  return env.TERM?.includes('256') ? '2' : '1';
}

/** Whether to colour the terminal, with FORCE_COLOR set to match before Ink loads. */
function terminalColour(env: NodeJS.ProcessEnv): boolean {
  const colour = colourWanted(env);
  // Ink's colour library reads FORCE_COLOR when it loads; it does not look at NO_COLOR or TERM=dumb by itself, and
  // it turns colour off whenever CI is set: a terminal is a terminal wherever it is, so the depth is chosen here.
  if (!colour) process.env.FORCE_COLOR = '0';
  else if (process.env.FORCE_COLOR === undefined) process.env.FORCE_COLOR = colourDepth(env);
  return colour;
}

/** Draws the viewer until the user quits. */
async function draw(source: ViewerSource, io: ViewerIO): Promise<void> {
  const colour = terminalColour(io.env);
  const [{ App }, { VIEWS }] = await Promise.all([import('./ui/app.tsx'), import('./views/index.ts')]);
  await drawFullScreen(createElement(App, { source, views: VIEWS, theme: { colour } }), io, 60);
}

function processIO(): ViewerIO {
  return { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env };
}
