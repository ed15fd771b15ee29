import { mkdirSync, mkdtempSync, openSync, renameSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EvtraceError, errnoText, errorText } from './index.ts';

/** The error a real system call throws. */
function failure(call: () => unknown): unknown {
  try {
    call();
  } catch (error) {
    return error;
  }
  throw new Error('the call did not fail');
}

describe('errnoText and errorText', () => {
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-errors-'));

  it('word a failed system call by its call, path and errno with what it means', () => {
    const exists = failure(() => mkdirSync(dir));
    expect(errnoText(exists)).toBe('EEXIST (already exists)');
    expect(errorText(exists)).toBe(`cannot mkdir ${dir}: EEXIST (already exists)`);
    const missing = failure(() => renameSync(join(dir, 'a'), join(dir, 'b')));
    expect(errorText(missing)).toBe(
      `cannot rename ${join(dir, 'a')} to ${join(dir, 'b')}: ENOENT (no such file or directory)`,
    );
    const full = openSync('/dev/full', 'w');
    expect(errorText(failure(() => writeSync(full, 'x')))).toBe('cannot write: ENOSPC (no space left on device)');
  });

  it('give an errno without a meaning alone, and any other error as CODE: message or its message', () => {
    expect(errnoText(Object.assign(new Error('x'), { code: 'EWOULDBLOCK' }))).toBe('EWOULDBLOCK');
    expect(errnoText(new Error('plain'))).toBe('plain');
    expect(errnoText('text')).toBe('text');
    expect(errorText(new EvtraceError('ERR_TRACE_DAT', 'bad', { location: { file: 'k.dat', offset: 8 } }))).toBe(
      'ERR_TRACE_DAT: k.dat: byte 8: bad',
    );
    expect(errorText(new Error('a bug'))).toBe('a bug');
    expect(errorText(undefined)).toBe('undefined');
  });
});
