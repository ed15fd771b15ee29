import { encodeJsonEvent, parseFormatFile, type TraceEvent } from '@evtrace/trace-format';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ProtocolError } from './errors.ts';
import { eventsMessage, streamDecoder, subscribeResult } from './stream.ts';
import { parseServerMessage } from './validate.ts';

const KFREE = `name: kfree
ID: 513
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;
\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;

print fmt: "call_site=%pS ptr=%p", (void *)REC->call_site, REC->ptr
`;
const kfree = parseFormatFile(KFREE, { system: 'kmem' });

describe('subscription messages', () => {
  it('carry the classes through the reply and the events through an events message, as they were', () => {
    const event: TraceEvent = {
      tsNs: 5312009871234n,
      cpu: 1,
      eventClass: kfree,
      fields: { call_site: 0xffffffff819af340n, ptr: 0xffff888003a2b000n },
      scopes: { 'event.context': { common_pid: 9, common_flags: 0, common_preempt_count: 1 } },
    };
    const reply = JSON.parse(JSON.stringify(subscribeResult(3, [kfree])));
    const decoder = streamDecoder(reply);
    expect(decoder.eventClasses).toEqual([kfree]);
    const message = parseServerMessage(eventsMessage(3, [encodeJsonEvent(event).slice(0, -1)]).slice(0, -1));
    if (!message.ok || !('kind' in message.value) || message.value.kind !== 'events') throw new Error('not events');
    const [wire] = message.value.events;
    expect(decoder.decode(wire, 'events[0]')).toEqual({ ...event, eventClass: decoder.eventClasses[0] });
  });

  it('fuzz: a mutated subscribe reply gives a decoder or ERR_AGENT_BAD_REPLY, never another error', () => {
    const seed = JSON.stringify(subscribeResult(3, [kfree]));
    const mutated = fc
      .tuple(fc.constant(seed), fc.array(fc.tuple(fc.nat(), fc.nat(4), fc.string({ maxLength: 6 })), { maxLength: 4 }))
      .map(([s, edits]) => {
        for (const [at, cut, insert] of edits) {
          const i = at % (s.length + 1);
          s = s.slice(0, i) + insert + s.slice(i + cut);
        }
        return s;
      });
    let decoders = 0;
    let refused = 0;
    fc.assert(
      fc.property(
        fc.oneof(
          mutated,
          fc.jsonValue().map((v) => JSON.stringify(v)),
        ),
        (text) => {
          let reply: unknown;
          try {
            reply = JSON.parse(text);
          } catch {
            return;
          }
          try {
            streamDecoder(reply);
            decoders++;
          } catch (error) {
            expect(error).toBeInstanceOf(ProtocolError);
            expect((error as ProtocolError).code).toBe('ERR_AGENT_BAD_REPLY');
            refused++;
          }
        },
      ),
      { numRuns: 2000 },
    );
    expect(decoders).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
  });
});
