/**
 * The Events view's layout and navigation in a real pseudo-terminal, at the smallest supported size (80x24) and a
 * large one (200x60): columns that fit, values as `evtrace cat` prints them (cat itself is the judge), horizontal
 * scroll, the typed detail pane, search, the ftrace filter with readline keys, go-to-time, marks, the timeline,
 * columns chosen and remembered, the help, and the tabs of views with nothing to show left out.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { recordDemo, writeTraceDatFromRawDir } from '@evtrace/tracefs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_CLI } from './testing/agent.ts';
import { startViewer } from './testing/pty.ts';
import { tempDir } from './testing/traces.ts';

const dir = tempDir('evtrace-view-nav-');
let trace: string;
/** `evtrace cat`'s lines for the trace, split into time, event and body. */
let cat: { time: string; event: string; body: string }[];

/** Symbols for the demo's kernel text addresses, embedded in the trace as trace-cmd record embeds them. */
const KALLSYMS = [
  [0xffffffff81a01200n, 'entry_syscall'],
  [0xffffffff81b2f000n, 'do_work'],
  [0xffffffff81c44e00n, 'helper_fn'],
  [0xffffffff81d0a700n, 'leave_fn'],
  [0xffffffff81e00000n, 'text_end'],
] as const;

beforeAll(async () => {
  const raw = join(dir, 'raw');
  await recordDemo({ events: ['kmem:*', 'sched:*'], dir: raw, durationMs: 300, rate: 20_000, cpus: 2 });
  writeFileSync(join(raw, 'kallsyms'), KALLSYMS.map(([a, n]) => `${a.toString(16)} T ${n}\n`).join(''));
  trace = join(dir, 'demo.dat');
  writeTraceDatFromRawDir(raw, trace);
  const run = spawnSync(process.execPath, [AGENT_CLI, 'cat', trace, '-n', '400'], { encoding: 'utf8' });
  expect(run.status, run.stderr).toBe(0);
  cat = run.stdout
    .trimEnd()
    .split('\n')
    .map((l) => {
      const m = /\[\d+\] +(\d+\.\d{6}): (\S+):(.*)$/.exec(l)!;
      // trace-cmd pads `event:` to 21 columns, then one space.
      return { time: m[1]!, event: m[2]!, body: m[3]!.slice(Math.max(0, 20 - m[2]!.length) + 1) };
    });
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const rowsOf = (text: string) => text.split('\n').filter((l) => /^[ >AB]\d+\.\d{6} /.test(l));
const selectedRow = (text: string) => text.split('\n').find((l) => l.startsWith('>')) ?? '';

describe.each([
  [80, 24],
  [200, 60],
])('evtrace-view at %ix%i, in a pseudo-terminal', (cols, rows) => {
  const open = (env: Record<string, string> = {}) =>
    startViewer([trace], { cols, rows, env: { XDG_CONFIG_HOME: join(dir, `config-${cols}`), ...env } });

  it('fits the terminal, prints every value as evtrace cat does, scrolls the fields and shows them typed', async () => {
    const v = open();
    // The first screen once drawn whole: the same on two polls in a row (a frame can arrive in pieces).
    let previous = '';
    const text = await v.waitFor((t) => {
      const settled = t === previous && rowsOf(t).length > 5;
      previous = t;
      return settled;
    });
    for (const l of text.split('\n')) expect(l.length).toBeLessThanOrEqual(cols);
    const header = text.split('\n').find((l) => l.includes('FIELDS'))!;
    const fieldsAt = header.indexOf('FIELDS');
    // The fields column takes at least half the line.
    expect(cols - fieldsAt).toBeGreaterThanOrEqual(cols / 2);
    const shown = rowsOf(text);
    shown.forEach((row, i) => {
      const want = cat[i]!;
      expect(row.slice(1).startsWith(`${want.time} `), row).toBe(true);
      expect(row).toContain(` ${want.event}`.slice(0, 6));
      const cell = row.slice(fieldsAt).trimEnd();
      // What fits of cat's body, cut with an ellipsis when it does not.
      expect(cell.endsWith('…') ? want.body.startsWith(cell.slice(0, -1)) : cell === want.body.trimEnd(), cell).toBe(
        true,
      );
    });
    // cat names call sites with the trace's kallsyms; so does the viewer.
    expect(cat.some((c) => /call_site=(entry_syscall|do_work|helper_fn|leave_fn)\+0x/.test(c.body))).toBe(true);
    const first = cat[0]!;
    // Scroll the fields right: the header says by how much, the row shows the body from there.
    v.type('>');
    const scrolled = await v.waitFor((t) => /FIELDS \+\d+/.test(t));
    const by = Number(/FIELDS \+(\d+)/.exec(scrolled)![1]);
    const cell = selectedRow(scrolled).slice(fieldsAt).trimEnd();
    expect(cell.startsWith('«')).toBe(true);
    expect(first.body.slice(by + 1).startsWith(cell.slice(1).replace(/…$/, ''))).toBe(true);
    v.type('<');
    await v.waitFor((t) => !/FIELDS \+/.test(t));
    // The detail pane: every field with its C type, addresses in hex with their symbol.
    const kmalloc = cat.findIndex((c) => c.event === 'kmalloc');
    v.type(`${'j'.repeat(kmalloc)}\r`);
    // The pane's frame, once its fields are drawn (its title may come a frame before them on a loaded machine).
    const detail = await v.waitFor((t) => t.includes('Esc closes') && /\n {2}bytes_req /.test(t));
    expect(detail).toMatch(
      /\n {2}call_site +unsigned long +0xffffffff[0-9a-f]+ (entry_syscall|do_work|helper_fn|leave_fn)\+0x/,
    );
    expect(detail).toMatch(/\n {2}ptr +const void \* +0x[0-9a-f]+/);
    expect(detail).toMatch(/\n {2}bytes_req +size_t +\d+\n/);
    v.type('\x1b');
    await v.waitFor((t) => !t.includes('Esc closes'));
    // The tabs: no Branches or Hardware on a kmem trace; Memory keeps its number.
    const tabs = detail.split('\n')[0]!;
    expect(tabs).toContain('5 Memory');
    expect(tabs).not.toMatch(/Branches|Hardware/);
    v.type('q');
    expect((await v.exited).exitCode).toBe(0);
  });

  it('searches with / and n/N, filters with : and readline keys, goes to a time with t, marks A and B', async () => {
    const v = open();
    await v.waitFor((t) => rowsOf(t).length > 5);
    // Search: a regular expression over the whole line; n the next match, N the previous.
    const matches = cat.map((c, i) => (/demo-net:\d+ \[120\] [RS] ==>/.test(c.body) ? i : -1)).filter((i) => i >= 0);
    expect(matches.length).toBeGreaterThan(2);
    v.type('/demo-net:[0-9]+ .120. [RS] ==>\r');
    const at = (i: number) => (t: string) =>
      selectedRow(t).startsWith(`>${cat[i]!.time} `) && selectedRow(t).includes(cat[i]!.body.slice(0, 12));
    await v.waitFor(at(matches[0]!));
    v.type('n');
    await v.waitFor(at(matches[1]!));
    v.type('N');
    await v.waitFor(at(matches[0]!));
    // The filter box with readline keys: Ctrl-W drops the last word, Ctrl-A and Ctrl-E move, Ctrl-U clears.
    v.type(':garbage here\x15bytes_req > 1000 nonsense\x17\x01(\x05)');
    const ok = await v.waitFor((t) => t.includes(': (bytes_req > 1000 )') && t.includes('ok: applies to kmem:kmalloc'));
    expect(ok).not.toContain('garbage');
    // A wrong expression keeps its caret under the column the kernel's parser names.
    v.type('\x08\x08 &&& x');
    await v.waitFor((t) => t.includes(': (bytes_req > 1000 &&& x') && /\n {2,}\^/.test(t));
    v.type('\x15bytes_req > 1000\r');
    const filtered = await v.waitFor((t) => t.includes('filter: bytes_req > 1000 (') && rowsOf(t).length > 0);
    for (const row of rowsOf(filtered)) expect(row).toContain(' kmalloc ');
    v.type('\x1b');
    await v.waitFor('no filter');
    // Go to a time: the first event at or after it; g and G stay first and last.
    const target = cat[150]!;
    v.type(`t${target.time}\r`);
    await v.waitFor((t) => selectedRow(t).startsWith(`>${target.time} `));
    // Marks: A here, B forty events on, the delta between them shown.
    v.type('m');
    await v.waitFor(`A ${target.time}  (m marks B)`);
    const later = cat[190]!;
    v.type(`t${later.time}\rm`);
    const marked = await v.waitFor(/B-A/.test.bind(/B-A/));
    expect(marked).toContain(`A ${target.time}  B ${later.time}  B-A +`);
    v.type('G');
    await v.waitFor((t) => /events/.test(t) && selectedRow(t) !== '' && !selectedRow(t).startsWith(`>${later.time} `));
    v.type('g');
    await v.waitFor((t) => selectedRow(t).startsWith(`>${cat[0]!.time} `));
    // A time that is not one says so.
    v.type('tnoon\r');
    await v.waitFor('not a time: "noon"');
    v.type('q');
    expect((await v.exited).exitCode).toBe(0);
  });

  it('shows the per-CPU timeline with the selection and marks on it, and lists every key on ?', async () => {
    const v = open();
    await v.waitFor((t) => rowsOf(t).length > 5);
    // Shown at first where the view has room for it, toggled with T.
    if (rows < 30) v.type('T');
    const strip = await v.waitFor((t) => /\ncpu0 +\S/.test(t) && /\ncpu1 +\S/.test(t));
    expect(strip).toMatch(/\n.{7}\^/);
    v.type('m');
    await v.waitFor((t) => /\n.{7}[A]/.test(t));
    v.type('?');
    const help = await v.waitFor('evtrace-view keys');
    const keys: string[] = [help];
    // Scroll through the help with j until its last line is shown, if it does not fit.
    for (let k = 0; k < 40 && !keys.at(-1)!.includes('apply/cancel'); k++) {
      const before = v.screen.text();
      v.type('j');
      keys.push(await v.waitFor((t) => t !== before));
    }
    const all = keys.join('\n');
    for (const key of [
      'n/N',
      'go to time',
      'mark A, B',
      'timeline',
      'rate histogram',
      'scroll fields',
      'columns',
      'Ctrl-W',
      'Ctrl-U/K',
      'Ctrl-A/E',
    ])
      expect(all).toContain(key);
    v.type('x');
    await v.waitFor((t) => !t.includes('evtrace-view keys'));
    v.type('q');
    expect((await v.exited).exitCode).toBe(0);
  });

  it('lets the user choose and order the columns, and remembers them for the next start', async () => {
    const config = join(dir, `columns-${cols}`);
    const v = open({ XDG_CONFIG_HOME: config });
    await v.waitFor((t) => rowsOf(t).length > 5);
    // The chooser lists TIME CPU TASK EVENT FIELDS: hide TASK, move EVENT above CPU.
    v.type('c');
    await v.waitFor('COLUMNS:');
    v.type('jj jKK\r');
    const header = (await v.waitFor((t) => t.includes('TIME EVENT') || /TIME +EVENT +CPU/.test(t)))
      .split('\n')
      .find((l) => l.includes('FIELDS'))!;
    expect(header.trim().split(/\s+/)).toEqual(['TIME', 'EVENT', 'CPU', 'FIELDS']);
    expect(JSON.parse(readFileSync(join(config, 'evtrace', 'view.json'), 'utf8'))).toEqual({
      columns: ['time', 'event', 'cpu', 'fields'],
    });
    v.type('q');
    await v.exited;
    const again = open({ XDG_CONFIG_HOME: config });
    const text = await again.waitFor((t) => t.includes('FIELDS'));
    expect(
      text
        .split('\n')
        .find((l) => l.includes('FIELDS'))!
        .trim()
        .split(/\s+/),
    ).toEqual(['TIME', 'EVENT', 'CPU', 'FIELDS']);
    again.type('q');
    await again.exited;
  });
});

describe('evtrace-view without colour, in a pseudo-terminal', () => {
  it.each([
    ['NO_COLOR=1', { NO_COLOR: '1' }],
    ['TERM=dumb', { TERM: 'dumb' }],
  ])('draws the timeline, prompts and marks in plain text with %s', async (_, env) => {
    const v = startViewer([trace], { cols: 80, rows: 24, env: { XDG_CONFIG_HOME: join(dir, 'config-plain'), ...env } });
    await v.waitFor((t) => rowsOf(t).length > 5);
    v.type('Tm/kfree\r');
    const text = await v.waitFor((t) => /\ncpu0 +[ .:=+*#%-]*[.:=+*#%-]/.test(t) && selectedRow(t).includes('kfree'));
    // ASCII density and ruler only: no block characters a dumb terminal may not have.
    expect(text).not.toMatch(/[▁▂▃▄▅▆▇█─]/);
    expect(text).toContain(`A ${cat[0]!.time}`);
    expect(v.screen.colourSequences).toBe(0);
    v.type('q');
    expect((await v.exited).exitCode).toBe(0);
  });
});
