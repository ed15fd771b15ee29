import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ByteNames, hashBytes } from './names.ts';

describe('ByteNames', () => {
  it('property: one dense id per distinct byte string, wherever its bytes lie, and its text back', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'grapheme', maxLength: 40 }), { minLength: 1, maxLength: 700 }),
        (texts) => {
          const names = new ByteNames();
          const ids = new Map<string, number>();
          for (const text of texts) {
            // Each text inside a larger buffer, at an offset, as a parser meets it in a line.
            const bytes = Buffer.from(`<<${text}>>`, 'utf8');
            const view = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
            const id = names.id(view, 2, view.length - 2);
            expect(names.id(view, 2, view.length - 2, hashBytes(view, 2, view.length - 2))).toBe(id);
            const known = ids.get(text);
            if (known === undefined) {
              expect(id).toBe(ids.size);
              ids.set(text, id);
            } else expect(id).toBe(known);
          }
          expect(names.size).toBe(ids.size);
          for (const [text, id] of ids) expect(names.text(id)).toBe(text);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('the empty string and names sharing a prefix are distinct ids', () => {
    const names = new ByteNames();
    const bytes = new Uint8Array(Buffer.from('kfree kfree_x'));
    const empty = names.id(bytes, 0, 0);
    const kfree = names.id(bytes, 0, 5);
    const longer = names.id(bytes, 6, 13);
    expect(new Set([empty, kfree, longer]).size).toBe(3);
    expect(names.id(bytes, 6, 11)).toBe(kfree);
    expect(names.id(bytes, 3, 3)).toBe(empty);
    expect([names.text(empty), names.text(kfree), names.text(longer)]).toEqual(['', 'kfree', 'kfree_x']);
  });
});
