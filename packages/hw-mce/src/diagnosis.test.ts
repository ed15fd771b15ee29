/**
 * The one-line headline, the class and the advice tell one story, for every vendor: the headline names the class, and
 * the advice names the part that class means — a DIMM for memory errors, the CPU for cache, TLB and internal errors,
 * the link or device for bus and I/O errors, the cooling for thermal events. Checked over random registers of Intel,
 * AMD (every SMCA bank type, families 0Fh-1Ah), Hygon and other vendors.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SMCA_IPIDS } from './amd.ts';
import { cpuidOf } from './cpu.ts';
import { type DecodedMce, decodeMce } from './decode.ts';
import type { ErrorClass } from './mca-code.ts';
import { emptyRecord } from './record.ts';

/** The class as the headline words it, and what the advice must name. */
const STORY: Readonly<Record<ErrorClass, readonly [headline: string, part: RegExp]>> = {
  'memory-controller': [' memory error', /DIMM/],
  cache: [' cache error', /the CPU in this socket/],
  tlb: [' TLB error', /the CPU in this socket/],
  internal: [' internal (CPU core/uncore) error', /the CPU in this socket/],
  bus: [' bus/interconnect error', /the link or device/],
  io: [' I/O error', /the link or device/],
  generic: [' generic error', /the part named above/],
  unknown: [' unclassified error', /the part named above/],
  thermal: ['trip temperature', /cooling/],
};

function agrees(d: DecodedMce): string | undefined {
  const [headline, part] = STORY[d.class];
  if (!d.summary.includes(headline)) return `class ${d.class}, headline '${d.summary}'`;
  if (!part.test(d.advice)) return `class ${d.class}, advice '${d.advice}'`;
  const others = Object.entries(STORY).filter(([c, [, p]]) => c !== d.class && p.source !== part.source);
  for (const [c, [, p]] of others) if (p.test(d.advice)) return `class ${d.class}, advice names ${c}'s part`;
  return undefined;
}

const ipids = [...SMCA_IPIDS.keys()].map((k) => (BigInt(k & 0xffff) << 48n) | (BigInt(k >>> 16) << 32n));

const record = fc
  .record({
    vendor: fc.constantFrom(0, 2, 9, 5),
    family: fc.constantFrom(6, 0xf, 0x10, 0x11, 0x15, 0x16, 0x17, 0x19, 0x1a),
    model: fc.integer({ min: 0, max: 0xff }),
    bank: fc.oneof(fc.integer({ min: 0, max: 31 }), fc.constant(128)),
    status: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
    ipid: fc.oneof(fc.constantFrom(...ipids, 0n), fc.bigInt({ min: 0n, max: (1n << 64n) - 1n })),
    instance: fc.integer({ min: 0, max: 0xffffffff }),
    synd: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
    misc: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
    mcgcap: fc.constantFrom(0n, 0x1000c14n, 0x7000c16n),
  })
  .map((r) =>
    Object.assign(emptyRecord({ kind: 'mcelog-ascii' }), {
      cpuvendor: r.vendor,
      cpuid: cpuidOf(r.vendor === 0 ? (r.family === 6 ? 6 : 0xf) : r.family, r.model),
      bank: r.bank,
      status: r.status | (1n << 63n),
      ipid: r.ipid | BigInt(r.instance),
      synd: r.synd,
      misc: r.misc,
      mcgcap: r.mcgcap,
    }),
  );

describe('headline, class and advice agree', () => {
  it('for random registers of every vendor and AMD bank type', () => {
    fc.assert(
      fc.property(record, (r) => {
        expect(agrees(decodeMce(r))).toBeUndefined();
      }),
      { numRuns: 3000 },
    );
  });
});
