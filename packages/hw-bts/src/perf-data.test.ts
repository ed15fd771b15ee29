import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BranchList } from './branch.ts';
import { BtsError } from './errors.ts';
import { detectHardware } from './hardware.ts';
import { decodePerfData } from './perf-data.ts';
import { writeBranchPerfData } from './testing/perf-data-writer.ts';
import { hasTool } from './testing/programs.ts';

/** A perf.data laid out as perf's perf.data-file-format.txt describes, with one AUXTRACE_INFO and AUXTRACE payloads. */
function perfData(auxType: number, payloads: { cpu: number; tid: number; bytes: Uint8Array }[]): Uint8Array {
  const records: Uint8Array[] = [];
  const info = new Uint8Array(16);
  const iv = new DataView(info.buffer);
  iv.setUint32(0, 70, true);
  iv.setUint16(6, 16, true);
  iv.setUint32(8, auxType, true);
  records.push(info);
  for (const p of payloads) {
    const h = new Uint8Array(48);
    const v = new DataView(h.buffer);
    v.setUint32(0, 71, true);
    v.setUint16(6, 48, true);
    v.setBigUint64(8, BigInt(p.bytes.length), true);
    v.setUint32(36, p.tid, true);
    v.setUint32(40, p.cpu, true);
    records.push(h, p.bytes);
  }
  const dataSize = records.reduce((n, r) => n + r.length, 0);
  const out = new Uint8Array(104 + dataSize);
  const v = new DataView(out.buffer);
  out.set(new TextEncoder().encode('PERFILE2'), 0);
  v.setBigUint64(8, 104n, true);
  v.setBigUint64(40, 104n, true);
  v.setBigUint64(48, BigInt(dataSize), true);
  let o = 104;
  for (const r of records) {
    out.set(r, o);
    o += r.length;
  }
  return out;
}

function bts(from: bigint, to: bigint): Uint8Array {
  const b = new Uint8Array(24);
  const v = new DataView(b.buffer);
  v.setBigUint64(0, from, true);
  v.setBigUint64(8, to, true);
  v.setBigUint64(16, 0x10n, true);
  return b;
}

describe('perf.data with intel_bts AUX data', () => {
  it('decodes each AUXTRACE payload as BTS records stamped with its CPU and thread', () => {
    const file = perfData(2, [
      { cpu: 1, tid: 42, bytes: bts(0x401000n, 0x401100n) },
      { cpu: 3, tid: 43, bytes: new Uint8Array([...bts(0x402000n, 0x402100n), ...bts(0x402200n, 0x402300n)]) },
    ]);
    const d = decodePerfData(file);
    expect(d.problems).toEqual([]);
    expect(d.branches.toArray().map((b) => [b.from, b.cpu, b.tid])).toEqual([
      [0x401000n, 1, 42],
      [0x402000n, 3, 43],
      [0x402200n, 3, 43],
    ]);
  });

  it('refuses Intel PT AUX data by name and reports a cut payload at its byte offset', () => {
    expect(() => decodePerfData(perfData(1, []))).toThrow(/Intel PT, not Intel BTS/);
    const file = perfData(2, [{ cpu: 0, tid: 1, bytes: new Uint8Array([...bts(1n, 2n), ...bts(3n, 4n)]) }]);
    const cut = file.subarray(0, file.length - 20);
    new DataView(cut.buffer, cut.byteOffset).setBigUint64(48, BigInt(cut.length - 104), true);
    const d = decodePerfData(cut, { source: 'p.data' });
    expect(d.branches.length).toBe(1);
    expect(d.problems.map((p) => p.code)).toEqual(['ERR_BTS_TRUNCATED', 'ERR_BTS_TRUNCATED']);
    expect(d.problems[0]!.offset).toBe(104 + 16 + 48 + 24);
    expect(d.problems[0]!.location).toEqual({ file: 'p.data', offset: 104 + 16 + 48 + 24 });
    expect(d.problems[0]!.message).toBe(
      `p.data: byte ${104 + 16 + 48 + 24}: truncated 24-byte BTS record: 4 bytes at the end (1 whole records kept)`,
    );
  });

  it('names a record that is no BTS record at its offset in the file, not in its payload', () => {
    const file = perfData(2, [{ cpu: 0, tid: 1, bytes: new Uint8Array([...bts(1n, 2n), ...bts(1n << 60n, 4n)]) }]);
    let caught: unknown;
    try {
      decodePerfData(file, { source: 'p.data' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(BtsError);
    expect((caught as BtsError).code).toBe('ERR_BTS_FORMAT');
    expect((caught as BtsError).location).toEqual({ file: 'p.data', offset: 104 + 16 + 48 + 24 });
    expect((caught as BtsError).message).toMatch(/^p\.data: byte 192: not a BTS record: from 0x1000000000000000 /);
  });

  it.skipIf(!hasTool('perf'))('reads a real perf.data without AUX data and says so', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hw-bts-perf-'));
    const out = join(dir, 'perf.data');
    execFileSync('perf', ['record', '-q', '-e', 'cpu-clock', '-o', out, '--', 'true'], { stdio: 'ignore' });
    const d = decodePerfData(readFileSync(out));
    expect(d.branches.length).toBe(0);
    expect(d.problems).toEqual([]);
    expect(d.notes).toContain(
      'no AUXTRACE data and no branch stacks in this perf.data (recorded without -e intel_bts// or -b)',
    );
  });

  it('fuzz: mutated perf.data gives only typed errors', () => {
    const file = perfData(2, [{ cpu: 0, tid: 1, bytes: new Uint8Array([...bts(1n, 2n), ...bts(3n, 4n)]) }]);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(file.length - 1), fc.nat(255)), { maxLength: 8 }),
        fc.nat(file.length),
        (edits, len) => {
          const b = Uint8Array.from(file.subarray(0, Math.max(len, 8)));
          for (const [at, v] of edits) if (at < b.length) b[at] = v;
          try {
            for (const p of decodePerfData(b).problems) expect(p).toBeInstanceOf(BtsError);
          } catch (error) {
            expect(error).toBeInstanceOf(BtsError);
          }
        },
      ),
    );
  });
});

describe('hardware detection', () => {
  it('agrees with sysfs about intel_bts and says why capture cannot run without it', () => {
    const hw = detectHardware();
    let pmus: string[] = [];
    try {
      pmus = execFileSync('ls', ['/sys/bus/event_source/devices'], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean)
        .sort();
    } catch {}
    expect(hw.pmus).toEqual(pmus);
    expect(hw.bts).toBe(pmus.includes('intel_bts'));
    if (!hw.bts) expect(hw.why).toMatch(/no intel_bts PMU in \/sys\/bus\/event_source\/devices \(present: /);
    expect(detectHardware('/nonexistent').why).toMatch(/cannot list \/nonexistent: ENOENT/);
  });
});

describe('perf.data with branch stacks (perf record -b)', () => {
  const list = new BranchList();
  for (let i = 0; i < 40; i++)
    list.add(0x401000n + BigInt(i), 0x402000n + BigInt(i), { kind: i % 2 ? 'call' : 'return', flags: 2 });
  const path = join(mkdtempSync(join(tmpdir(), 'hw-bts-stacks-')), 'perf.data');
  writeBranchPerfData(path, {
    exe: '/bin/true',
    mapStart: 0x400000n,
    mapLength: 0x1000n,
    pgoff: 0n,
    pid: 7,
    comm: 't',
    branches: list,
    perStack: 16,
  });
  const file = readFileSync(path);

  it('reads every stack oldest first with kinds, flags and the sample task', () => {
    const d = decodePerfData(file);
    expect(d.problems).toEqual([]);
    expect(d.branches.toArray().map((b) => [b.from, b.to, b.kind, b.flags, b.tid])).toEqual(
      list.toArray().map((b) => [b.from, b.to, b.kind, b.flags, 7]),
    );
  });

  it('fuzz: mutated or cut files give only typed errors', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(file.length - 1), fc.nat(255)), { maxLength: 8 }),
        fc.nat(file.length),
        (edits, len) => {
          const b = Uint8Array.from(file.subarray(0, Math.max(len, 8)));
          for (const [at, v] of edits) if (at < b.length) b[at] = v;
          try {
            for (const p of decodePerfData(b).problems) expect(p).toBeInstanceOf(BtsError);
          } catch (error) {
            expect(error).toBeInstanceOf(BtsError);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
