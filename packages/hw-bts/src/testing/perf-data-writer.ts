/**
 * Test and benchmark support: writes a perf.data file (perf's perf.data-file-format.txt, uapi perf_event.h) whose
 * samples carry branch stacks (PERF_SAMPLE_BRANCH_STACK), as `perf record -b` writes on a machine with LBR. This
 * machine has none, so the branches come from a real program run under QEMU; perf itself then prints them with
 * `perf script -F brstack`, and resolves their symbols from the program's ELF through the MMAP record.
 */
import { writeFileSync } from 'node:fs';
import { BranchFlag, type BranchList } from '../branch.ts';

const SAMPLE_IP = 1 << 0;
const SAMPLE_TID = 1 << 1;
const SAMPLE_TIME = 1 << 2;
const SAMPLE_CPU = 1 << 7;
const SAMPLE_PERIOD = 1 << 8;
const SAMPLE_BRANCH_STACK = 1 << 11;
const BRANCH_ANY = 1 << 3;
const RECORD_MMAP = 1;
const RECORD_COMM = 3;
const RECORD_SAMPLE = 9;
const ATTR_SIZE = 128;
const RECORD_MISC_USER = 2;

/** perf's branch type numbers (PERF_BR_*) for our kinds. */
const PERF_BR: Readonly<Record<string, number>> = {
  unknown: 0,
  cond: 1,
  jump: 2,
  ind_jump: 3,
  call: 4,
  ind_call: 5,
  return: 6,
  syscall: 7,
  sysret: 8,
  irq: 12,
};

class Out {
  buf = new Uint8Array(1 << 16);
  view = new DataView(this.buf.buffer);
  len = 0;
  ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const b = new Uint8Array(Math.max(this.buf.length * 2, this.len + n));
    b.set(this.buf.subarray(0, this.len));
    this.buf = b;
    this.view = new DataView(b.buffer);
  }
  u16(v: number): void {
    this.ensure(2);
    this.view.setUint16(this.len, v, true);
    this.len += 2;
  }
  u32(v: number): void {
    this.ensure(4);
    this.view.setUint32(this.len, v, true);
    this.len += 4;
  }
  u64(v: bigint | number): void {
    this.ensure(8);
    this.view.setBigUint64(this.len, BigInt(v), true);
    this.len += 8;
  }
  /** A NUL-terminated string padded to a multiple of 8 bytes. */
  str(s: string): void {
    const b = new TextEncoder().encode(s);
    const n = (b.length + 8) & ~7;
    this.ensure(n);
    this.buf.fill(0, this.len, this.len + n);
    this.buf.set(b, this.len);
    this.len += n;
  }
  u64At(at: number, v: bigint | number): void {
    this.view.setBigUint64(at, BigInt(v), true);
  }
  u16At(at: number, v: number): void {
    this.view.setUint16(at, v, true);
  }
}

export interface PerfDataSpec {
  /** The program's path, a mapping of it (start, length, file offset), for perf's symbol lookups. */
  readonly exe: string;
  readonly mapStart: bigint;
  readonly mapLength: bigint;
  readonly pgoff: bigint;
  readonly pid: number;
  readonly comm: string;
  /** Branches oldest first; `perStack` of them per sample, stored newest first as LBR does. */
  readonly branches: BranchList;
  readonly perStack: number;
}

/** Writes the perf.data file; returns the number of samples. */
export function writeBranchPerfData(path: string, spec: PerfDataSpec): number {
  const o = new Out();
  // Header: magic, size, attr_size, attrs, data, event_types, feature bits (none).
  o.str('PERFILE'); // 7 chars + NUL = 8 bytes, then fix the last byte
  o.buf[7] = 0x32; // "PERFILE2"
  o.u64(104);
  o.u64(ATTR_SIZE + 16);
  const attrsAt = o.len;
  o.u64(0);
  o.u64(0);
  const dataAt = o.len;
  o.u64(0);
  o.u64(0);
  o.u64(0);
  o.u64(0);
  for (let i = 0; i < 4; i++) o.u64(0);
  // One perf_file_attr: perf_event_attr (128 bytes) + an empty ids section.
  const attrStart = o.len;
  o.u32(0); // PERF_TYPE_HARDWARE
  o.u32(ATTR_SIZE);
  o.u64(0); // cycles
  o.u64(1); // sample_period
  o.u64(SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU | SAMPLE_PERIOD | SAMPLE_BRANCH_STACK);
  o.u64(0); // read_format
  o.u64(1n << 5n); // flags: exclude_kernel
  o.u32(0);
  o.u32(0);
  o.u64(0);
  o.u64(0);
  o.u64(BRANCH_ANY | 1); // branch_sample_type: any, user
  while (o.len < attrStart + ATTR_SIZE) o.u64(0);
  o.u64(0);
  o.u64(0);
  const attrEnd = o.len;
  const dataStart = o.len;
  // COMM and MMAP for the task, so perf can name the program and resolve its symbols.
  const rec = (type: number, body: () => void) => {
    const at = o.len;
    o.u32(type);
    o.u16(RECORD_MISC_USER);
    o.u16(0);
    body();
    o.u16At(at + 6, o.len - at);
  };
  rec(RECORD_COMM, () => {
    o.u32(spec.pid);
    o.u32(spec.pid);
    o.str(spec.comm);
  });
  rec(RECORD_MMAP, () => {
    o.u32(spec.pid);
    o.u32(spec.pid);
    o.u64(spec.mapStart);
    o.u64(spec.mapLength);
    o.u64(spec.pgoff);
    o.str(spec.exe);
  });
  const list = spec.branches;
  let samples = 0;
  for (let first = 0; first < list.length; first += spec.perStack) {
    const last = Math.min(list.length, first + spec.perStack) - 1;
    rec(RECORD_SAMPLE, () => {
      o.u64((BigInt(list.toHi[last]!) << 32n) | BigInt(list.toLo[last]!)); // ip: where the newest branch went
      o.u32(spec.pid);
      o.u32(spec.pid);
      o.u64(1_000_000_000 + samples * 1000);
      o.u32(0); // cpu
      o.u32(0);
      o.u64(1); // period
      o.u64(last - first + 1);
      for (let i = last; i >= first; i--) {
        o.u64((BigInt(list.fromHi[i]!) << 32n) | BigInt(list.fromLo[i]!));
        o.u64((BigInt(list.toHi[i]!) << 32n) | BigInt(list.toLo[i]!));
        const f = list.flags[i]!;
        const flags =
          ((f & BranchFlag.mispredicted) !== 0 ? 1n : 0n) |
          ((f & BranchFlag.predicted) !== 0 ? 2n : 0n) |
          (BigInt(list.cycles[i]! > 0 ? list.cycles[i]! & 0xffff : 0) << 4n) |
          (BigInt(PERF_BR[list.kindOf(i)] ?? 0) << 20n);
        o.u64(flags);
      }
    });
    samples++;
  }
  o.u64At(attrsAt, attrStart);
  o.u64At(attrsAt + 8, attrEnd - attrStart);
  o.u64At(dataAt, dataStart);
  o.u64At(dataAt + 8, o.len - dataStart);
  writeFileSync(path, o.buf.subarray(0, o.len));
  return samples;
}
