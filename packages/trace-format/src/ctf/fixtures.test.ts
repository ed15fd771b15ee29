import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
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

    // CTF 2 versions of babeltrace's traces (Trace Compass fixtures) must read as babeltrace2 read the 1.8 originals.
    const ctf2 = fixtures ? join(fixtures, 'ctf-tracecompass/ctf/src/main/resources') : '';
    for (const [name, original] of [
      ['CTF2-7.0-smalltrace', 'succeed/smalltrace'],
      ['CTF2-7.0-barectf-event-before-packet', 'succeed/barectf-event-before-packet'],
      ['CTF2-7.0-ev-disc-no-ts-begin-end', 'succeed/ev-disc-no-ts-begin-end'],
      ['CTF2-7.0-meta-variant-no-underscore', 'succeed/meta-variant-no-underscore'],
    ] as const) {
      it(`reads CTF 2 ${name} as babeltrace2 printed its CTF 1.8 original`, () => {
        const c = cases.succeed.find((s) => s.name === original)!;
        const expected = gunzipSync(readFileSync(c.expectedText!)).toString('utf8').trimEnd().split('\n');
        expect(textOf(join(ctf2, name))).toEqual(expected);
      });
    }

    it('reads CTF 2 variable-length (LEB128) integers', () => {
      const [event] = [...openCtfTrace(join(ctf2, 'CTF2-vl-ints')).events()];
      const f = event!.fields;
      // Bytes 00, 4d, b1 01: 0, 77 and 0x31 + (1 << 7); the widest values are the 64-bit extremes.
      expect([f.vu1a, f.vu1b, f.vu2]).toEqual([0n, 77n, 177n]);
      expect(f.vu10).toBe(2n ** 64n - 1n);
      expect([f.vi1a, f.vi1b, f.vi10b, f.vi10c]).toEqual([0n, -1n, 2n ** 63n - 1n, -(2n ** 63n)]);
      expect(Object.keys(f)).toHaveLength(25);
    });

    it('deterministic-ordering: reads the intact trace and rejects the two corrupted ones', () => {
      const dir = join(fixtures!, 'ctf-babeltrace-v2.0.4/tests/data/ctf-traces/deterministic-ordering');
      // babeltrace's b-c.expect: three `gadoua` events from b-not-corrupted, then an error from c-corrupted.
      const events = [...openCtfTrace(join(dir, 'b-not-corrupted')).events()];
      expect(events.map((e) => e.eventClass.name)).toEqual(['gadoua', 'gadoua', 'gadoua']);
      for (const bad of ['a-corrupted', 'c-corrupted']) {
        expect(() => [...openCtfTrace(join(dir, bad)).events()]).toThrow(/unknown event id 255/);
      }
    });

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

const haveBt2 = spawnSync('babeltrace2', ['--version']).status === 0;
describe.skipIf(!fixtures || !haveBt2)(
  `local time like plain babeltrace2${fixtures && haveBt2 ? '' : ' (skipped: ../shared/fixtures or babeltrace2 (apt-get install babeltrace2) absent)'}`,
  () => {
    it('prints the time of day in the local zone with localTime (TZ=Asia/Kolkata, UTC+05:30)', () => {
      const dir = ctfFixtureCases(fixtures!).succeed.find((c) => c.name === 'succeed/wk-heartbeat-u')!.dir;
      const saved = process.env.TZ;
      process.env.TZ = 'Asia/Kolkata';
      try {
        const reader = openCtfTrace(dir);
        const format = createBabeltraceTextFormatter({ trace: reader.trace, localTime: true });
        const ours = Array.from(reader.events(), format);
        const run = spawnSync('babeltrace2', [dir], { encoding: 'utf8', env: { ...process.env, TZ: 'Asia/Kolkata' } });
        expect(ours).toEqual(run.stdout.trimEnd().split('\n'));
        expect(ours[0]!.startsWith('[23:18:17.586558519]')).toBe(true);
      } finally {
        if (saved === undefined) delete process.env.TZ;
        else process.env.TZ = saved;
      }
    });
  },
);
