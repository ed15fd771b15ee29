/**
 * Text captures of every view for the README: the built evtrace-view in a pseudo-terminal on a demo recording (all
 * the demo's events, a kallsyms embedded for the branch addresses) and on a demo session of the real agent.
 *
 * Run: node apps/tui/scripts/captures.ts (after a build). Prints Markdown, one block per view.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEMO_EVENTS, recordDemo, writeTraceDatFromRawDir } from '@evtrace/tracefs';
import { startTestAgent } from '../src/testing/agent.ts';
import { type RunningViewer, startViewer } from '../src/testing/pty.ts';
import { tempDir } from '../src/testing/traces.ts';

const COLS = 110;
const ROWS = 24;
const KALLSYMS = [
  'ffffffff81a01200 T entry_SYSCALL_64',
  'ffffffff81a01240 T entry_SYSCALL_64_tail',
  'ffffffff81b2f0c0 T do_syscall_64',
  'ffffffff81c44e00 T __x64_sys_read',
  'ffffffff81c44f00 T ksys_read',
  'ffffffff81d0a7f0 T syscall_exit_to_user_mode',
  'ffffffff81d0a900 T exit_to_user_mode_loop',
];

const blocks: string[] = [];
const capture = (title: string, text: string) => blocks.push(`**${title}**\n\n\`\`\`text\n${text.trimEnd()}\n\`\`\`\n`);
const settle = () => new Promise((r) => setTimeout(r, 1500));

async function views(v: RunningViewer, keys: [string, string, string][]): Promise<void> {
  for (const [key, title, ready] of keys) {
    v.type(key);
    await v.waitFor(ready);
    await settle();
    capture(title, v.screen.text());
  }
}

const dir = tempDir('evtrace-view-captures-');
try {
  const raw = join(dir, 'raw');
  await recordDemo({ events: DEMO_EVENTS, dir: raw, durationMs: 400, rate: 4000, cpus: 2 });
  writeFileSync(join(raw, 'kallsyms'), `${KALLSYMS.join('\n')}\n`);
  const dat = join(dir, 'demo.dat');
  writeTraceDatFromRawDir(raw, dat);
  const v = startViewer([dat], { cols: COLS, rows: ROWS, env: { NO_COLOR: '1' } });
  await v.waitFor('[1 Events]');
  await settle();
  capture('1 Events (evtrace-view demo.dat)', v.screen.text());
  await views(v, [
    ['2', '2 CPUs', '[2 CPUs]'],
    ['4', '4 Branches', 'CALL HISTORY'],
    ['5', '5 Memory', '[5 Memory]'],
    ['6', '6 Hardware', '[6 Hardware]'],
  ]);
  v.type('q');
  await v.exited;

  mkdirSync(join(dir, 'agent'));
  const agent = await startTestAgent(join(dir, 'agent'), ['--demo-rate', '2000']);
  try {
    for (const name of ['flight', 'kmem']) {
      await agent.evtrace([
        'session',
        'create',
        name,
        '--events',
        'kmem:kmalloc,kmem:kfree',
        '--source',
        'demo',
        '--mode',
        'overwrite',
      ]);
      await agent.evtrace(['session', 'start', name]);
    }
    await agent.evtrace(['session', 'stop', 'kmem']);
    const a = startViewer(['--session', 'flight'], {
      cols: COLS,
      rows: ROWS,
      env: { NO_COLOR: '1', EVTRACE_AGENT_SOCKET: agent.socket },
    });
    await a.waitFor((t) => /demo-\w+-41\d\d/.test(t));
    a.type(' ');
    await a.waitFor('PAUSED');
    capture('1 Events, following the agent session `flight` (paused with space)', a.screen.text());
    a.type(' ');
    await views(a, [
      ['2', '2 CPUs (evtrace-view --session flight: the session ring buffers, sampled by the agent)', 'BUFFERS  the'],
      ['3', '3 Sessions (evtrace-view --session flight)', 'flight '],
    ]);
    a.type('q');
    await a.exited;
  } finally {
    await agent.stop();
  }
  process.stdout.write(blocks.join('\n'));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
