import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeEnvelope, encodeEnvelope, stamped } from './envelope.ts';
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
});
