import { openSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { TraceFormatError } from '@evtrace/trace-format';
import { afterAll, describe, expect, it } from 'vitest';
import { errorLine, ViewerError } from './errors.ts';
import { tempDir } from './testing/traces.ts';

const dir = tempDir();
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('errorLine', () => {
  it("gives the explained package error's code, else the viewer's", () => {
    const cause = new TraceFormatError('ERR_TRACE_DAT', 'truncated section', { file: 'k.dat', offset: 12 });
    expect(errorLine(new ViewerError('ERR_VIEW_INPUT', cause.message, { cause }))).toBe(
      'ERR_TRACE_DAT: k.dat: byte 12: truncated section',
    );
    expect(errorLine(new ViewerError('ERR_VIEW_AGENT', 'the agent has no session x'))).toBe(
      'ERR_VIEW_AGENT: the agent has no session x',
    );
    const errno = Object.assign(new Error('connect ENOENT /x'), { code: 'ENOENT' });
    expect(errorLine(new ViewerError('ERR_VIEW_AGENT', 'cannot reach /x', { cause: errno }))).toBe(
      'ERR_VIEW_AGENT: cannot reach /x',
    );
  });

  it('gives a failed system call as the input, with its call, path and errno, and an error without a code as internal', () => {
    let failure: unknown;
    try {
      openSync(join(dir, 'absent'), 'r');
    } catch (error) {
      failure = error;
    }
    expect(errorLine(failure)).toBe(
      `ERR_VIEW_INPUT: cannot open ${join(dir, 'absent')}: ENOENT (no such file or directory)`,
    );
    expect(errorLine(new TypeError('x is undefined'))).toBe('ERR_VIEW_INTERNAL: x is undefined');
    expect(errorLine('thrown text')).toBe('ERR_VIEW_INTERNAL: thrown text');
  });
});
