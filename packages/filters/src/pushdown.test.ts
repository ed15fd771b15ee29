import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileRecordFilter } from './compile.ts';
import { parseFilter } from './parser.ts';
import { planPushDown } from './pushdown.ts';
import { encodeRecord, fixtureClass } from './testing/fixtures.ts';
import { findTracefs, Instance } from './testing/tracefs.ts';

const kmalloc = fixtureClass('kmem/kmalloc');
const rcu = fixtureClass('rcu/rcu_utilization');

describe('planPushDown', () => {
  it('sends the whole filter to the kernel when it fits', () => {
    const plan = planPushDown(parseFilter('bytes_req > 8 && (node == 0 || CPU == 1) && COMM ~ "ab*"', kmalloc));
    expect(plan.kernel).toBe('bytes_req > 8 && (node == 0 || CPU == 1) && COMM ~ "ab*"');
    expect(plan.userSpace).toBeUndefined();
    expect(plan.needs).toEqual({ comm: false, cpu: false, symbols: false });
  });

  it('keeps the terms over the byte budget for user space and says what they need', () => {
    const plan = planPushDown(parseFilter('bytes_req > 8 && COMM == "x" && CPU != 0', kmalloc), { maxBytes: 20 });
    expect(plan.kernel).toBe('bytes_req > 8');
    expect(plan.userSpace).toBe('COMM == "x" && CPU != 0');
    expect(plan.needs).toEqual({ comm: true, cpu: true, symbols: false });
    expect(plan.notes).toHaveLength(2);
  });

  it('always pushes what user space cannot read from a recording (char * strings)', () => {
    const plan = planPushDown(parseFilter('s == "Start scheduler-tick" && common_pid > 0', rcu), { maxBytes: 10 });
    expect(plan.kernel).toBe('s == "Start scheduler-tick"');
    expect(plan.userSpace).toBe('common_pid > 0');
  });

  it('preserves the meaning: kernel part && user part selects what the whole filter selects', () => {
    const term = fc
      .tuple(fc.constantFrom('bytes_req', 'node', 'gfp_flags'), fc.constantFrom('==', '!=', '<', '>=', '&'), fc.nat(64))
      .map(([f, op, v]) => `${f} ${op} ${v}`);
    const group = fc
      .array(term, { minLength: 1, maxLength: 3 })
      .map((ts) => (ts.length > 1 ? `(${ts.join(' || ')})` : ts[0]!));
    fc.assert(
      fc.property(
        fc.array(group, { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 10, max: 80 }),
        fc.array(fc.record({ bytes_req: fc.nat(70), node: fc.integer({ min: -1, max: 3 }), gfp_flags: fc.nat(255) }), {
          minLength: 1,
          maxLength: 10,
        }),
        (groups, maxBytes, records) => {
          const whole = parseFilter(groups.join(' && '), kmalloc);
          const plan = planPushDown(whole, { maxBytes });
          const all = compileRecordFilter(whole, kmalloc);
          const k = plan.kernel === undefined ? () => true : compileRecordFilter(plan.kernel, kmalloc);
          const u = plan.userSpace === undefined ? () => true : compileRecordFilter(plan.userSpace, kmalloc);
          for (const r of records) {
            const v = encodeRecord(kmalloc, r);
            expect(k(v, 0, v.byteLength, 0) && u(v, 0, v.byteLength, 0)).toBe(all(v, 0, v.byteLength, 0));
          }
          if (plan.kernel !== undefined)
            expect(new TextEncoder().encode(plan.kernel).length).toBeLessThanOrEqual(maxBytes);
        },
      ),
      { numRuns: 300 },
    );
  });
});

const { tracefs, why } = findTracefs();
describe.skipIf(!tracefs)(`push-down against the kernel${why ? ` (skipped: ${why})` : ''}`, () => {
  it('writes kernel parts the kernel accepts', () => {
    const instance = new Instance(tracefs!, 'filters-push');
    try {
      const whole = parseFilter(
        `!(bytes_req < 64 || node == 1) && ${Array.from({ length: 150 }, (_, i) => `bytes_alloc != ${i}`).join(' && ')}`,
        kmalloc,
      );
      for (const maxBytes of [100, 1000, 4095]) {
        const plan = planPushDown(whole, { maxBytes });
        expect(instance.tryFilter('kmem/kmalloc', plan.kernel!)).toEqual({ ok: true });
      }
    } finally {
      instance.remove();
    }
  });
});
