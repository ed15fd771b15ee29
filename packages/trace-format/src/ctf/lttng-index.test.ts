import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import { sharedFixtures } from './fixtures.ts';
import { parseLttngIndex } from './lttng-index.ts';
import { openCtfTrace } from './reader.ts';

const fixtures = sharedFixtures();
const trace = fixtures && join(fixtures, 'ctf-babeltrace-v2.0.4/tests/data/ctf-traces/succeed/2packets');
const root = mkdtempSync(join(tmpdir(), 'evtrace-lttng-index-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe.skipIf(!trace)(`LTTng index files${trace ? '' : ' (skipped: ../shared/fixtures absent)'}`, () => {
  it('lists the packets of a real LTTng index', () => {
    const entries = parseLttngIndex(readFileSync(join(trace!, 'index/channel0_2.idx')));
    expect(entries.map((e) => [e.offset, e.packetSize, e.contentSize])).toEqual([
      [0, 32768, 952],
      [4096, 32768, 952],
    ]);
    expect(entries[0]!.timestampBegin < entries[0]!.timestampEnd).toBe(true);
  });

  it('rejects a stream whose packets disagree with its index, and a malformed index', () => {
    const dir = join(root, 'bad-index');
    cpSync(trace!, dir, { recursive: true });
    const idx = join(dir, 'index/channel0_2.idx');
    const data = readFileSync(idx);
    data.writeBigUInt64BE(900n, 16 + 72 + 16); // second entry's content size
    writeFileSync(idx, data);
    expect(() => [...openCtfTrace(dir).events()]).toThrow(
      /packet 2 \(32768 bits, content 952\) disagrees with the index/,
    );
    writeFileSync(idx, data.subarray(0, 30));
    expect(() => openCtfTrace(dir)).toThrow(TraceFormatError);
    expect(() => parseLttngIndex(Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12), 'x.idx')).toThrow(
      'x.idx: byte 0: index: bad magic',
    );
  });
});
