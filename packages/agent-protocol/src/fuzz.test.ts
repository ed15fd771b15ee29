import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineDecoder, MAX_REQUEST_BYTES } from './framing.ts';
import { parseRequest, parseServerMessage } from './validate.ts';

/** Real requests, as the CLI sends them: the seeds the mutations start from. */
const SEEDS = [
  '{"id":1,"op":"hello","version":1,"client":"evtrace"}',
  '{"id":2,"op":"create","session":{"name":"s1","events":["kmem:kmalloc"],"filter":"bytes_req > 64","mode":"overwrite","bufferSize":1048576,"output":{"dir":"/tmp/o","format":"tracedat"},"rotate":{"seconds":5},"source":"auto","triggers":[{"kind":"event","filter":"bytes_req > 4000"}]}}',
  '{"id":3,"op":"snapshot","name":"s1","dir":"/tmp/shots","format":"ctf"}',
  '{"id":4,"op":"subscribe","name":"s1","window":true,"queue":500}',
  '{"id":5,"op":"trigger","name":"s1","trigger":{"kind":"signal","signal":"SIGUSR2"}}',
  '{"id":6,"ok":true,"result":{"stream":2}}',
  '{"id":7,"op":"attach","buffer":"team/app/flight","backend":"user","name":"team.app.flight","dir":"/dev/shm/x"}',
  '{"id":8,"op":"buffers","dir":"/dev/shm/x"}',
  '{"id":9,"op":"detach","name":"team.app.flight"}',
  '{"stream":2,"kind":"events","events":[{"ts_ns":"1","cpu":1,"event":"kmem:kfree","pid":null,"comm":null,"flags":null,"fields":{}}]}',
];

const mutated = fc
  .tuple(
    fc.constantFrom(...SEEDS),
    fc.array(fc.tuple(fc.nat(), fc.nat(), fc.string({ maxLength: 8 })), { maxLength: 6 }),
  )
  .map(([seed, edits]) => {
    let s = seed;
    for (const [at, cut, insert] of edits) {
      const i = at % (s.length + 1);
      s = s.slice(0, i) + insert + s.slice(i + (cut % 4));
    }
    return s;
  });

const anyJson = fc.jsonValue().map((v) => JSON.stringify(v));

describe('protocol parsers under hostile input', () => {
  it('return a verdict for mutated real messages and arbitrary JSON, never throw', () => {
    fc.assert(
      fc.property(fc.oneof(mutated, anyJson, fc.string()), (line) => {
        for (const r of [parseRequest(line), parseServerMessage(line)]) {
          expect(typeof r.ok).toBe('boolean');
          if (!r.ok) {
            expect(r.code).toMatch(/^ERR_[A-Z_]+$/);
            expect(r.message.length).toBeGreaterThan(0);
            expect(r.message.length).toBeLessThan(1000);
          }
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('frame any byte stream into lines within the limit, whatever the chunking', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), fc.array(fc.nat(3000), { maxLength: 8 }), (data, cuts) => {
        const d = new LineDecoder(64);
        const points = [...new Set([0, ...cuts.map((c) => c % (data.length + 1)), data.length])].sort((a, b) => a - b);
        let lines = 0;
        for (let i = 1; i < points.length; i++) {
          for (const f of d.push(data.subarray(points[i - 1], points[i]))) {
            if ('line' in f) expect(Buffer.byteLength(f.line)).toBeLessThanOrEqual(64 * 3);
            else expect(f.oversize).toBeGreaterThan(64);
            lines++;
          }
          expect(d.pending).toBeLessThanOrEqual(64);
        }
        expect(lines).toBe(data.filter((b) => b === 0x0a).length);
      }),
      { numRuns: 500 },
    );
  });

  it('parses a maximum-size request line in bounded time', () => {
    const line = `{"id":1,"op":"list","pad":"${'x'.repeat(MAX_REQUEST_BYTES - 40)}"}`;
    const t0 = performance.now();
    expect(parseRequest(line).ok).toBe(true);
    expect(parseRequest(`${'['.repeat(MAX_REQUEST_BYTES - 1)}`).ok).toBe(false);
    expect(parseRequest(`{"id":1,"op":"attach","buffer":"${'a/'.repeat(2000)}!"}`).ok).toBe(false);
    expect(performance.now() - t0).toBeLessThan(2000);
  });
});
