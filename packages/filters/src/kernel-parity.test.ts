import { readFileSync } from 'node:fs';
import { parseFormatFile } from '@evtrace/trace-format';
import { afterAll, describe, expect, it } from 'vitest';
import { FilterError, KERNEL_MESSAGES } from './errors.ts';
import { parseFilter } from './parser.ts';
import { machineCpuIds, machineSymbols } from './testing/machine.ts';
import { findTracefs, Instance } from './testing/tracefs.ts';

/** The corpus: expressions written to a real kernel, each compared with evtrace's verdict. */
const corpus = JSON.parse(readFileSync(new URL('../corpus/kernel-corpus.json', import.meta.url), 'utf8')) as {
  event: string;
  expr: string;
}[];

const { tracefs, why } = findTracefs();

describe('kernel corpus', () => {
  it('holds at least 150 expressions over every operator, field kind and error', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(150);
    const all = corpus.map((c) => c.expr).join('\n');
    for (const op of [
      '==',
      '!=',
      '<',
      '<=',
      '>',
      '>=',
      ' & ',
      '~',
      '&&',
      '||',
      '!',
      'CPUS{',
      '.function',
      'COMM',
      'CPU',
    ]) {
      expect(all).toContain(op);
    }
  });
});

describe.skipIf(!tracefs)(`parity with the running kernel${why ? ` (skipped: ${why})` : ''}`, () => {
  const instance = tracefs ? new Instance(tracefs, 'filters-parity') : undefined;
  afterAll(() => instance?.remove());
  const symbols = machineSymbols();
  const nrCpuIds = machineCpuIds();

  const classes = new Map<string, ReturnType<typeof parseFormatFile>>();
  const seen = new Set<string>();

  /** Writes each expression to the kernel and returns the disagreements with evtrace. */
  function compare(entries: readonly { event: string; expr: string }[]): { mismatches: string[]; accepted: number } {
    const mismatches: string[] = [];
    let accepted = 0;
    for (const { event, expr } of entries) {
      let eventClass = classes.get(event);
      if (eventClass === undefined) {
        const file = instance!.file('events', event, 'format');
        eventClass = parseFormatFile(readFileSync(file, 'utf8'), { file, system: event.split('/')[0]! });
        classes.set(event, eventClass);
      }
      const kernel = instance!.tryFilter(event, expr);
      let ours: { ok: boolean; message?: string; column?: number; code?: string };
      try {
        parseFilter(expr, eventClass, { ...(symbols ? { symbols } : {}), ...(nrCpuIds ? { nrCpuIds } : {}) });
        ours = { ok: true };
      } catch (error) {
        if (!(error instanceof FilterError)) throw error;
        ours = { ok: false, message: error.message, column: error.column, code: error.code };
      }
      if (kernel.ok) accepted++;
      if (kernel.message !== undefined) seen.add(kernel.message);
      const same =
        kernel.ok === ours.ok &&
        (kernel.ok ||
          (kernel.message === undefined
            ? ours.code === 'ERR_FILTER_LIMIT'
            : kernel.message === ours.message && kernel.column === ours.column));
      if (!same) {
        mismatches.push(
          `${event} ${JSON.stringify(expr.length > 80 ? `${expr.slice(0, 80)}…` : expr)}: kernel ${JSON.stringify(kernel)} evtrace ${JSON.stringify(ours)}`,
        );
      }
    }
    return { mismatches, accepted };
  }

  it('accepts and rejects every corpus expression as the kernel does, with the same message and caret', () => {
    const { mismatches, accepted } = compare(corpus);
    console.log(
      `kernel parity (corpus): ${corpus.length - mismatches.length}/${corpus.length} agree (${accepted} accepted)`,
    );
    expect(mismatches).toEqual([]);
    // Every parse error the kernel can give for a trace event appeared at least once.
    const all = Object.values(KERNEL_MESSAGES);
    expect(all.filter((m) => !seen.has(m))).toEqual([]);
  });

  it('agrees on 400 generated expressions (seeded)', () => {
    const generated = generate(400, 20261122);
    const { mismatches, accepted } = compare(generated);
    console.log(
      `kernel parity (generated): ${generated.length - mismatches.length}/${generated.length} agree (${accepted} accepted)`,
    );
    expect(mismatches).toEqual([]);
  });
});

/**
 * Well-formed-looking expressions over kmalloc and sched_switch built from a seeded generator: right and wrong fields,
 * operators, literals and types, nested with && || ! and parentheses. No trailing operators: the kernel's compiler
 * mishandles some of those (reading before its array), which the curated corpus avoids too.
 */
function generate(count: number, seed: number): { event: string; expr: string }[] {
  let x = seed >>> 0;
  const rnd = (n: number) => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return (x >>> 8) % n;
  };
  const pick = <T>(a: readonly T[]): T => a[rnd(a.length)]!;
  const fields = {
    'kmem/kmalloc': [
      'bytes_req',
      'node',
      'gfp_flags',
      'call_site',
      'common_pid',
      'common_flags',
      'CPU',
      'COMM',
      'comm',
      'stacktrace',
      'nope',
      'Node',
    ],
    'sched/sched_switch': [
      'prev_comm',
      'next_comm',
      'prev_pid',
      'prev_state',
      'next_prio',
      'CPU',
      'COMM',
      'prev',
      'common_type',
    ],
  } as const;
  const ops = ['==', '!=', '<', '<=', '>', '>=', '&', '~', '=', '=>', '<>', '!~', ''];
  const values = [
    '0',
    '1',
    '42',
    '-1',
    '-0x10',
    '0x7f',
    '0777',
    '09',
    '0x',
    '18446744073709551615',
    '18446744073709551616',
    '12ab',
    '1.5',
    '"bash"',
    "'kworker*'",
    '"*sh"',
    '"*orker*"',
    '"[a-z]?*"',
    '"!swapper*"',
    '""',
    '"unterminated',
    'bash',
    'CPUS{0}',
    'CPUS{0-1}',
    'CPUS{1,0}',
    'CPUS{}',
    'CPUS{9}',
    'CPUS{x}',
    '(1)',
    '',
  ];
  const out: { event: string; expr: string }[] = [];
  while (out.length < count) {
    const event = pick(Object.keys(fields) as (keyof typeof fields)[]);
    const strings = new Set(['prev_comm', 'next_comm', 'COMM', 'comm']);
    const good = () => {
      const f = pick(fields[event].filter((n) => n !== 'nope' && n !== 'Node' && n !== 'prev' && n !== 'stacktrace'));
      if (strings.has(f)) {
        return `${f} ${pick(['==', '!=', '~'])} ${pick(['"bash"', "'kworker*'", '"*sh"', '"*orker*"', '"[a-z]?*"', '"!swapper*"', '""'])}`;
      }
      if (f === 'CPU' && rnd(2)) return `CPU ${pick(['==', '!=', '&'])} ${pick(['CPUS{0}', 'CPUS{0-1}', 'CPUS{1,0}'])}`;
      return `${f} ${pick(['==', '!=', '<', '<=', '>', '>=', '&'])} ${pick(['0', '1', '42', '0x7f', '0777', '255'])}`;
    };
    const pred = () => (rnd(10) < 7 ? good() : `${pick(fields[event])} ${pick(ops)} ${pick(values)}`.trim());
    const expr = (depth: number): string => {
      const r = rnd(depth > 2 ? 2 : 6);
      if (r < 2) return pred();
      if (r === 2) return `(${expr(depth + 1)})`;
      if (r === 3) return `!${rnd(2) ? ' ' : ''}${expr(depth + 1)}`;
      return `${expr(depth + 1)} ${rnd(8) ? pick(['&&', '||']) : pick(['&', '|', ''])} ${expr(depth + 1)}`;
    };
    const text = expr(0);
    // Skip sequences the kernel itself cannot compile (see the curated corpus note).
    if (/(&&|\|\|)\s*$/.test(text)) continue;
    out.push({ event, expr: text });
  }
  return out;
}
