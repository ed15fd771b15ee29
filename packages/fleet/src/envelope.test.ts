import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeEnvelope, encodeEnvelope, envelopeHeader, stamped, stampedLines } from './envelope.ts';
import { FleetError } from './errors.ts';

describe('envelope', () => {
  it('round-trips a header and its records', () => {
    const header = {
      v: 1 as const,
      host: 'web1',
      channel: 'events.d' as const,
      seq: 7,
      n: 2,
      time: '2026-01-01T00:00:00.000Z',
    };
    const e = decodeEnvelope(encodeEnvelope(header, ['{"a":1}', '{"b":"x"}']), 'here');
    expect(e).toEqual({ header, records: ['{"a":1}', '{"b":"x"}'] });
  });

  it('says where and what is wrong with a foreign message', () => {
    const bytes = new TextEncoder().encode('{"v":1,"host":"h","channel":"mce","seq":1,"n":3,"time":"t"}\n{}');
    expect(() => decodeEnvelope(bytes, 'evtrace.h.mce (stream sequence 9)')).toThrow(
      'evtrace.h.mce (stream sequence 9): the header promises 3 records, the body holds 1',
    );
    expect(() => decodeEnvelope(new TextEncoder().encode('hello'), 'x')).toThrow(
      /x: the header line \(bytes 0-5\) is not JSON/,
    );
  });

  it('puts host, seq and session first in a record', () => {
    expect(stamped('{"event":"a"}', 'h', 3, 's')).toBe('{"host":"h","seq":3,"session":"s","event":"a"}');
    expect(stamped('{}', 'h', 3)).toBe('{"host":"h","seq":3}');
  });

  it('decodes any bytes to an envelope or a FleetError, never anything else', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          fc.string().map((s) => new TextEncoder().encode(s)),
        ),
        (bytes) => {
          try {
            const e = decodeEnvelope(bytes, 'fuzz');
            expect(e.records).toHaveLength(e.header.n);
          } catch (error) {
            expect(error).toBeInstanceOf(FleetError);
            expect((error as FleetError).code).toBe('ERR_FLEET_MESSAGE');
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('splices stamped lines as bytes exactly as stamped() does on the decoded records, or fails as decoding does', () => {
    const text = (b: Uint8Array) => new TextDecoder().decode(b);
    const header = (n: number) => `{"v":1,"host":"h","channel":"events.s","seq":5,"n":${n},"time":"t"}\n`;
    const body = new TextEncoder().encode(`${header(3)}{"a":"é"}\n{}\n{"b":[1,2]}`);
    const { start } = envelopeHeader(body, 'x');
    expect(text(stampedLines(body, start, 3, { host: 'h', seq: 5, session: 's' }, 'x'))).toBe(
      '{"host":"h","seq":5,"session":"s","a":"é"}\n{"host":"h","seq":6,"session":"s"}\n{"host":"h","seq":7,"session":"s","b":[1,2]}\n',
    );
    fc.assert(
      fc.property(
        fc.nat(4),
        fc.array(fc.oneof(fc.json(), fc.string(), fc.constant('{}')), { maxLength: 5 }),
        fc.option(fc.string({ maxLength: 5 }), { nil: undefined }),
        fc.uint8Array({ maxLength: 4 }),
        (n, records, session, junk) => {
          const recs = records.map((r) => r.replaceAll('\n', ' '));
          const bytes = Buffer.concat([Buffer.from(header(n) + recs.join('\n')), junk]);
          let expected: string | FleetError;
          try {
            const e = decodeEnvelope(bytes, 'fuzz');
            expected = e.records.map((r, i) => `${stamped(r, 'h', 5 + i, session)}\n`).join('');
          } catch (error) {
            expected = error as FleetError;
          }
          try {
            const got = text(
              stampedLines(bytes, envelopeHeader(bytes, 'fuzz').start, n, { host: 'h', seq: 5, session }, 'fuzz'),
            );
            expect(got).toBe(expected);
          } catch (error) {
            expect(expected).toBeInstanceOf(FleetError);
            expect((error as FleetError).message).toBe((expected as FleetError).message);
          }
        },
      ),
      {
        numRuns: 500,
        // Once found: records whose first character is not one byte, or empty lines, which the byte and text paths
        // cut apart.
        examples: [
          [1, [], undefined, Uint8Array.from([0, 194, 128])],
          [1, [], undefined, Uint8Array.from([194, 128])],
          [2, [], undefined, Uint8Array.from([10])],
        ],
      },
    );
  });
});
