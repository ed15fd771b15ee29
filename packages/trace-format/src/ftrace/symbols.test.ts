import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Kallsyms } from './symbols.ts';

const TEXT = [
  'ffffffff81000000 T _stext',
  'ffffffff81000000 T _text',
  'ffffffff81000100 t dup',
  'ffffffff81000200 D some_data',
  'ffffffff81000300 T after_data',
  'ffffffff81000400 t dup',
  'ffffffffc0000000 t dup\t[mod_a]',
  'ffffffffc0000100 T only_in_module\t[mod_a]',
  'ffffffffc0000080 T unsorted\t[mod_b]',
  '0000000000000000 T zero_address',
  '1ffffffffffffffff T beyond_64_bits',
  'garbage line',
  'ffffffffc0000200 b last_bss\t[mod_a]',
].join('\n');

describe('Kallsyms', () => {
  const text = Kallsyms.parse(TEXT);
  const all = Kallsyms.parse(TEXT, { types: 'all' });

  it('keeps functions only by default and every symbol with types: all', () => {
    expect(text.size).toBe(8);
    expect(all.size).toBe(10);
    expect(text.lookupName('some_data')).toBeUndefined();
    expect(all.lookupName('some_data')).toBe(0xffffffff81000200n);
    expect(all.lookupName('zero_address')).toBeUndefined();
    expect(all.lookupName('beyond_64_bits')).toBeUndefined();
  });

  it('resolves %pS over functions only, whichever symbols are kept', () => {
    for (const k of [text, all]) {
      expect(k.format(0xffffffff81000210n)).toBe('dup+0x110');
      expect(k.lookup(0xffffffff81000210n)).toEqual({ name: 'dup', offset: 0x110n, size: 0x200n });
      expect(k.lookup(0xffffffff81000000n)?.name).toBe('_text');
      expect(k.lookup(0xffffffffc0000090n)).toEqual({ name: 'unsorted', offset: 0x10n, size: 0x80n, module: 'mod_b' });
      expect(k.lookup(0xffffffffc0000300n)).toEqual({ name: 'only_in_module', offset: 0x200n, module: 'mod_a' });
      expect(k.format(0xffffffff80ffffffn)).toBeUndefined();
    }
  });

  it('looks names up as kallsyms_lookup_name: lowest address, core kernel before modules', () => {
    expect(all.lookupName('dup')).toBe(0xffffffff81000100n);
    expect(all.lookupName('only_in_module')).toBe(0xffffffffc0000100n);
    expect(all.lookupName('_stext')).toBe(0xffffffff81000000n);
    expect(all.lookupName('')).toBeUndefined();
    expect(all.lookupName('missing')).toBeUndefined();
    const moduleFirst = Kallsyms.parse('ffffffffc0000000 t f\t[m]\nffffffff81000000 t g\nffffffff82000000 t f\n', {
      types: 'all',
    });
    expect(moduleFirst.lookupName('f')).toBe(0xffffffff82000000n);
    // The first lookups scan the names, later ones a map of them: the same answers either way.
    for (let i = 0; i < 12; i++) {
      expect(moduleFirst.lookupName('f')).toBe(0xffffffff82000000n);
      expect(moduleFirst.lookupName('g')).toBe(0xffffffff81000000n);
      expect(moduleFirst.lookupName('h')).toBeUndefined();
    }
    // A name ends at a blank, even where the line goes on with something that is no module: a query with a blank in
    // it names nothing, scanned or mapped (found by the grammar property below).
    const trailing = Kallsyms.parse('a 0 0 x', { types: 'all' });
    for (let i = 0; i < 12; i++) {
      expect(trailing.lookupName('0')).toBe(0xan);
      expect(trailing.lookupName('0 x')).toBeUndefined();
    }
  });

  it('sizes a symbol up to the next symbol of any kept type', () => {
    expect(all.lookupRange(0xffffffff81000180n)).toEqual({ start: 0xffffffff81000100n, end: 0xffffffff81000200n });
    expect(text.lookupRange(0xffffffff81000180n)).toEqual({ start: 0xffffffff81000100n, end: 0xffffffff81000300n });
    expect(all.lookupRange(0xffffffff81000000n)).toEqual({ start: 0xffffffff81000000n, end: 0xffffffff81000100n });
    expect(all.lookupRange(0xffffffffc0000100n)).toEqual({ start: 0xffffffffc0000100n, end: 0xffffffffc0000200n });
    expect(all.lookupRange(0xffffffffc0000200n)).toBeUndefined();
    expect(all.lookupRange(0x1000n)).toBeUndefined();
    expect(Kallsyms.parse('').lookupRange(0xffffffff81000000n)).toBeUndefined();
  });

  it('never throws on mutated input', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'0123456789abcdefTtDw \t\n[]_x') }), (s) => {
        for (const k of [Kallsyms.parse(TEXT + s), Kallsyms.parse(s + TEXT, { types: 'all' })]) {
          const name = k.lookup(0xffffffff81000100n)?.name;
          if (name !== undefined) expect(k.lookupName(name)).toBeDefined();
          k.lookupRange(0xffffffff81000180n);
        }
      }),
    );
  });
});

let machine: string | undefined;
let why = '/proc/kallsyms shows real addresses only to root';
try {
  machine = readFileSync('/proc/kallsyms', 'utf8');
  if (/^0+ /.test(machine)) machine = undefined;
} catch (e) {
  why = `cannot read /proc/kallsyms: ${(e as Error).message}`;
}

describe.skipIf(machine === undefined)(
  `this machine's /proc/kallsyms${machine === undefined ? ` (skipped: ${why})` : ''}`,
  () => {
    it('parses every line and agrees with itself whichever symbols are kept', () => {
      const lines = machine!.split('\n').filter((l) => l !== '');
      const text = Kallsyms.parse(machine!);
      const bytes = Kallsyms.parse(Buffer.from(machine!, 'latin1'));
      expect(bytes.size).toBe(text.size);
      const all = Kallsyms.parse(machine!, { types: 'all' });
      expect(all.size).toBe(lines.length);
      expect(text.size).toBe(lines.filter((l) => /^\S+ [tTwW] /.test(l)).length);
      for (let i = 0; i < lines.length; i += 97) {
        const [hex, type, name] = lines[i]!.split(/\s+/);
        const addr = BigInt(`0x${hex}`);
        expect(all.format(addr + 1n)).toBe(text.format(addr + 1n));
        expect(bytes.lookup(addr + 1n)).toEqual(text.lookup(addr + 1n));
        expect(all.lookupName(name!)! <= addr).toBe(true);
        const range = all.lookupRange(addr);
        if (range !== undefined) expect(range.start).toBe(addr);
        if ('tTwW'.includes(type!)) expect(text.lookupName(name!)).toBeDefined();
      }
    });
  },
);

/**
 * The line grammar as a regular expression, the parser's first form: the scanner that replaced it must keep the same
 * symbols, in the same order, from any text.
 */
function reference(text: string, all: boolean): { addr: bigint; name: string; module?: string; fn: boolean }[] {
  const line = /([0-9a-fA-F]+)[^\S\n]+(\S)[^\S\n]+(\S+)(?:[^\S\n]+\[(\S+)\])?/y;
  const kept: { addr: bigint; name: string; module?: string; fn: boolean }[] = [];
  for (let start = 0; start < text.length; ) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    line.lastIndex = start;
    const m = line.exec(text);
    start = end + 1;
    if (m === null) continue;
    const fn = 'tTwW'.includes(m[2]!);
    const addr = BigInt(`0x${m[1]}`);
    if ((!all && !fn) || addr === 0n || addr > 0xffff_ffff_ffff_ffffn) continue;
    kept.push({ addr, name: m[3]!, ...(m[4] !== undefined ? { module: m[4] } : {}), fn });
  }
  return kept
    .map((s, i) => ({ s, i }))
    .sort((a, b) => (a.s.addr < b.s.addr ? -1 : a.s.addr > b.s.addr ? 1 : a.i - b.i))
    .map((x) => x.s);
}

/** Whether `k` keeps the symbols `reference` finds in `text`, in the same order, and answers every lookup as they do. */
function expectGrammar(k: Kallsyms, text: string, all: boolean, probes: bigint[]): void {
  const want = reference(text, all);
  expect(k.size).toBe(want.length);
  const fns = want.filter((s) => s.fn);
  for (const s of want) expect(k.lookupRange(s.addr)?.start ?? s.addr).toBe(s.addr);
  for (const name of want.flatMap((s) => [s.name, s.name.slice(0, -1), `${s.name} x`, `${s.name}\t[m]`])) {
    const core = want.find((x) => x.name === name && x.module === undefined);
    expect(k.lookupName(name)).toBe((core ?? want.find((x) => x.name === name))?.addr);
  }
  for (const addr of [...probes, ...want.map((s) => s.addr + 1n)]) {
    let at = -1;
    for (let i = 0; i < fns.length && fns[i]!.addr <= addr; i++) at = i;
    const f = fns[at];
    const next = fns[at + 1];
    expect(k.lookup(addr)).toEqual(
      f === undefined
        ? undefined
        : {
            name: f.name,
            offset: addr - f.addr,
            ...(next !== undefined ? { size: next.addr - f.addr } : {}),
            ...(f.module !== undefined ? { module: f.module } : {}),
          },
    );
  }
}

describe('Kallsyms.parse against the line grammar', () => {
  const hex = fc.stringMatching(/^[0-9a-fA-F]{1,18}$/);
  const lines = (blank: fc.Arbitrary<string>, word: fc.Arbitrary<string>, other: string) => {
    const symbolLine = fc
      .tuple(
        hex,
        blank,
        fc.constantFrom('t', 'T', 'w', 'W', 'd', 'b', 'x'),
        blank,
        word,
        fc.option(fc.tuple(blank, word)),
      )
      .map(([a, b1, t, b2, n, m]) => `${a}${b1}${t}${b2}${n}${m === null ? '' : `${m[0]}[${m[1]}`}`);
    return fc.array(fc.oneof(symbolLine, symbolLine, fc.string({ unit: fc.constantFrom(...other) })), {
      maxLength: 30,
    });
  };
  const probes = fc.array(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }));

  it('keeps the same symbols in the same order, whichever types are kept', () => {
    const blank = fc.constantFrom(' ', '\t', '  ', ' \t', '\r', '\u00a0', '\u2003');
    fc.assert(
      fc.property(lines(blank, fc.stringMatching(/^[a-z_.\][0-9$]{0,8}$/), '0af \t[]x\r'), probes, (lines, probes) => {
        const text = lines.join('\n');
        for (const all of [false, true])
          expectGrammar(Kallsyms.parse(text, { types: all ? 'all' : 'text' }), text, all, probes);
      }),
    );
  });

  it('reads bytes as the latin1 text they encode', () => {
    // Every byte a character: whitespace beyond ASCII (0xa0), and characters beyond it in names.
    const blank = fc.constantFrom(' ', '\t', '\v', '\f', '\r', '\u00a0', ' \u00a0');
    const word = fc.stringMatching(/^[a-z_.\][\u0080-\u00ff]{0,8}$/);
    fc.assert(
      fc.property(lines(blank, word, '0af \t[]x\r\u00a0\u00e9\u0085'), probes, (lines, probes) => {
        const text = lines.join('\n');
        const bytes = Buffer.from(text, 'latin1');
        for (const all of [false, true])
          expectGrammar(Kallsyms.parse(bytes, { types: all ? 'all' : 'text' }), text, all, probes);
      }),
    );
  });

  it('reads bytes within a larger buffer from their own first byte', () => {
    const text = 'ffffffff81000000 T first\nffffffff81000100 t second\t[mod]\n';
    const around = Buffer.from(`xx\n${text}ffffffff82000000 T beyond`, 'latin1');
    const k = Kallsyms.parse(around.subarray(3, 3 + text.length));
    expect(k.size).toBe(2);
    expect(k.lookup(0xffffffff81000104n)).toEqual({ name: 'second', offset: 4n, module: 'mod' });
    expect(k.format(0xffffffff81000010n)).toBe('first+0x10');
    expect(k.lookupName('second')).toBe(0xffffffff81000100n);
  });
});
