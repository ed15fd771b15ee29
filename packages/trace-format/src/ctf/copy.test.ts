import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import type { EventClass, IntegerClass } from '../model/types.ts';
import { createJsonFormatter } from '../output/json.ts';
import { copiesAsWritten } from './copy.ts';
import { ctfFixtureCases, sharedFixtures } from './fixtures.ts';
import { type CtfTraceReader, openCtfTrace, readCtfTrace } from './reader.ts';
import { createBabeltraceTextFormatter } from './text.ts';
import { createCtfWriter } from './writer.ts';

const fixtures = sharedFixtures();
const root = mkdtempSync(join(tmpdir(), 'evtrace-ctf-copy-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const textOf = (reader: CtfTraceReader) => {
  const f = createBabeltraceTextFormatter({ trace: reader.trace, timestamps: reader.timestamped });
  return Array.from(reader.events(), f);
};

/** Every data file of a trace directory, by name. */
const filesOf = (dir: string) =>
  Object.fromEntries(
    readdirSync(dir)
      .filter((n) => statSync(join(dir, n)).isFile())
      .map((n) => [n, readFileSync(join(dir, n))]),
  );

const u64: IntegerClass = {
  kind: 'int',
  size: 64,
  signed: false,
  align: 8,
  byteOrder: 'le',
  base: 10,
  encoding: 'none',
};
const tick: EventClass = {
  id: 0,
  name: 'demo:tick',
  streamId: 0,
  payload: { kind: 'struct', minAlign: 1, members: [{ name: 'count', type: u64 }] },
};

/** A trace of `n` events on two CPUs in packets of 256 bytes (about 18 events each). */
function written(name: string, n: number): string {
  const dir = join(root, name);
  const writer = createCtfWriter(dir, { packetSize: 256, env: { hostname: 'copy' } });
  for (let i = 0; i < n; i++)
    writer.writeEvent({
      eventClass: tick,
      tsNs: 10n ** 18n + BigInt(i * 1000),
      cpu: i % 2,
      fields: { count: BigInt(i) },
    });
  writer.close();
  return dir;
}

describe('copying a CTF trace packet by packet', () => {
  it('gives the same files, read as the same events, and counts them', () => {
    const dir = written('whole', 500);
    const out = join(root, 'whole.copy');
    expect(openCtfTrace(dir).copy(out)).toBe(500);
    expect(filesOf(out)).toEqual(filesOf(dir));
    expect(textOf(openCtfTrace(out))).toEqual(textOf(openCtfTrace(dir)));
    // Owner only, as every output.
    expect(statSync(out).mode & 0o777).toBe(0o700);
  });

  it('a corrupt packet: strictly, the error names the file and byte offset and nothing is written', () => {
    const dir = written('corrupt', 200);
    const stream = join(dir, 'stream_0');
    const bytes = readFileSync(stream);
    // The third packet's magic.
    bytes.fill(0, 512, 516);
    writeFileSync(stream, bytes);
    const out = join(root, 'corrupt.copy');
    let error: unknown;
    try {
      openCtfTrace(dir).copy(out);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(TraceFormatError);
    expect((error as TraceFormatError).code).toBe('ERR_TRACE_CTF_PACKET');
    expect((error as TraceFormatError).location).toMatchObject({ file: stream, offset: 512 });
    expect(existsSync(out)).toBe(false);
    // Read leniently: the packet is left out, with its events, and said; the copy reads strictly.
    const reader = openCtfTrace(dir, { lenient: true });
    const n = reader.copy(out)!;
    expect(reader.warnings.join('\n')).toMatch(/skipped corrupt packet 3 at byte 512/);
    const copy = [...openCtfTrace(out).events()];
    expect(copy).toHaveLength(n);
    // The packet's header is what is corrupt: a lenient read leaves out the same events.
    const json = createJsonFormatter();
    expect(copy.map(json)).toEqual([...openCtfTrace(dir, { lenient: true }).events()].map(json));
    expect(n).toBeLessThan(200);
    expect(statSync(join(out, 'stream_0')).size).toBe(bytes.length - 256);
  });

  it('mutated traces read leniently: the copy reads strictly, its events among the lenient read, in order per stream', () => {
    const dir = written('mutated', 300);
    const original = filesOf(dir);
    let k = 0;
    fc.assert(
      fc.property(
        fc.array(fc.record({ at: fc.nat(), value: fc.nat(255) }), { minLength: 1, maxLength: 3 }),
        (edits) => {
          const data = Uint8Array.from(original.stream_0!);
          for (const e of edits) data[e.at % data.length] = e.value;
          const input = {
            metadata: original.metadata!,
            streams: [
              { path: 'stream_0', data },
              { path: 'stream_1', data: original.stream_1! },
            ],
          };
          let reader: CtfTraceReader;
          try {
            reader = readCtfTrace(input, { lenient: true });
          } catch {
            return;
          }
          const out = join(root, `m${k++}`);
          reader.copy(out);
          const json = createJsonFormatter();
          const copied = [...openCtfTrace(out).events()].map(json);
          const lenient = [...readCtfTrace(input, { lenient: true }).events()].map(json);
          // In order per stream (CPU): a mutated time can make a stream go back in time, and streams that do are
          // merged in an order that depends on which of their packets are there.
          const byCpu = (lines: string[], cpu: number) => lines.filter((l) => JSON.parse(l).cpu === cpu);
          for (const cpu of [0, 1]) {
            const theirs = byCpu(lenient, cpu);
            let at = 0;
            for (const line of byCpu(copied, cpu)) {
              while (at < theirs.length && theirs[at] !== line) at++;
              expect(at).toBeLessThan(theirs.length);
              at++;
            }
          }
          rmSync(out, { recursive: true });
        },
      ),
      // The first case found a stream whose mutated times went back (fixed here).
      {
        numRuns: 60,
        examples: [
          [
            [
              { at: 2210, value: 0 },
              { at: 2244, value: 1 },
            ],
          ],
        ],
      },
    );
  });
});

describe.skipIf(!fixtures)(`copying the fixtures${fixtures ? '' : ' (skipped: ../shared/fixtures absent)'}`, () => {
  const cases = fixtures ? ctfFixtureCases(fixtures).succeed : [];
  for (const c of cases) {
    it(`${c.name}: copied as it is when nothing would be added, else left to the writer`, () => {
      const out = join(root, c.name.replace(/\//g, '_'));
      const reader = openCtfTrace(c.dir);
      const n = reader.copy(out);
      if (!copiesAsWritten(reader.trace)) {
        expect(n).toBeUndefined();
        expect(existsSync(out)).toBe(false);
        return;
      }
      const source = filesOf(c.dir);
      expect(filesOf(out)).toEqual(source);
      expect(textOf(openCtfTrace(out))).toEqual(textOf(openCtfTrace(c.dir)));
    });
  }

  it('copies some of them', () => {
    expect(cases.filter((c) => copiesAsWritten(openCtfTrace(c.dir).trace)).length).toBeGreaterThan(5);
  });
});
