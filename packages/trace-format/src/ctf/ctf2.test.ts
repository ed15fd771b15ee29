import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import { isCtf2Metadata, parseCtf2Metadata } from './ctf2.ts';

const RS = '\x1e';

function metadata(...fragments: object[]): string {
  return fragments.map((f) => RS + JSON.stringify(f)).join('\n');
}

describe('CTF 2 metadata', () => {
  it('translates roles, aliases, clocks and integer-selected variants', () => {
    const text = metadata(
      { type: 'preamble', version: 2 },
      {
        type: 'field-class-alias',
        name: 'u32',
        'field-class': { type: 'fixed-length-unsigned-integer', length: 32, 'byte-order': 'big-endian', alignment: 8 },
      },
      { type: 'trace-class', environment: { hostname: 'h' } },
      {
        type: 'clock-class',
        name: 'mono',
        frequency: 1000,
        'offset-from-origin': { seconds: 7, cycles: 3 },
        origin: 'unix-epoch',
      },
      {
        type: 'data-stream-class',
        'default-clock-class-name': 'mono',
        'packet-context-field-class': {
          type: 'structure',
          'member-classes': [
            {
              name: 'total',
              'field-class': {
                type: 'fixed-length-unsigned-integer',
                length: 32,
                'byte-order': 'little-endian',
                roles: ['packet-total-length'],
              },
            },
          ],
        },
        'event-record-header-field-class': {
          type: 'structure',
          'member-classes': [
            {
              name: 'ts',
              'field-class': {
                type: 'fixed-length-unsigned-integer',
                length: 64,
                'byte-order': 'little-endian',
                roles: ['default-clock-timestamp'],
              },
            },
          ],
        },
      },
      {
        type: 'event-record-class',
        id: 3,
        name: 'e',
        'payload-field-class': {
          type: 'structure',
          'member-classes': [
            { name: 'sel', 'field-class': 'u32' },
            {
              name: 'v',
              'field-class': {
                type: 'variant',
                'selector-field-location': { origin: 'event-record-payload', path: ['sel'] },
                options: [
                  { name: 'a', 'selector-field-ranges': [[0, 9]], 'field-class': { type: 'null-terminated-string' } },
                  { name: 'b', 'selector-field-ranges': [[10, 10]], 'field-class': 'u32' },
                ],
              },
            },
          ],
        },
      },
    );
    expect(isCtf2Metadata(new TextEncoder().encode(text))).toBe(true);
    const trace = parseCtf2Metadata(text, 'm');
    expect(trace.clocks.get('mono')).toMatchObject({
      freq: 1000n,
      offsetSeconds: 7n,
      offsetCycles: 3n,
      absolute: true,
    });
    expect(trace.env.get('hostname')).toBe('h');
    const stream = trace.streams.get(0)!;
    expect(stream.packetContext!.members[0]!.type).toMatchObject({ kind: 'int', role: 'packet_size', byteOrder: 'le' });
    expect(stream.eventHeader!.members[0]!.type).toMatchObject({ role: 'timestamp', mappedClock: 'mono' });
    const payload = stream.eventClasses.get(3)!.payload;
    expect(payload.members[0]!.type).toMatchObject({ kind: 'int', size: 32, byteOrder: 'be', role: '' });
    expect(payload.members[1]!.type).toMatchObject({
      kind: 'variant',
      tagRef: 'event.fields.sel',
      optionRanges: [[[0, 9]], [[10, 10]]],
    });
  });

  it('rejects malformed metadata with ERR_TRACE_TSDL', () => {
    const bad = [
      metadata({ type: 'trace-class' }),
      `${RS}{ nope`,
      metadata({ type: 'preamble', version: 2 }),
      metadata(
        { type: 'preamble', version: 2 },
        { type: 'trace-class' },
        { type: 'event-record-class', 'data-stream-class-id': 4 },
      ),
      metadata(
        { type: 'preamble', version: 2 },
        { type: 'trace-class' },
        { type: 'data-stream-class' },
        {
          type: 'event-record-class',
          'payload-field-class': {
            type: 'structure',
            'member-classes': [
              { name: 'x', 'field-class': { type: 'fixed-length-unsigned-integer', length: 8, alignment: 3 } },
            ],
          },
        },
      ),
    ];
    for (const text of bad) {
      expect(() => parseCtf2Metadata(text, 'm')).toThrow(TraceFormatError);
    }
  });
});
