import { createCtfWriter, type EventClass } from '@evtrace/trace-format';

/**
 * A CTF trace of `events` events of one u64 field (LTTng-style compact headers, the trace-format CTF bench's input),
 * evenly spaced in time: the input of the end-to-end bench and of tests that need a long conversion.
 */
export function writeU64Ctf(dir: string, events: number): void {
  const cls: EventClass = {
    id: 0,
    name: 'one_u64',
    streamId: 0,
    payload: {
      kind: 'struct',
      minAlign: 1,
      members: [
        {
          name: 'value',
          type: { kind: 'int', size: 64, signed: false, align: 8, byteOrder: 'le', base: 10, encoding: 'none' },
        },
      ],
    },
  };
  const writer = createCtfWriter(dir, {});
  let ts = 1_700_000_000_000_000_000n;
  for (let k = 0; k < events; k++) {
    ts += 137n;
    writer.writeEvent({ eventClass: cls, tsNs: ts, cpu: 0, fields: { value: BigInt(k) } });
  }
  writer.close();
}
