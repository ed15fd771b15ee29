import { readFileSync } from 'node:fs';
import { Kallsyms } from '@evtrace/trace-format';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BranchList } from './branch.ts';
import { Symbolizer } from './symbols.ts';

describe('Symbolizer', () => {
  const s = new Symbolizer()
    .addSymbol('a', 0x1000n, 0x20n)
    .addSymbol('b', 0x1040n, 0n) // unsized: up to the next symbol
    .addSymbol('c', 0x1080n, 0x10n)
    .setKallsyms(Kallsyms.parse('ffffffff81000000 T start_kernel\nffffffff81000100 T do_exit\n'));

  it('finds the containing symbol, leaves gaps and addresses outside every symbol unknown', () => {
    expect(s.format(0, 0x1000)).toBe('a');
    expect(s.format(0, 0x101f)).toBe('a+0x1f');
    expect(s.format(0, 0x1020)).toBeUndefined(); // past a's size, before b
    expect(s.format(0, 0x107f)).toBe('b+0x3f');
    expect(s.format(0, 0x1090)).toBeUndefined();
    expect(s.format(0, 0xfff)).toBeUndefined();
    expect(s.format(0xffffffff, 0x81000104)).toBe('do_exit+0x4');
    expect(s.lookup(0xffffffff, 0x81000004)).toEqual({ name: 'start_kernel', offset: 4, source: 'kallsyms' });
  });

  it('resolve() agrees with lookup() on every address, whatever the order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0xf00, max: 0x10a0 }), fc.integer({ min: 0xf00, max: 0x10a0 }))),
        (pairs) => {
          const list = new BranchList();
          for (const [f, t] of pairs) list.push(0, f, 0, t);
          const { from, to } = s.resolve(list);
          for (let i = 0; i < list.length; i++) {
            expect(from[i] === -1 ? undefined : s.nameAt(from[i]!)).toBe(s.lookup(0, pairs[i]![0])?.name);
            expect(to[i] === -1 ? undefined : s.nameAt(to[i]!)).toBe(s.lookup(0, pairs[i]![1])?.name);
          }
        },
      ),
    );
  });
});

describe('kernel addresses through kallsyms', () => {
  let text = '';
  try {
    text = readFileSync('/proc/kallsyms', 'utf8');
  } catch {}
  const first = /^([0-9a-f]{16}) [tT] (\S+)$/m.exec(text);
  const why =
    first === null
      ? 'no readable /proc/kallsyms'
      : /^0+$/.test(first[1]!)
        ? 'kallsyms addresses hidden (not root)'
        : '';

  it.skipIf(why !== '')(`names real kernel functions from /proc/kallsyms${why ? ` (skipped: ${why})` : ''}`, () => {
    const s = new Symbolizer().setKallsyms(Kallsyms.parse(text));
    const line = /^([0-9a-f]{16}) T (schedule|do_exit|vfs_read)$/m.exec(text)!;
    const addr = BigInt(`0x${line[1]}`);
    const hi = Number(addr >> 32n);
    const lo = Number(addr & 0xffffffffn);
    expect(s.format(hi, lo)).toBe(line[2]);
    expect(s.format(hi, lo + 1)).toBe(`${line[2]}+0x1`);
  });
});

describe('call history over kernel addresses named by kallsyms', () => {
  it('a branch to a kallsyms function start is a call, a branch back into the caller a return', async () => {
    const { callHistory } = await import('./analyses.ts');
    const k = Kallsyms.parse('ffffffff81000000 T outer\nffffffff81000100 T inner\nffffffff81000200 T leaf\n');
    const s = new Symbolizer().setKallsyms(k);
    const list = new BranchList();
    list.add(0xffffffff81000010n, 0xffffffff81000100n); // outer -> inner (entry)
    list.add(0xffffffff81000110n, 0xffffffff81000200n); // inner -> leaf (entry)
    list.add(0xffffffff81000210n, 0xffffffff81000114n); // leaf -> back into inner
    list.add(0xffffffff81000120n, 0xffffffff81000014n); // inner -> back into outer
    expect(callHistory(list, s).map((x) => [x.level, x.name])).toEqual([
      [0, 'outer'],
      [1, 'inner'],
      [2, 'leaf'],
      [1, 'inner'],
      [0, 'outer'],
    ]);
  });
});
