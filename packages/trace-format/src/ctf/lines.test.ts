import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import type { ByteOrder, EventClass, FieldClass, FieldValue, IntegerClass, TraceEvent } from '../model/types.ts';
import { createJsonFormatter } from '../output/json.ts';
import { ctfFixtureCases, sharedFixtures, withEditedStream } from './fixtures.ts';
import type { CtfLinesOptions } from './lines.ts';
import { type CtfTraceReader, openCtfTrace, readCtfTrace } from './reader.ts';
import { createBabeltraceTextFormatter } from './text.ts';
import { createCtfWriter } from './writer.ts';

const fixtures = sharedFixtures();
const root = mkdtempSync(join(tmpdir(), 'evtrace-ctf-lines-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** What reading gives: the text written before it stopped, and the error it stopped with. */
interface Outcome {
  readonly text: string;
  readonly error?: string;
}

function outcome(fn: (write: (bytes: Uint8Array) => void) => void): Outcome {
  const chunks: Buffer[] = [];
  try {
    fn((bytes) => chunks.push(Buffer.from(bytes)));
    return { text: Buffer.concat(chunks).toString('utf8') };
  } catch (error) {
    if (!(error instanceof TraceFormatError)) throw error;
    return { text: Buffer.concat(chunks).toString('utf8'), error: `${error.code} ${error.message}` };
  }
}

/** The lines of the event formatters, one event at a time (the reference). */
function viaEvents(
  open: () => CtfTraceReader,
  format: 'text' | 'json',
  limit = Number.POSITIVE_INFINITY,
  keep?: (e: TraceEvent) => boolean,
): Outcome {
  return outcome((write) => {
    const reader = open();
    const line =
      format === 'json'
        ? createJsonFormatter()
        : (() => {
            const f = createBabeltraceTextFormatter({ trace: reader.trace, timestamps: reader.timestamped });
            return (e: Parameters<typeof f>[0]) => `${f(e)}\n`;
          })();
    let n = 0;
    // Written as produced, so that a failure keeps what came before it, as writeLines does.
    for (const e of reader.events()) {
      if (keep !== undefined && !keep(e)) continue;
      if (n++ >= limit) break;
      write(Buffer.from(line(e)));
    }
  });
}

function viaLines(open: () => CtfTraceReader, options: CtfLinesOptions): Outcome {
  return outcome((write) => {
    open().writeLines(write, options);
  });
}

/**
 * A filter that reads every value an event carries, typed: a number where the decoder gives a bigint (or the reverse)
 * judges differently.
 */
let judgedSeen: string[] = [];

function typedKeep(e: TraceEvent): boolean {
  const seen = JSON.stringify([e.cpu, String(e.tsNs), e.fields, e.scopes], (_k, v) =>
    typeof v === 'bigint' ? `${v}n` : v,
  );
  judgedSeen.push(seen);
  let hash = 0;
  for (let i = 0; i < seen.length; i++) hash = (hash * 31 + seen.charCodeAt(i)) | 0;
  return (hash & 1) === 0;
}

/** A filter of the payload's values alone, typed as the decoder types them. */
function payloadKeep(e: TraceEvent): boolean {
  return typedKeep({ ...e, cpu: null, tsNs: 0n, scopes: {}, fields: e.fields } as TraceEvent);
}

/** The same filter over the payload's bytes, read at the offsets the layout gives. */
const payloadKeepRecord: CtfLinesOptions['keepRecord'] = (cls, layout) => (view, start) => {
  const fields: Record<string, FieldValue> = {};
  for (const m of cls.payload.members) {
    const int = (m.type.kind === 'enum' ? m.type.container : m.type) as IntegerClass;
    const at = start + layout.offsets.get(m.name)!;
    let v = 0n;
    for (let i = 0; i < int.size / 8; i++) {
      const byte = BigInt(view.getUint8(int.byteOrder === 'le' ? at + i : at + int.size / 8 - 1 - i));
      v |= byte << BigInt(8 * i);
    }
    if (int.signed) v = BigInt.asIntN(int.size, v);
    fields[m.name] = int.size > 53 ? v : Number(v);
  }
  return payloadKeep({ eventClass: cls, tsNs: 0n, cpu: null, fields });
};

function expectSame(open: () => CtfTraceReader): void {
  for (const [format, keep, keepRecord] of [
    ['text', undefined, undefined],
    ['json', undefined, undefined],
    ['text', typedKeep, undefined],
    ['json', typedKeep, undefined],
    ['text', payloadKeep, payloadKeepRecord],
    ['json', payloadKeep, payloadKeepRecord],
  ] as const) {
    judgedSeen = [];
    const expected = viaEvents(open, format, Number.POSITIVE_INFINITY, keep);
    const judgedEvents = judgedSeen;
    judgedSeen = [];
    const got = viaLines(open, { format, ...(keep ? { keep } : {}), ...(keepRecord ? { keepRecord } : {}) });
    // The filter saw the same events, typed alike (what the bytes' test judged, it did not see).
    if (keepRecord === undefined) expect(judgedSeen).toEqual(judgedEvents);
    expect(got.error).toBe(expected.error);
    if (got.text !== expected.text) {
      // The first differing line, not two megabytes of text.
      const a = got.text.split('\n');
      const b = expected.text.split('\n');
      const i = a.findIndex((l, k) => l !== b[k]);
      const what = `${format}${keep ? ' kept' : ''}${keepRecord ? ' by bytes' : ''} ${i}`;
      expect(`${what}: ${a[i]}`).toBe(`${what}: ${b[i]}`);
    }
  }
}

describe.skipIf(!fixtures)(
  `lines written from the packets equal the event formatters' on the fixtures${fixtures ? '' : ' (skipped: ../shared/fixtures absent)'}`,
  () => {
    const cases = fixtures ? ctfFixtureCases(fixtures) : { succeed: [], fail: [] };
    for (const c of cases.succeed) {
      it(`${c.name}: text and JSON`, () => expectSame(() => openCtfTrace(c.dir)));
    }
    const ctf2 = fixtures ? join(fixtures, 'ctf-tracecompass/ctf/src/main/resources') : '';
    for (const name of fixtures ? readdirSync(ctf2).filter((n) => n.startsWith('CTF2')) : []) {
      it(`CTF 2 ${name}: text and JSON`, () => expectSame(() => openCtfTrace(join(ctf2, name))));
    }
    // One stream alone is written in place (several go through the merge): each stream of the fixtures on its own.
    for (const c of cases.succeed) {
      const files = readdirSync(c.dir).filter((n) => n !== 'metadata' && statSync(join(c.dir, n)).isFile());
      if (files.length < 2) continue;
      it(`${c.name}, each stream alone: text and JSON`, () => {
        const metadata = readFileSync(join(c.dir, 'metadata'));
        for (const n of files) {
          const streams = [{ path: join(c.dir, n), data: readFileSync(join(c.dir, n)) }];
          expectSame(() => readCtfTrace({ metadata, streams }));
        }
      });
    }
    for (const c of cases.fail) {
      it(`${c.name}: the same lines before the same error`, () => expectSame(() => openCtfTrace(c.dir)));
    }

    it('mutated fixtures: the same lines and the same error (file, byte offset), strict and lenient', () => {
      const traces = cases.succeed
        .map((c) => ({ dir: c.dir, files: readdirSync(c.dir).filter((n) => n !== 'metadata') }))
        .filter(({ dir, files }) => {
          const sizes = files.map((n) => statSync(join(dir, n)));
          return files.length > 0 && sizes.every((s) => s.isFile() && s.size <= 65536);
        })
        .map(({ dir, files }) => ({
          metadata: readFileSync(join(dir, 'metadata')),
          streams: files.map((n) => ({ path: join(dir, n), data: readFileSync(join(dir, n)) })),
        }));
      expect(traces.length).toBeGreaterThan(10);
      fc.assert(
        fc.property(
          fc.nat(traces.length - 1),
          fc.nat(),
          fc.array(fc.record({ at: fc.nat(), value: fc.nat(255) }), { minLength: 1, maxLength: 4 }),
          fc.boolean(),
          (i, s, edits, lenient) => {
            const input = withEditedStream(traces[i]!, s, edits);
            const open = () => readCtfTrace(input, { lenient });
            expectSame(open);
            if (lenient) {
              // The warnings too.
              const a = open();
              viaLines(() => a, { format: 'text' });
              const b = open();
              viaEvents(() => b, 'text');
              expect(a.warnings).toEqual(b.warnings);
            }
          },
        ),
        { numRuns: 200 },
      );
    });
  },
);

function int(order: ByteOrder, size: number, signed: boolean, align: number, base: 2 | 8 | 10 | 16): IntegerClass {
  return { kind: 'int', size, signed, align, byteOrder: order, base, encoding: 'none' };
}

/** A generated member: its class and a generator of its values. */
const member = (order: ByteOrder): fc.Arbitrary<{ type: FieldClass; value: fc.Arbitrary<FieldValue> }> =>
  fc.oneof(
    fc
      .record({
        size: fc.constantFrom(1, 5, 8, 13, 16, 27, 32, 33, 52, 53, 54, 63, 64),
        signed: fc.boolean(),
        aligned: fc.boolean(),
        base: fc.constantFrom(10, 10, 16, 8, 2) as fc.Arbitrary<2 | 8 | 10 | 16>,
      })
      .map(({ size, signed, aligned, base }) => {
        const type = int(order, size, signed, aligned || size % 8 === 0 ? 8 : 1, base);
        const low = signed ? -(2n ** BigInt(size - 1)) : 0n;
        const high = signed ? 2n ** BigInt(size - 1) - 1n : 2n ** BigInt(size) - 1n;
        const big = fc.oneof(
          fc.constantFrom(low, high, 0n, 2n ** 53n - 1n, 2n ** 53n),
          fc.bigInt({ min: low, max: high }),
        );
        const value =
          size > 53
            ? big.filter((v) => v >= low && v <= high)
            : big.filter((v) => v >= low && v <= high).map((v) => Number(v));
        return { type, value: value as fc.Arbitrary<FieldValue> };
      }),
    fc.constant({
      type: { kind: 'string', encoding: 'utf8' } as FieldClass,
      value: fc.string({ maxLength: 12 }).map((s) => s.replace(/\0/g, '')) as fc.Arbitrary<FieldValue>,
    }),
    fc.constant({
      type: { kind: 'float', expDig: 11, mantDig: 53, align: 8, byteOrder: order } as FieldClass,
      value: fc.double() as fc.Arbitrary<FieldValue>,
    }),
    fc.constant({
      type: {
        kind: 'enum',
        container: int(order, 8, false, 8, 10),
        mappings: [
          { label: 'LOW', ranges: [[0, 9]] },
          { label: 'ANY', ranges: [[0, 200]] },
        ],
      } as FieldClass,
      value: fc.nat(255) as fc.Arbitrary<FieldValue>,
    }),
  );

/** A generated trace: its byte order, header, classes and events. */
const generated = fc
  .record({
    order: fc.constantFrom('le', 'be') as fc.Arbitrary<ByteOrder>,
    header: fc.constantFrom('compact', 'large') as fc.Arbitrary<'compact' | 'large'>,
    hostname: fc.boolean(),
    cpus: fc.integer({ min: 1, max: 3 }),
  })
  .chain((t) =>
    fc.array(fc.array(member(t.order), { maxLength: 5 }), { minLength: 1, maxLength: 3 }).chain((payloads) =>
      fc
        .array(
          fc.record({
            cls: fc.nat(payloads.length - 1),
            step: fc.oneof(fc.nat(3), fc.nat(2_000_000_000), fc.constant(2 ** 40)),
            cpu: fc.nat(t.cpus - 1),
            values: fc.tuple(...payloads.flat().map((m) => m.value)),
          }),
          { minLength: 1, maxLength: 40 },
        )
        .map((events) => ({ ...t, payloads, events })),
    ),
  );

describe('lines written from the packets equal the event formatters on generated traces', () => {
  it('any integer, string, float or enum payload, several streams, both byte orders and headers', () => {
    let n = 0;
    fc.assert(
      fc.property(generated, ({ order, header, hostname, payloads, events }) => {
        const eventClasses: EventClass[] = payloads.map((members, id) => ({
          id,
          name: `gen:c${id}`,
          streamId: 0,
          payload: { kind: 'struct', minAlign: 1, members: members.map((m, i) => ({ name: `f${i}`, type: m.type })) },
        }));
        const dir = join(root, `t${n++}`);
        const writer = createCtfWriter(dir, {
          byteOrder: order,
          eventHeader: header,
          packetSize: 4096,
          ...(hostname ? { env: { hostname: 'gen' } } : {}),
        });
        let ts = 1_700_000_000_000_000_000n;
        for (const e of events) {
          ts += BigInt(e.step);
          const offset = payloads.slice(0, e.cls).flat().length;
          const fields: Record<string, FieldValue> = {};
          payloads[e.cls]!.forEach((_, i) => {
            fields[`f${i}`] = e.values[offset + i] as FieldValue;
          });
          writer.writeEvent({ eventClass: eventClasses[e.cls]!, tsNs: ts, cpu: e.cpu, fields });
        }
        writer.close();
        expectSame(() => openCtfTrace(dir));
      }),
      { numRuns: 60 },
    );
  });

  it('stops at the limit, decoding no further', () => {
    const dir = join(root, 'limit');
    const u64 = int('le', 64, false, 8, 10);
    const cls: EventClass = {
      id: 0,
      name: 'demo:tick',
      streamId: 0,
      payload: { kind: 'struct', minAlign: 1, members: [{ name: 'count', type: u64 }] },
    };
    const writer = createCtfWriter(dir, {});
    for (let i = 0; i < 100; i++)
      writer.writeEvent({ eventClass: cls, tsNs: 10n ** 18n + BigInt(i), cpu: 0, fields: { count: BigInt(i) } });
    writer.close();
    const reader = openCtfTrace(dir);
    const got = viaLines(() => reader, { format: 'text', limit: 7 });
    expect(got).toEqual(viaEvents(() => openCtfTrace(dir), 'text', 7));
    expect(got.text.split('\n')).toHaveLength(8);
  });
});
