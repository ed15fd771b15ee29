import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { writeTraceDat } from '../ftrace/tracedat/write-events.ts';
import type { EventClass, FieldClass, FieldValue, IntegerClass } from '../model/types.ts';
import { ctfFixtureCases, sharedFixtures } from './fixtures.ts';
import { openCtfTrace } from './reader.ts';
import { createCtfWriter } from './writer.ts';

const fixtures = sharedFixtures();
const root = mkdtempSync(join(tmpdir(), 'evtrace-ctf-records-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const KINDS = [{}, { compression: 'none' }, { version: 6 }] as const;

/** What each path gives for `dir`: the file's size and digest, or the error's code and message; and the warnings. */
function both(dir: string, options: (typeof KINDS)[number], name: string, lenient = false) {
  const run = (file: string, write: () => unknown) => {
    try {
      write();
      const bytes = readFileSync(file);
      return `${bytes.length} bytes, sha256 ${createHash('sha256').update(bytes).digest('hex')}`;
    } catch (error) {
      return `${(error as { code?: string }).code}: ${(error as Error).message}`;
    }
  };
  const events = join(root, `${name}.events.dat`);
  const records = join(root, `${name}.records.dat`);
  const reader = openCtfTrace(dir, { lenient });
  const again = openCtfTrace(dir, { lenient });
  return {
    events: run(events, () => writeTraceDat(events, reader.eventClasses, reader.events(), options)),
    records: run(records, () => again.writeTraceDat(records, options)),
    warnings: [reader.warnings, again.warnings],
  };
}

const int = (size: number, signed: boolean, align = 8): IntegerClass => ({
  kind: 'int',
  size,
  signed,
  align,
  byteOrder: 'le',
  base: 10,
  encoding: 'none',
});
const struct = (members: [string, FieldClass][]) =>
  ({ kind: 'struct', minAlign: 1, members: members.map(([name, type]) => ({ name, type })) }) as const;

/** Classes of integers only (written from the packets), and with a string and an array (encoded as events). */
const CLASSES: EventClass[] = [
  {
    id: 0,
    name: 'demo:ints',
    streamId: 0,
    payload: struct([
      ['a', int(8, true)],
      ['b', int(64, false)],
      ['c', int(27, true, 1)],
      ['d', int(16, false)],
      ['e', int(64, true)],
    ]),
  },
  {
    id: 1,
    name: 'demo:text',
    streamId: 0,
    payload: struct([
      ['n', int(32, false)],
      ['s', { kind: 'string', encoding: 'utf8' }],
    ]),
  },
  { id: 2, name: 'plain', streamId: 0, payload: struct([['v', int(64, false)]]) },
  {
    id: 4,
    name: 'demo:aligned',
    streamId: 0,
    payload: struct([
      ['u8', int(8, false)],
      ['s16', int(16, true)],
      ['u32', int(32, false)],
      ['s64', int(64, true)],
      ['state', { kind: 'enum', container: int(8, false), mappings: [{ label: 'ANY', ranges: [[0, 7]] }] }],
    ]),
  },
  {
    id: 3,
    name: 'demo:array',
    streamId: 0,
    payload: struct([['xs', { kind: 'array', length: 3, element: int(16, false) }]]),
  },
];

const U64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
const I64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
const EVENT = fc.record({
  cls: fc.nat(CLASSES.length - 1),
  cpu: fc.nat(3),
  // After the CPU's previous event: steps that fit a record header, and that need a time extend.
  step: fc.oneof(fc.nat(1000), fc.bigInt({ min: 0n, max: 2n ** 40n })),
  a: fc.integer({ min: -128, max: 127 }),
  b: U64,
  c: fc.integer({ min: -(2 ** 26), max: 2 ** 26 - 1 }),
  e: I64,
  s: fc.string({ maxLength: 20 }),
});

/** Puts the packets of `dir`'s stream files into one file, CPU after CPU (each packet names its CPU). */
function joinStreams(dir: string): void {
  const files = readdirSync(dir).filter((f) => f.startsWith('stream_'));
  const bytes = Buffer.concat(files.map((f) => readFileSync(join(dir, f))));
  for (const f of files) rmSync(join(dir, f));
  writeFileSync(join(dir, 'stream'), bytes);
}

describe('CTF to trace.dat written from the packets', () => {
  it('gives the bytes of the events encoded (several CPUs and streams merged by time, time extends, wide values)', () => {
    let k = 0;
    fc.assert(
      fc.property(
        fc.array(EVENT, { minLength: 1, maxLength: 400 }),
        fc.boolean(),
        fc.constantFrom('le' as const, 'be' as const),
        fc.boolean(),
        (events, large, byteOrder, joined) => {
          const dir = join(root, `gen${k++}`);
          const writer = createCtfWriter(dir, {
            packetSize: 512,
            byteOrder,
            // Its origin before every CPU's first event.
            clock: { offsetSeconds: 999_999_999n },
            ...(large ? { eventHeader: 'large' as const } : {}),
          });
          // Each CPU's own time: the streams' events interleave, merged by time.
          const times = [10n ** 18n, 10n ** 18n + 7n, 10n ** 18n - 5000n, 10n ** 18n + 2n ** 30n];
          for (const e of events) {
            const ts = (times[e.cpu]! += typeof e.step === 'bigint' ? e.step : BigInt(e.step));
            const fields: Record<string, FieldValue> =
              e.cls === 0
                ? { a: e.a, b: e.b, c: e.c, d: e.a & 0xffff, e: e.e }
                : e.cls === 1
                  ? { n: e.c >>> 0, s: e.s }
                  : e.cls === 2
                    ? { v: e.b }
                    : e.cls === 3
                      ? { u8: e.a & 0xff, s16: e.c >> 11, u32: e.c >>> 0, s64: e.e, state: e.a & 7 }
                      : { xs: [e.a & 0xff, 1, 2] };
            writer.writeEvent({ eventClass: CLASSES[e.cls]!, tsNs: ts, cpu: e.cpu, fields });
          }
          writer.close();
          // One stream file of every CPU's packets: its records are placed as they are read, not merged.
          if (joined) joinStreams(dir);
          for (const [i, options] of KINDS.entries()) {
            const { events: a, records: b } = both(dir, options, `gen${k}-${i}`);
            expect(b, `${dir} ${JSON.stringify(options)}`).toBe(a);
            expect(b).toMatch(/^\d+ bytes/);
          }
          rmSync(dir, { recursive: true });
        },
      ),
      { numRuns: 40 },
    );
  });

  it('names the event of a CPU a trace.dat cannot hold, as the events path does (one stream or two, even read leniently)', () => {
    for (const joined of [false, true]) {
      for (const lenient of [false, true]) {
        const dir = join(root, `cpu-${joined}-${lenient}`);
        const writer = createCtfWriter(dir);
        writer.writeEvent({ eventClass: CLASSES[2]!, tsNs: 5n, cpu: 0, fields: { v: 1n } });
        writer.writeEvent({ eventClass: CLASSES[2]!, tsNs: 6n, cpu: 5000, fields: { v: 2n } });
        writer.close();
        // One stream: the record is placed as the reader reads it, whose lenient read skips a corrupt packet.
        if (joined) joinStreams(dir);
        const { events, records } = both(dir, {}, `cpu-${joined}-${lenient}`, lenient);
        expect(records).toBe('ERR_TRACE_FORMAT: event 1 (plain) is on CPU 5000, not 0 to 4095');
        expect(records).toEqual(events);
      }
    }
  });
});

describe('CTF to trace.dat from damaged packets', () => {
  // Two streams merged, and one stream (whose records are placed as they are read) of both CPUs' packets.
  for (const joined of [false, true]) {
    it(`keeps and leaves out what the events path does, strictly and leniently, with the same warnings (${joined ? 'one stream' : 'two streams'})`, () => {
      const dir = join(root, `damaged-${joined}`);
      const writer = createCtfWriter(dir, { packetSize: 256 });
      for (let i = 0; i < 300; i++) {
        const cls = CLASSES[i % 3 === 0 ? 1 : 2]!;
        const fields: Record<string, FieldValue> = i % 3 === 0 ? { n: i, s: `task-${i}` } : { v: BigInt(i) * 7919n };
        writer.writeEvent({ eventClass: cls, tsNs: 10n ** 18n + BigInt(i * 1000), cpu: i % 2, fields });
      }
      writer.close();
      if (joined) joinStreams(dir);
      const file = join(dir, joined ? 'stream' : 'stream_0');
      const original = readFileSync(file);
      let k = 0;
      fc.assert(
        fc.property(
          fc.array(fc.record({ at: fc.nat(), value: fc.nat(255) }), { minLength: 1, maxLength: 3 }),
          fc.boolean(),
          (edits, lenient) => {
            const data = Buffer.from(original);
            for (const e of edits) data[e.at % data.length] = e.value;
            writeFileSync(file, data);
            const { events, records, warnings } = both(dir, {}, `damaged-${joined}-${k++}`, lenient);
            expect(records).toBe(events);
            expect(warnings[1]).toEqual(warnings[0]);
          },
        ),
        { numRuns: 80 },
      );
    });
  }
});

describe.skipIf(!fixtures)(
  `CTF fixtures to trace.dat${fixtures ? '' : ' (skipped: ../shared/fixtures absent)'}`,
  () => {
    const cases = fixtures ? ctfFixtureCases(fixtures).succeed : [];
    for (const c of cases) {
      it(`${c.name}: the same bytes (or error) as of its events`, () => {
        const { events, records } = both(c.dir, {}, c.name.replace(/\//g, '_'));
        expect(records).toEqual(events);
      });
    }
  },
);
