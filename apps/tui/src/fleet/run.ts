/**
 * `evtrace-view --nats URL`: connects to the fleet's NATS (failing before anything is drawn, with the fleet's error
 * code), then draws the fleet view, or without a terminal writes the exported events as JSON lines with their host and
 * sequence number, as `evtrace fleet tail --json` does.
 */
import {
  type ConnectionFlagValues,
  connectFleet,
  connectionFromFlags,
  DEFAULT_STREAM,
  type NatsConnection,
  serverList,
  tailEvents,
} from '@evtrace/fleet';
import { createElement } from 'react';
import { drawFullScreen, type ScreenIO } from '../terminal.ts';
import { FleetFeed } from './feed.ts';

/** Where the fleet view reads and writes (evtrace-view's own streams). */
export interface FleetIO extends ScreenIO {
  readonly env: NodeJS.ProcessEnv;
}

/** Runs the fleet view until the user quits (or, without a terminal, `limit` events or an interrupt). */
export async function runFleetView(
  flags: ConnectionFlagValues,
  io: FleetIO,
  o: { interactive: boolean; limit?: number; colour: boolean },
): Promise<void> {
  const connection = { ...connectionFromFlags(flags, io.env), name: 'evtrace-view' };
  const nc = await connectFleet(connection);
  try {
    if (!o.interactive) return await writeJsonLines(nc, flags, io, o.limit);
    const feed = new FleetFeed(nc, flags.natsStream !== undefined ? { stream: flags.natsStream } : {});
    feed.start();
    try {
      await draw(feed, io, {
        url: serverList(connection.servers).join(','),
        stream: flags.natsStream ?? DEFAULT_STREAM,
        colour: o.colour,
      });
    } finally {
      feed.close();
    }
  } finally {
    await nc.close().catch(() => {});
  }
}

async function writeJsonLines(
  nc: NatsConnection,
  flags: ConnectionFlagValues,
  io: FleetIO,
  limit: number | undefined,
): Promise<void> {
  const stop = new AbortController();
  const onInt = () => stop.abort();
  process.once('SIGINT', onInt);
  process.once('SIGTERM', onInt);
  try {
    await tailEvents(
      nc,
      {
        ...(flags.natsStream !== undefined ? { stream: flags.natsStream } : {}),
        ...(limit !== undefined ? { count: limit } : {}),
        json: true,
        since: 'new',
        follow: true,
        signal: stop.signal,
      },
      (chunk) => io.stdout.write(chunk),
    );
  } finally {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onInt);
  }
}

async function draw(feed: FleetFeed, io: FleetIO, o: { url: string; stream: string; colour: boolean }): Promise<void> {
  const [{ FleetApp }, { ThemeContext }] = await Promise.all([import('./fleet-app.tsx'), import('../ui/theme.ts')]);
  const app = createElement(FleetApp, { feed, url: o.url, stream: o.stream });
  await drawFullScreen(createElement(ThemeContext.Provider, { value: { colour: o.colour } }, app), io, 30);
}
