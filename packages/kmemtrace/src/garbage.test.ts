/**
 * Garbage is refused, never reported: random bytes and random text given as a kmem input end with a KmemError that
 * names the file and where (a byte offset, a line), and an empty or event-less input is refused.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { KmemError } from './errors.ts';
import { openKmemInput } from './inputs.ts';

const dir = mkdtempSync(join(tmpdir(), 'evtrace-kmem-garbage-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function file(bytes: Uint8Array | string): string {
  const path = join(dir, `input${n++}`);
  writeFileSync(path, bytes);
  return path;
}

function refusal(f: () => unknown): KmemError {
  try {
    f();
  } catch (error) {
    if (error instanceof KmemError) return error;
    throw error;
  }
  throw new Error('read as a kmem input');
}

describe('garbage given to kmem report', () => {
  it('random bytes: refused with the file and a byte offset or line, or as holding no kmem event', () => {
    fc.assert(
      fc.property(fc.noBias(fc.uint8Array({ minLength: 1, maxLength: 4096 })), (bytes) => {
        const path = file(bytes);
        const e = refusal(() => openKmemInput(path));
        expect(e.location.file).toBe(path);
        // Printable bytes are read as perf script text: with no kmem line at all, no one place is wrong.
        if (/: no kmem event/.test(e.message)) expect(e.code).toBe('ERR_KMEM_INPUT');
        else expect(e.location.offset ?? e.location.line).toBeTypeOf('number');
      }),
      { numRuns: 60 },
    );
  });

  it('random text lines: refused at a line and column, or as holding no kmem event', () => {
    const line = fc.stringMatching(/^[ -~]{0,80}$/);
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 30 }), (lines) => {
        const path = file(`${lines.join('\n')}\n`);
        const e = refusal(() => openKmemInput(path));
        expect(e.location.file).toBe(path);
        if (e.code === 'ERR_KMEM_PERF_SCRIPT') expect(e.location.line).toBeGreaterThan(0);
        else expect(e.message).toMatch(/: (no kmem event|empty)/);
      }),
      { numRuns: 60 },
    );
  });

  it('random bytes, lenient: never a crash; what is refused is still named', () => {
    fc.assert(
      fc.property(fc.noBias(fc.uint8Array({ minLength: 1, maxLength: 4096 })), (bytes) => {
        const path = file(bytes);
        try {
          const source = openKmemInput(path, { lenient: true });
          expect(source.diagnostics.length).toBeGreaterThan(0);
        } catch (error) {
          expect(error).toBeInstanceOf(KmemError);
          expect((error as KmemError).location.file).toBe(path);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('an empty file and a comment-only text are refused, saying what was expected', () => {
    const empty = file('');
    expect(refusal(() => openKmemInput(empty)).message).toBe(
      `${empty}: byte 0: empty: expected a trace of kmem events, perf script text of kmem events or kmemtrace relay records`,
    );
    const comments = file('# perf script\n\n# nothing else\n');
    expect(refusal(() => openKmemInput(comments)).message).toBe(
      `${comments}: no kmem event: expected a trace of kmem events, perf script text of kmem events or kmemtrace relay records`,
    );
  });
});
