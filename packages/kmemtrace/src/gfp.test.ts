import { readFileSync } from 'node:fs';
import { parseFormatFile } from '@evtrace/trace-format';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BUILTIN_GFP_TABLE, evaluate, gfpNames, gfpValue, parseGfpTable } from './gfp.ts';
import { tracefsMount } from './testing/env.ts';
import { gfpTableOf } from './tracepoints.ts';

const mount = tracefsMount();
const why = mount === undefined ? 'tracefs is not mounted' : process.getuid?.() !== 0 ? 'not root' : '';

describe('gfp flag expressions', () => {
  it('evaluates the constant C expressions of print fmt tables', () => {
    expect(evaluate('( unsigned long)((( gfp_t)((((1UL))) << (5)))|(( gfp_t)((((1UL))) << (11))))')).toBe(0x820n);
    expect(evaluate('(( gfp_t)(((((1UL))) << (10))|((((1UL))) << (11)))) & ~(( gfp_t)((((1UL))) << (10)))')).toBe(
      0x800n,
    );
    expect(evaluate('0x10u + 2 - 1')).toBe(17n);
    expect(evaluate('1 << 70')).toBe(0n);
    expect(evaluate('REC->x')).toBeUndefined();
    expect(evaluate('(1')).toBeUndefined();
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (s) => {
        const v = evaluate(s);
        expect(v === undefined || (v >= 0n && v < 1n << 64n)).toBe(true);
      }),
    );
  });

  it('names flags as the kernel does: composites first, leftovers in hex, none for 0', () => {
    expect(gfpNames(0xcc0)).toBe('GFP_KERNEL');
    expect(gfpNames(0xcc0 | 0x100)).toBe('GFP_KERNEL|__GFP_ZERO');
    expect(gfpNames(0x400cc0)).toBe('GFP_KERNEL_ACCOUNT');
    expect(gfpNames(0x820)).toBe('GFP_ATOMIC');
    expect(gfpNames(0x200)).toBe('0x200');
    expect(gfpNames(0)).toBe('none');
    // Corrupt input (a mutated JSON event): named, never turned into bits or thrown on.
    expect(gfpNames(-5e-324)).toBe('invalid (-5e-324)');
    expect(gfpNames(1.5)).toBe('invalid (1.5)');
    expect(gfpNames(-1n)).toBe('invalid (-1)');
    expect(gfpValue('GFP_KERNEL|__GFP_ZERO')).toBe(0xdc0);
    expect(gfpValue('GFP_NOWAIT|0x40000000')).toBe(0x2800 | 0x40000000);
    expect(gfpValue('GFP_BOGUS')).toBeUndefined();
  });
});

describe.skipIf(why !== '')(`the kernel's own table${why ? ` (skipped: ${why})` : ''}`, () => {
  it('is parsed from the real kmalloc format file and agrees with the built-in table on this kernel', () => {
    const text = readFileSync(`${mount}/events/kmem/kmalloc/format`, 'utf8');
    const cls = parseFormatFile(text, { system: 'kmem' });
    const table = gfpTableOf([cls]);
    expect(table).toBeDefined();
    expect(table!.length).toBeGreaterThan(20);
    expect(table).toEqual(parseGfpTable(cls.printFormat!));
    expect(table!.find(([, n]) => n === 'GFP_KERNEL')?.[0]).toBe(0xcc0n);
    // Every single flag and every composite, alone and with __GFP_ZERO: the same names from both tables.
    const values = [...table!.map(([m]) => Number(m)), ...table!.map(([m]) => Number(m) | 0x100), 0x1ffffff];
    for (const v of values) expect(gfpNames(v, BUILTIN_GFP_TABLE), `0x${v.toString(16)}`).toBe(gfpNames(v, table));
  });
});
