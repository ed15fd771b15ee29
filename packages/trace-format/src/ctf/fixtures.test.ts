import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import { ctfFixtureCases, sharedFixtures } from './fixtures.ts';
import { openCtfTrace } from './reader.ts';
import { createBabeltraceTextFormatter } from './text.ts';

const fixtures = sharedFixtures();

function textOf(dir: string): string[] {
  const reader = openCtfTrace(dir);
  const format = createBabeltraceTextFormatter({ trace: reader.trace, timestamps: reader.timestamped });
  return Array.from(reader.events(), format);
}

describe.skipIf(!fixtures)(
  `CTF fixtures against babeltrace2 2.0.4${fixtures ? '' : ' (skipped: ../shared/fixtures absent)'}`,
  () => {
    const cases = fixtures ? ctfFixtureCases(fixtures) : { succeed: [], fail: [] };

    it('finds the fixture traces', () => {
      expect(cases.succeed.length).toBeGreaterThanOrEqual(30);
      expect(cases.fail.length).toBeGreaterThanOrEqual(8);
    });

    for (const c of cases.succeed) {
      it(`reads ${c.name} exactly as babeltrace2 prints it`, () => {
        const expected = gunzipSync(readFileSync(c.expectedText!)).toString('utf8').split('\n');
        if (expected.at(-1) === '') expected.pop();
        const got = textOf(c.dir);
        expect(got.length).toBe(expected.length);
        for (let i = 0; i < got.length; i++)
          if (got[i] !== expected[i]) expect(`${i}: ${got[i]}`).toBe(`${i}: ${expected[i]}`);
      });
    }

    for (const c of cases.fail) {
      it(`rejects ${c.name} with a located TraceFormatError`, () => {
        let error: unknown;
        try {
          textOf(c.dir);
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(TraceFormatError);
        expect((error as TraceFormatError).location.file).toContain(c.dir);
      });
    }
  },
);
