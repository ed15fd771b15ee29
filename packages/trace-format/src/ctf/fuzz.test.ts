import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import { isCtf2Metadata, parseCtf2Metadata } from './ctf2.ts';
import { ctfFixtureCases, sharedFixtures } from './fixtures.ts';
import { parseLttngIndex } from './lttng-index.ts';
import { readMetadataText } from './metadata.ts';
import { type CtfTraceData, readCtfTrace } from './reader.ts';
import { parseTsdl } from './tsdl/parser.ts';

const fixtures = sharedFixtures();

interface LoadedTrace {
  readonly name: string;
  readonly metadata: Uint8Array;
  readonly streams: { path: string; data: Uint8Array }[];
}

/** Small real traces (every stream under 64 KiB) to mutate. */
function loadTraces(): LoadedTrace[] {
  if (!fixtures) return [];
  const { succeed } = ctfFixtureCases(fixtures);
  const ctf2 = join(fixtures, 'ctf-tracecompass/ctf/src/main/resources');
  const ctf2Cases = readdirSync(ctf2)
    .filter((n) => n.startsWith('CTF2'))
    .map((n) => ({ name: n, dir: join(ctf2, n) }));
  const out: LoadedTrace[] = [];
  for (const c of [...succeed, ...ctf2Cases]) {
    const files = readdirSync(c.dir).filter((n) => n !== 'metadata' && statSync(join(c.dir, n)).isFile());
    if (files.length === 0 || files.some((n) => statSync(join(c.dir, n)).size > 65536)) continue;
    out.push({
      name: c.name,
      metadata: readFileSync(join(c.dir, 'metadata')),
      streams: files.map((n) => ({ path: join(c.dir, n), data: readFileSync(join(c.dir, n)) })),
    });
  }
  return out;
}

/** Applies a list of edits to bytes: overwrite a byte, write an extreme 32-bit word, cut, or duplicate a range. */
const edits = fc.array(
  fc.oneof(
    fc.record({ kind: fc.constant('byte' as const), at: fc.nat(), value: fc.nat(255) }),
    fc.record({
      kind: fc.constant('word' as const),
      at: fc.nat(),
      value: fc.constantFrom(0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 0xc1fc1fc1),
    }),
    fc.record({ kind: fc.constant('cut' as const), at: fc.nat(), value: fc.nat() }),
    fc.record({ kind: fc.constant('dup' as const), at: fc.nat(), value: fc.nat(64) }),
  ),
  { minLength: 1, maxLength: 4 },
);

function mutate(data: Uint8Array, list: readonly { kind: string; at: number; value: number }[]): Uint8Array {
  let out = Uint8Array.from(data);
  for (const e of list) {
    if (out.length === 0) break;
    const at = e.at % out.length;
    if (e.kind === 'byte') out[at] = e.value;
    else if (e.kind === 'word') {
      for (let i = 0; i < 4 && at + i < out.length; i++) out[at + i] = (e.value >>> (8 * i)) & 0xff;
    } else if (e.kind === 'cut') out = Uint8Array.from([...out.subarray(0, at), ...out.subarray(at + (e.value % 64))]);
    else out = Uint8Array.from([...out.subarray(0, at + e.value), ...out.subarray(at)]);
  }
  return out;
}

/** Drains a reader, returning the events' payloads; only TraceFormatError may escape. */
function drain(data: CtfTraceData, lenient: boolean): { events: unknown[]; error?: TraceFormatError } {
  const events: unknown[] = [];
  try {
    const reader = readCtfTrace(data, { lenient });
    for (const e of reader.events()) {
      events.push(e.fields);
      if (events.length > 1_000_000) throw new Error('runaway event count');
    }
    return { events };
  } catch (error) {
    if (!(error instanceof TraceFormatError)) throw error;
    return { events, error };
  }
}

describe.skipIf(!fixtures)(
  `fuzzing the CTF decoders with mutated fixtures${fixtures ? '' : ' (skipped: ../shared/fixtures absent)'}`,
  () => {
    const traces = loadTraces();

    it('has real traces to mutate', () => {
      expect(traces.length).toBeGreaterThan(10);
    });

    it('TSDL parser: any edit of real metadata parses or throws a located ERR_TRACE_TSDL', () => {
      const texts = traces.filter((t) => !isCtf2Metadata(t.metadata)).map((t) => readMetadataText(t.metadata).text);
      fc.assert(
        fc.property(fc.nat(texts.length - 1), edits, fc.string({ maxLength: 8 }), (i, list, insert) => {
          const bytes = mutate(new TextEncoder().encode(texts[i]!), list);
          const text = new TextDecoder().decode(bytes);
          const at = list[0]!.at % (text.length + 1);
          for (const t of [text, text.slice(0, at) + insert + text.slice(at)]) {
            try {
              parseTsdl(t, { file: 'fuzz.tsdl' });
            } catch (error) {
              expect(error).toBeInstanceOf(TraceFormatError);
              const e = error as TraceFormatError;
              expect(e.code).toBe('ERR_TRACE_TSDL');
              expect(e.message.startsWith('fuzz.tsdl')).toBe(true);
            }
          }
        }),
        { numRuns: 400 },
      );
    });

    it('packet decoder: mutated streams decode or throw ERR_TRACE_CTF_PACKET with file and offset, never hang', () => {
      const heapBefore = process.memoryUsage().heapUsed;
      fc.assert(
        fc.property(fc.nat(traces.length - 1), fc.nat(), edits, (i, s, list) => {
          const t = traces[i]!;
          const k = s % t.streams.length;
          const streams = t.streams.map((st, j) => (j === k ? { path: st.path, data: mutate(st.data, list) } : st));
          const { error } = drain({ metadata: t.metadata, streams }, false);
          if (error) {
            expect(['ERR_TRACE_CTF_PACKET', 'ERR_TRACE_TSDL']).toContain(error.code);
            if (error.code === 'ERR_TRACE_CTF_PACKET') {
              expect(error.location.file).toBe(t.streams[k]!.path);
              expect(typeof error.location.offset).toBe('number');
            }
          }
        }),
        { numRuns: 300 },
      );
      // No mutation may make the decoder allocate without bound (sequence lengths are checked against the packet).
      expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(256 << 20);
    });

    it('lenient mode keeps every event read before a corrupt packet and never throws on packets', () => {
      const single = traces.filter((t) => t.streams.length === 1);
      fc.assert(
        fc.property(fc.nat(single.length - 1), edits, (i, list) => {
          const t = single[i]!;
          const streams = [{ path: t.streams[0]!.path, data: mutate(t.streams[0]!.data, list) }];
          const strict = drain({ metadata: t.metadata, streams }, false);
          const lenient = drain({ metadata: t.metadata, streams }, true);
          expect(lenient.error?.code).not.toBe('ERR_TRACE_CTF_PACKET');
          // Everything strict mode delivered before failing comes first, unchanged, in lenient mode.
          expect(lenient.events.slice(0, strict.events.length)).toEqual(strict.events);
        }),
        { numRuns: 200 },
      );
    });

    it('LTTng index files: mutated indexes parse or throw a located ERR_TRACE_CTF_PACKET', () => {
      const dir = join(fixtures!, 'ctf-babeltrace-v2.0.4/tests/data/ctf-traces/succeed/multi-domains/ust/index');
      const indexes = readdirSync(dir).map((n) => readFileSync(join(dir, n)));
      fc.assert(
        fc.property(fc.nat(indexes.length - 1), edits, (i, list) => {
          try {
            parseLttngIndex(mutate(indexes[i]!, list), 'x.idx');
          } catch (error) {
            expect(error).toBeInstanceOf(TraceFormatError);
            expect((error as TraceFormatError).location).toMatchObject({ file: 'x.idx', offset: expect.any(Number) });
          }
        }),
        { numRuns: 200 },
      );
    });

    it('CTF 2 metadata: mutated JSON fragments translate or throw ERR_TRACE_TSDL', () => {
      const dir = join(fixtures!, 'ctf-tracecompass/ctf/src/main/resources');
      const texts = readdirSync(dir)
        .filter((n) => n.startsWith('CTF2'))
        .map((n) => readFileSync(join(dir, n, 'metadata')));
      fc.assert(
        fc.property(fc.nat(texts.length - 1), edits, (i, list) => {
          try {
            parseCtf2Metadata(new TextDecoder().decode(mutate(texts[i]!, list)), 'm.json');
          } catch (error) {
            expect(error).toBeInstanceOf(TraceFormatError);
            expect((error as TraceFormatError).code).toBe('ERR_TRACE_TSDL');
          }
        }),
        { numRuns: 300 },
      );
    });

    it('metadata packets: mutated packetized metadata is read or rejected with ERR_TRACE_TSDL', () => {
      const packetized = traces.filter((t) => t.metadata[0] === 0x57 && t.metadata[1] === 0x1d);
      expect(packetized.length).toBeGreaterThan(0);
      fc.assert(
        fc.property(fc.nat(packetized.length - 1), edits, (i, list) => {
          try {
            readMetadataText(mutate(packetized[i]!.metadata, list), 'metadata');
          } catch (error) {
            expect(error).toBeInstanceOf(TraceFormatError);
            expect((error as TraceFormatError).location.offset).toBeTypeOf('number');
          }
        }),
        { numRuns: 200 },
      );
    });
  },
);
