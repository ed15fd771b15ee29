/**
 * evtrace-view on a 1 M-event trace.dat, measured from outside as a user sees it: the built viewer in a real
 * pseudo-terminal, time from start to the first frame with events, time from a key to the frame that answers it, and
 * the process's resident memory. Peers in the same run: `trace-cmd report` on the same file piped into `less` (first
 * screen, then `G`), and `less` on the report's text. Then the live demo at 100 000 events/s, drawn by the real app:
 * events shown against events produced, and the drawing thread's event-loop delay.
 *
 * The same for a 1 M-event CTF trace (4 streams), indexed progressively: first frame, keys, the time until the whole
 * trace is indexed, beside the trace.dat figures and `babeltrace2 DIR | less` (first screen) in the same run.
 *
 * Then the paths users take at scale: a live kernel session of the real agent at 100 000 events/s through its socket
 * into the built viewer (frames per second, memory over time, events recorded against events the viewer received and
 * lost), printed beside the embedded demo's figure, and a 10 M-event trace.dat (first frame, key to frame, memory).
 *
 * Run: pnpm --filter @evtrace/tui bench (builds first); `-- --ctf` runs only the CTF part and what follows it,
 * `-- --scale` only the live (embedded and agent) and the 10 M-event parts, `-- --live` only the live parts. Numbers
 * on a shared, loaded machine are noisy: the load average is printed at the end.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { type Comparison, fromTotal, type Measurement, printComparisons } from '@evtrace/bench';
import pty from '@lydell/node-pty';
import { render } from 'ink-testing-library';
import { createElement } from 'react';
import { agentLiveUnavailable, measureAgentLive, rssMb } from './bench-agent.ts';
import { CLI } from './testing/pty.ts';
import { Screen } from './testing/screen.ts';
import { largeCtfTrace, largeTrace, tempDir } from './testing/traces.ts';

// The app is JSX: plain node runs the built package, typed as the sources.
const dist = new URL('../dist/index.js', import.meta.url).href;
const { App, startDemoSource, VIEWS } = (await import(dist)) as typeof import('./index.ts');

const EVENTS = 1_000_000;
const ROWS = 40;
const COLS = 160;

interface Term {
  screen: Screen;
  pid: number;
  type(keys: string): void;
  until(ok: (text: string) => boolean, ms?: number): Promise<number>;
  close(): Promise<void>;
}

/** Starts `file args` in a pseudo-terminal; `until` resolves to the ms from the call to the matching screen. */
function term(file: string, args: string[]): Term {
  const screen = new Screen(COLS, ROWS);
  const p = pty.spawn(file, args, {
    cols: COLS,
    rows: ROWS,
    env: { ...(process.env as Record<string, string>), TERM: 'xterm-256color' },
  });
  const exited = new Promise<void>((r) => p.onExit(() => r()));
  let changed: () => void = () => {};
  p.onData((d) => {
    screen.write(d);
    changed();
  });
  return {
    screen,
    pid: p.pid,
    type: (k) => p.write(k),
    until(ok, ms = 120_000) {
      const t0 = performance.now();
      return new Promise((resolve, reject) => {
        const check = () => {
          if (ok(screen.text())) {
            changed = () => {};
            clearTimeout(timer);
            resolve(performance.now() - t0);
          }
        };
        const timer = setTimeout(() => reject(new Error(`screen never matched:\n${screen.text()}`)), ms);
        changed = check;
        check();
      });
    },
    async close() {
      p.kill('SIGTERM');
      await exited;
    },
  };
}

const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[xs.length >> 1]!;
const ms = (name: string, v: number): Measurement => fromTotal(name, v * 1e6, 1);
const selected = (t: string) => t.split('\n').find((l) => l.startsWith('>')) ?? '';
const hasRow = (t: string) => /^[ >]\d+\.\d{6}\s/m.test(t);

/** evtrace-view on `trace`: first frames, key latencies and RSS over 3 starts. */
async function measureViewer(
  trace: string,
): Promise<{ first: number; j: number; jAfter: number; jumps: number; rss: number; indexed: number }> {
  const firsts: number[] = [];
  let jMs: number[] = [];
  let bigMs: number[] = [];
  const indexed: number[] = [];
  const keysAfter: number[] = [];
  let rss = 0;
  for (let run = 0; run < 3; run++) {
    const t0 = performance.now();
    const v = term(process.execPath, [CLI, trace]);
    firsts.push(await v.until(hasRow));
    const keys: number[] = [];
    for (let k = 0; k < 20; k++) {
      const before = selected(v.screen.text());
      v.type('j');
      keys.push(await v.until((t) => selected(t) !== before));
    }
    // A progressively indexed trace: until the status bar stops saying so.
    await v.until((t) => !t.includes('indexing'));
    indexed.push(performance.now() - t0);
    for (let k = 0; k < 20; k++) {
      const before = selected(v.screen.text());
      v.type('j');
      keysAfter.push(await v.until((t) => selected(t) !== before));
    }
    const jumps: number[] = [];
    for (const key of ['G', 'g', '\x1b[6~', 'G']) {
      const before = v.screen.text();
      v.type(key);
      jumps.push(await v.until((t) => t !== before));
    }
    rss = Math.max(rss, rssMb(v.pid));
    jMs = jMs.concat(keys);
    bigMs = bigMs.concat(jumps);
    await v.close();
  }
  return {
    first: median(firsts),
    j: median(jMs),
    jAfter: median(keysAfter),
    jumps: median(bigMs),
    rss,
    indexed: median(indexed),
  };
}

const scaleOnly = process.argv.includes('--scale');
const liveOnly = process.argv.includes('--live');
const ctfOnly = process.argv.includes('--ctf') || scaleOnly || liveOnly;
const dir = tempDir('evtrace-view-bench-');
try {
  let datFirst = Number.NaN;
  let datJ = Number.NaN;
  if (!ctfOnly) {
    process.stdout.write(`building a ${EVENTS.toLocaleString('en-US')}-event trace.dat in ${dir}…\n`);
    const trace = await largeTrace(dir, EVENTS);
    const hasTraceCmd = spawnSync('trace-cmd', ['--help']).error === undefined;
    const text = join(dir, 'report.txt');
    let reportMs = Number.NaN;
    if (hasTraceCmd) {
      const t0 = performance.now();
      const out = spawnSync('trace-cmd', ['report', trace], { maxBuffer: 1 << 30 });
      reportMs = performance.now() - t0;
      writeFileSync(text, out.stdout);
    }

    // evtrace-view: first frame, keys, memory (3 starts, the median).
    const firsts: number[] = [];
    let jMs: number[] = [];
    let bigMs: number[] = [];
    let rss = 0;
    for (let run = 0; run < 3; run++) {
      const v = term(process.execPath, [CLI, trace]);
      firsts.push(await v.until(hasRow));
      const keys: number[] = [];
      const jumps: number[] = [];
      // (the same steps as measureViewer, kept apart so the trace.dat figures stay comparable with earlier runs)
      for (let k = 0; k < 20; k++) {
        const before = selected(v.screen.text());
        v.type('j');
        keys.push(await v.until((t) => selected(t) !== before));
      }
      for (const key of ['G', 'g', '\x1b[6~', 'G']) {
        const before = v.screen.text();
        v.type(key);
        jumps.push(await v.until((t) => t !== before));
      }
      rss = Math.max(rss, rssMb(v.pid));
      jMs = jMs.concat(keys);
      bigMs = bigMs.concat(jumps);
      await v.close();
    }

    // Peers: trace-cmd report | less (first screen, then G), and less on the text.
    const rows: Comparison[] = [];
    if (hasTraceCmd) {
      const pipe = term('/bin/sh', ['-c', `trace-cmd report ${trace} | less -S`]);
      const pipeFirst = await pipe.until((t) => /\d+\.\d{6}:/.test(t));
      const before = pipe.screen.text();
      pipe.type('G');
      const pipeEnd = await pipe.until((t) => t !== before && !t.includes('Waiting for data'));
      const pipeRss = rssMb(pipe.pid);
      await pipe.close();
      const less = term('/usr/bin/less', ['-S', text]);
      const lessFirst = await less.until((t) => /\d+\.\d{6}:/.test(t));
      const lj: number[] = [];
      for (let k = 0; k < 20; k++) {
        const b = less.screen.text();
        less.type('j');
        lj.push(await less.until((t) => t !== b));
      }
      const lb = less.screen.text();
      less.type('G');
      const lessEnd = await less.until((t) => t !== lb);
      const lessRss = rssMb(less.pid);
      await less.close();
      rows.push(
        {
          case: 'open 1 M events: first frame',
          ours: ms('evtrace-view', median(firsts)),
          peer: ms('trace-cmd report | less', pipeFirst),
          target: '< 2 s',
        },
        {
          case: 'open 1 M events: first frame',
          ours: ms('evtrace-view', median(firsts)),
          peer: ms('less on report text', lessFirst),
          target: '< 2 s',
        },
        {
          case: 'key j -> new frame',
          ours: ms('evtrace-view', median(jMs)),
          peer: ms('less j', median(lj)),
          target: '< 50 ms',
        },
        {
          case: 'jump to the last event (G)',
          ours: ms('evtrace-view', median(bigMs)),
          peer: ms('trace-cmd report | less G', pipeEnd),
          target: '< 50 ms',
        },
        {
          case: 'jump to the last event (G)',
          ours: ms('evtrace-view', median(bigMs)),
          peer: ms('less G on text', lessEnd),
          target: '< 50 ms',
        },
        {
          case: 'whole trace as text',
          ours: ms('evtrace-view first frame', median(firsts)),
          peer: ms('trace-cmd report > file', reportMs),
        },
      );
      printComparisons('evtrace-view on a 1 M-event trace.dat (ms per operation)', rows);
      process.stdout.write(
        `\nRSS: evtrace-view ${rss.toFixed(0)} MB (target < 400 MB); trace-cmd report | less ${pipeRss.toFixed(0)} MB; less on the text ${lessRss.toFixed(0)} MB\n`,
      );
    } else {
      process.stdout.write(
        `evtrace-view: first frame ${median(firsts).toFixed(0)} ms, j ${median(jMs).toFixed(1)} ms, jumps ${median(bigMs).toFixed(1)} ms, RSS ${rss.toFixed(0)} MB (trace-cmd not installed: no peer)\n`,
      );
    }

    datFirst = median(firsts);
    datJ = median(jMs);
  }

  if (!scaleOnly && !liveOnly) {
    // CTF: the same trace shape in 4 stream files, indexed progressively.
    process.stdout.write(`\nbuilding a ${EVENTS.toLocaleString('en-US')}-event CTF trace…\n`);
    mkdirSync(join(dir, 'ctf'));
    const ctf = await largeCtfTrace(join(dir, 'ctf'), EVENTS);
    const c = await measureViewer(ctf);
    const ctfRows: Comparison[] = [
      {
        case: 'CTF 1 M events: first frame',
        ours: ms('evtrace-view CTF', c.first),
        peer: ms('evtrace-view trace.dat', datFirst),
        target: '< 2 s',
      },
      {
        case: 'CTF key j -> new frame, while indexing',
        ours: ms('evtrace-view CTF', c.j),
        peer: ms('evtrace-view trace.dat', datJ),
        target: '< 50 ms',
      },
    ];
    ctfRows.push({
      case: 'CTF key j -> new frame, indexed',
      ours: ms('evtrace-view CTF', c.jAfter),
      peer: ms('evtrace-view trace.dat', datJ),
      target: '< 50 ms',
    });
    const hasBabeltrace = spawnSync('babeltrace2', ['--version']).error === undefined;
    if (hasBabeltrace) {
      const bt = term('/bin/sh', ['-c', `babeltrace2 ${ctf} | less -S`]);
      const btFirst = await bt.until((t) => /kmem:kmalloc/.test(t));
      await bt.close();
      const t0 = performance.now();
      spawnSync('sh', ['-c', `babeltrace2 ${ctf} > /dev/null`]);
      const btAll = performance.now() - t0;
      ctfRows.push(
        {
          case: 'CTF 1 M events: first frame',
          ours: ms('evtrace-view CTF', c.first),
          peer: ms('babeltrace2 | less', btFirst),
          target: '< 2 s',
        },
        {
          case: 'CTF: whole trace read',
          ours: ms('evtrace-view indexed', c.indexed),
          peer: ms('babeltrace2 > /dev/null', btAll),
        },
      );
    }
    // With --ctf the trace.dat part did not run: its rows have no peer figure to print.
    printComparisons(
      'evtrace-view on a 1 M-event CTF trace (ms per operation)',
      ctfOnly ? ctfRows.filter((r) => !r.peer?.name.includes('trace.dat')) : ctfRows,
    );
    process.stdout.write(
      `CTF: first frame ${c.first.toFixed(0)} ms, key j ${c.j.toFixed(1)} ms while indexing and ${c.jAfter.toFixed(1)} ms after (target < 50 ms), whole trace indexed after ${c.indexed.toFixed(0)} ms, jumps ${c.jumps.toFixed(1)} ms, RSS ${c.rss.toFixed(0)} MB (target < 400 MB)${hasBabeltrace ? '' : '; babeltrace2 not installed: no peer'}\n`,
    );
  }

  // The embedded path: the demo at 100 000 events/s drawn by the real app for 5 s.
  const demo = await startDemoSource({ rate: 100_000 });
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const app = render(createElement(App, { source: demo, views: VIEWS, size: { columns: COLS, rows: ROWS } }));
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, 5000));
  const shownWhileRunning = demo.stats().total;
  const seconds = (performance.now() - t0) / 1000;
  const { produced } = await demo.stop();
  delay.disable();
  const shown = demo.stats().total;
  app.unmount();
  await demo.close();
  const embedded =
    `live demo at 100 000 events/s asked, drawn for ${seconds.toFixed(1)} s: produced ${produced.toLocaleString('en-US')} ` +
    `(${Math.round(produced / seconds).toLocaleString('en-US')}/s), received by the viewer ${shown.toLocaleString('en-US')} ` +
    `(${produced - shown} missing), ${shownWhileRunning.toLocaleString('en-US')} while drawing; lost ${demo.stats().lost}; ` +
    `drawing thread event-loop delay p50 ${(delay.percentile(50) / 1e6).toFixed(1)} ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms`;
  process.stdout.write(`\n${embedded}\n`);

  // The agent's path: a live kernel session through the agent's socket into the built viewer, beside the embedded demo.
  const unavailable = agentLiveUnavailable();
  if (unavailable !== undefined) process.stdout.write(`\nlive over the agent: not measured (${unavailable})\n`);
  else {
    mkdirSync(join(dir, 'agent'));
    const live = await measureAgentLive(join(dir, 'agent'), 100_000, 8, { cols: COLS, rows: ROWS });
    const n = (v: number) => Math.round(v).toLocaleString('en-US');
    process.stdout.write(
      `\nlive over the agent (a kernel session of getppid calls, evtrace-view --session in a pseudo-terminal): ` +
        `${n(live.askedPerSec)} events/s asked for ${live.seconds} s, ${n(live.generated)} made (${n(live.generatedPerSec)}/s); ` +
        `the session recorded ${n(live.produced)} and lost ${n(live.sessionLost)}; ` +
        `the viewer received ${n(live.received)} (${n(live.receivedPerSec)}/s while they came, all shown ${n(live.drainMs)} ms after the last was made), ` +
        `lost ${n(live.queueLost)} in the agent's queue for it and ${n(live.viewerLost)} in the viewer; ` +
        `frames/s median ${live.fps}, lowest ${live.fpsMin}; ` +
        `RSS ${live.rssStart.toFixed(0)} MB after 1 s, at most ${live.rssMax.toFixed(0)} MB\n` +
        `beside the embedded path: ${embedded}\n`,
    );
  }

  if (!liveOnly) {
    // 10 M events in a trace.dat.
    const large = 10_000_000;
    process.stdout.write(`\nbuilding a ${large.toLocaleString('en-US')}-event trace.dat…\n`);
    mkdirSync(join(dir, 'large'));
    const big = await largeTrace(join(dir, 'large'), large);
    const b = await measureViewer(big);
    process.stdout.write(
      `10 M events (trace.dat): first frame ${b.first.toFixed(0)} ms (target <= 2 s), key j ${b.j.toFixed(1)} ms ` +
        `(target <= 50 ms), jumps ${b.jumps.toFixed(1)} ms, RSS ${b.rss.toFixed(0)} MB (target <= 400 MB)\n`,
    );
  }
  process.stdout.write(
    `load average: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')} on ${(await import('node:os')).cpus().length} cores\n`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
