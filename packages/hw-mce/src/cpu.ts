/**
 * Which CPU reported a record: vendor, family, model and stepping from CPUID leaf 1 EAX (Intel SDM vol. 2A, CPUID;
 * AMD APM vol. 3), and the model-specific decoder that applies. The Intel model numbers are those of the Intel SDM
 * vol. 4 and of mcelog's CPU table; `--cpu NAME` takes the names listed in {@link CPU_TYPES}.
 */
import { MceError } from './errors.ts';
import { X86_VENDOR } from './record.ts';

/** Model-specific decoders. `intel` decodes only the architecture; `zen` is AMD Scalable MCA. */
export type CpuKind =
  | 'p6old'
  | 'core2'
  | 'p4'
  | 'tulsa'
  | 'nehalem'
  | 'dunnington'
  | 'xeon75xx'
  | 'sandybridge'
  | 'sandybridge-ep'
  | 'ivybridge'
  | 'ivybridge-ep'
  | 'haswell'
  | 'haswell-ep'
  | 'broadwell'
  | 'broadwell-de'
  | 'broadwell-ep'
  | 'knightslanding'
  | 'knightsmill'
  | 'skylake'
  | 'skylake-server'
  | 'icelake-server'
  | 'icelake-d'
  | 'snowridge'
  | 'sapphirerapids'
  | 'emeraldrapids'
  | 'graniterapids'
  | 'sierraforest'
  | 'clearwaterforest'
  | 'diamondrapids'
  | 'denverton'
  | 'atom'
  | 'intel-client'
  | 'intel'
  | 'k8'
  | 'amd-fam10h'
  | 'zen'
  | 'amd'
  | 'generic';

export interface CpuInfo {
  /** `intel`, `amd`, another vendor's name, or `unknown` when the record did not say. */
  readonly vendor: string;
  /** Display family and model (extended fields folded in as the SDM says); undefined when CPUID is unknown. */
  readonly family: number | undefined;
  readonly model: number | undefined;
  readonly stepping: number | undefined;
  readonly kind: CpuKind;
  /** Human name, e.g. "Skylake server". */
  readonly name: string;
  /** Set when the decoder fell back to the architecture only, and why. */
  readonly unknown?: string;
  /** Forced with `--cpu`. */
  readonly forced?: boolean;
}

const VENDOR_NAMES: Readonly<Record<number, string>> = {
  0: 'intel',
  1: 'cyrix',
  2: 'amd',
  3: 'umc',
  5: 'centaur',
  7: 'transmeta',
  8: 'nsc',
  9: 'hygon',
  10: 'zhaoxin',
};

/**
 * Family, model and stepping of CPUID.1:EAX. The extended family adds to a base family of 0xF; the extended model is
 * the model's high nibble when the base family is 6 or 0xF (so also for families above 0xF, whose base is 0xF).
 */
export function parseCpuid(eax: number): { family: number; model: number; stepping: number } {
  const stepping = eax & 0xf;
  const baseModel = (eax >>> 4) & 0xf;
  const baseFamily = (eax >>> 8) & 0xf;
  const extModel = (eax >>> 16) & 0xf;
  const extFamily = (eax >>> 20) & 0xff;
  const family = baseFamily === 0xf ? baseFamily + extFamily : baseFamily;
  const model = baseFamily === 6 || baseFamily === 0xf ? (extModel << 4) | baseModel : baseModel;
  return { family, model, stepping };
}

/** The inverse of {@link parseCpuid} for a family and model (stepping 0). */
export function cpuidOf(family: number, model: number, stepping = 0): number {
  const baseFamily = Math.min(family, 0xf);
  const extFamily = family >= 0xf ? family - 0xf : 0;
  return ((extFamily << 20) | ((model >> 4) << 16) | (baseFamily << 8) | ((model & 0xf) << 4) | stepping) >>> 0;
}

interface IntelEntry {
  readonly kind: CpuKind;
  readonly name: string;
  /** Family 6 model numbers, or (family << 8 | model) for families above 0xF. */
  readonly models: readonly number[];
  /** Names accepted by `--cpu`. */
  readonly aliases: readonly string[];
}

const INTEL: readonly IntelEntry[] = [
  {
    kind: 'p6old',
    name: 'Intel PPro/P2/P3/old Xeon',
    models: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
    aliases: ['p6old'],
  },
  {
    kind: 'core2',
    name: 'Intel Core 2',
    models: [0xf, 0x17],
    aliases: ['core2', 'xeon5100', 'xeon5200', 'xeon3100', 'xeon3200', 'xeon7200'],
  },
  {
    kind: 'dunnington',
    name: 'Intel Xeon 7400 (Dunnington)',
    models: [0x1d],
    aliases: ['dunnington', 'xeon7400', 'xeon74xx'],
  },
  {
    kind: 'nehalem',
    name: 'Nehalem/Westmere (Xeon 5500, Core i7)',
    models: [0x1a, 0x1e, 0x25, 0x2c],
    aliases: ['nehalem', 'westmere', 'xeon5500', 'core_i3', 'core_i5', 'core_i7'],
  },
  { kind: 'xeon75xx', name: 'Intel Xeon 7500 (Nehalem-EX)', models: [0x2e, 0x2f], aliases: ['xeon75xx', 'xeon7500'] },
  { kind: 'sandybridge', name: 'Sandy Bridge', models: [0x2a], aliases: ['sandybridge'] },
  { kind: 'sandybridge-ep', name: 'Sandy Bridge EP', models: [0x2d], aliases: ['sandybridge-ep'] },
  { kind: 'ivybridge', name: 'Ivy Bridge', models: [0x3a], aliases: ['ivybridge'] },
  {
    kind: 'ivybridge-ep',
    name: 'Ivy Bridge EP/EX (Xeon v2)',
    models: [0x3e],
    aliases: ['ivybridge-ep', 'ivybridge-ex', 'xeon-v2'],
  },
  { kind: 'haswell', name: 'Haswell', models: [0x3c, 0x45, 0x46], aliases: ['haswell'] },
  {
    kind: 'haswell-ep',
    name: 'Haswell EP/EX (Xeon v3)',
    models: [0x3f],
    aliases: ['haswell-ep', 'haswell-ex', 'xeon-v3'],
  },
  { kind: 'broadwell', name: 'Broadwell', models: [0x3d, 0x47], aliases: ['broadwell'] },
  { kind: 'broadwell-de', name: 'Broadwell DE (Xeon D)', models: [0x56], aliases: ['broadwell-d', 'broadwell-de'] },
  {
    kind: 'broadwell-ep',
    name: 'Broadwell EP/EX (Xeon v4)',
    models: [0x4f],
    aliases: ['broadwell-ep', 'broadwell-ex', 'xeon-v4'],
  },
  { kind: 'knightslanding', name: 'Knights Landing', models: [0x57], aliases: ['knightslanding'] },
  { kind: 'knightsmill', name: 'Knights Mill', models: [0x85], aliases: ['knightsmill'] },
  { kind: 'skylake', name: 'Skylake client', models: [0x4e, 0x5e], aliases: ['skylake'] },
  {
    kind: 'skylake-server',
    name: 'Skylake/Cascade Lake server',
    models: [0x55],
    aliases: ['skylake_server', 'cascadelake_server', 'skylake-server'],
  },
  { kind: 'icelake-server', name: 'Ice Lake server', models: [0x6a], aliases: ['icelake_server', 'icelake-server'] },
  { kind: 'icelake-d', name: 'Ice Lake D', models: [0x6c], aliases: ['icelake-d'] },
  { kind: 'snowridge', name: 'Tremont microserver (Snow Ridge)', models: [0x86], aliases: ['snowridge'] },
  {
    kind: 'sapphirerapids',
    name: 'Sapphire Rapids server',
    models: [0x8f],
    aliases: ['sapphirerapids_server', 'sapphirerapids'],
  },
  {
    kind: 'emeraldrapids',
    name: 'Emerald Rapids server',
    models: [0xcf],
    aliases: ['emeraldrapids_server', 'emeraldrapids'],
  },
  { kind: 'graniterapids', name: 'Granite Rapids', models: [0xad, 0xae], aliases: ['graniterapids'] },
  { kind: 'sierraforest', name: 'Sierra Forest', models: [0xaf], aliases: ['sierraforest'] },
  { kind: 'clearwaterforest', name: 'Clearwater Forest', models: [0xdd], aliases: ['clearwaterforest'] },
  {
    kind: 'diamondrapids',
    name: 'Diamond Rapids',
    models: [(0x13 << 8) | 0x01],
    aliases: ['diamond_rapids', 'diamondrapids'],
  },
  { kind: 'denverton', name: 'Denverton', models: [0x5f], aliases: ['denverton'] },
  {
    kind: 'atom',
    name: 'Atom',
    models: [0x1c, 0x26, 0x27, 0x35, 0x36, 0x37, 0x4a, 0x4c, 0x4d, 0x5a, 0x5d],
    aliases: ['atom'],
  },
  {
    kind: 'intel-client',
    name: 'Intel client (Kaby/Comet/Ice/Tiger/Alder/Raptor/Meteor/Arrow/Lunar/Panther Lake)',
    models: [
      0x8e, 0x9e, 0xa5, 0xa6, 0x7d, 0x7e, 0x9d, 0x8c, 0x8d, 0x97, 0x9a, 0xbe, 0xb7, 0xba, 0xbf, 0xaa, 0xac, 0xb5, 0xc5,
      0xc6, 0xbd, 0xcc, 0xd5, 0xa7, 0x8a, 0xb6,
    ],
    aliases: [
      'kabylake',
      'cometlake',
      'icelake',
      'tigerlake',
      'alderlake',
      'raptorlake',
      'meteorlake',
      'arrowlake',
      'lunarlake',
      'pantherlake',
      'rocketlake',
      'lakefield',
      'grandridge',
      'wildcatlake',
    ],
  },
];

const BY_MODEL = new Map<number, IntelEntry>();
for (const e of INTEL) for (const m of e.models) BY_MODEL.set(m, e);

/** Every name `--cpu` accepts, with the decoder it selects. */
export const CPU_TYPES: ReadonlyMap<string, CpuKind> = new Map<string, CpuKind>([
  ...INTEL.flatMap((e) => e.aliases.map((a) => [a, e.kind] as [string, CpuKind])),
  ['p4', 'p4'],
  ['xeon5000', 'p4'],
  ['tulsa', 'tulsa'],
  ['xeon7100', 'tulsa'],
  ['xeon71xx', 'tulsa'],
  ['intel', 'intel'],
  ['k8', 'k8'],
  ['amd-fam10h', 'amd-fam10h'],
  ['zen', 'zen'],
  ['amd', 'amd'],
  ['generic', 'generic'],
]);

const NAMES: Readonly<Partial<Record<CpuKind, string>>> = {
  p4: 'Intel Pentium 4 / NetBurst Xeon',
  tulsa: 'Intel Xeon 7100 (Tulsa)',
  intel: 'Intel (architectural decoding only)',
  k8: 'AMD K8 (family 0Fh)',
  'amd-fam10h': 'AMD families 10h-16h',
  zen: 'AMD Zen (Scalable MCA)',
  amd: 'AMD (architectural decoding only)',
  generic: 'unknown CPU (architectural decoding only)',
};

function kindName(kind: CpuKind): string {
  return NAMES[kind] ?? INTEL.find((e) => e.kind === kind)?.name ?? kind;
}

/** The decoder a `--cpu NAME` selects. @throws MceError `ERR_MCE_CPU` for an unknown name, listing the known ones. */
export function cpuTypeByName(name: string): CpuKind {
  const kind = CPU_TYPES.get(name.toLowerCase());
  if (kind === undefined) {
    throw new MceError('ERR_MCE_CPU', `unknown CPU type '${name}'; known: ${[...CPU_TYPES.keys()].sort().join(', ')}`);
  }
  return kind;
}

const IDENTIFIED = new Map<number, CpuInfo>();
const FORCED = new Map<string, CpuInfo>();

/** Identifies the CPU of a record from its vendor number and CPUID, or takes the forced type. */
export function identifyCpu(cpuvendor: number | undefined, cpuid: number, forced?: CpuKind): CpuInfo {
  // A stream comes from a handful of CPUs: identify each once.
  if (forced !== undefined || (cpuvendor !== undefined && cpuvendor > 14)) {
    const key = `${cpuvendor}:${cpuid}:${forced}`;
    let f = FORCED.get(key);
    if (f === undefined) FORCED.set(key, (f = Object.freeze(identifyUncached(cpuvendor, cpuid, forced))));
    return f;
  }
  // CPUID is 32 bits, the vendor below 16 (undefined: 15): one exact number key.
  const key = (cpuid >>> 0) * 16 + (cpuvendor ?? 15);
  let info = IDENTIFIED.get(key);
  if (info === undefined) {
    if (IDENTIFIED.size > 4096) IDENTIFIED.clear();
    IDENTIFIED.set(key, (info = Object.freeze(identifyUncached(cpuvendor, cpuid))));
  }
  return info;
}

function identifyUncached(cpuvendor: number | undefined, cpuid: number, forced?: CpuKind): CpuInfo {
  const vendor = cpuvendor === undefined ? 'unknown' : (VENDOR_NAMES[cpuvendor] ?? `vendor ${cpuvendor}`);
  const id = cpuid !== 0 ? parseCpuid(cpuid) : undefined;
  const base = { vendor, family: id?.family, model: id?.model, stepping: id?.stepping };
  if (forced !== undefined) return { ...base, kind: forced, name: kindName(forced), forced: true };
  if (id === undefined) {
    return {
      ...base,
      kind: 'generic',
      name: kindName('generic'),
      unknown: 'the record does not say which CPU it came from (no CPUID)',
    };
  }
  const { family, model } = id;
  if (cpuvendor === X86_VENDOR.intel) {
    if (family === 0xf)
      return { ...base, kind: model === 6 ? 'tulsa' : 'p4', name: kindName(model === 6 ? 'tulsa' : 'p4') };
    const entry = BY_MODEL.get(family === 6 ? model : family > 0xf ? (family << 8) | model : -1);
    if (entry !== undefined) return { ...base, kind: entry.kind, name: entry.name };
    return {
      ...base,
      kind: 'intel',
      name: kindName('intel'),
      unknown: `Intel family ${family} model ${model} is not known to this decoder: only architectural errors are decoded`,
    };
  }
  if (cpuvendor === X86_VENDOR.amd || cpuvendor === X86_VENDOR.hygon) {
    if (family >= 0x17) return { ...base, kind: 'zen', name: kindName('zen') };
    if (family >= 0x10) return { ...base, kind: 'amd-fam10h', name: kindName('amd-fam10h') };
    if (family === 0xf) return { ...base, kind: 'k8', name: kindName('k8') };
    return {
      ...base,
      kind: 'amd',
      name: kindName('amd'),
      unknown: `AMD family ${family} predates machine-check decoding here`,
    };
  }
  return {
    ...base,
    kind: 'generic',
    name: kindName('generic'),
    unknown: `CPU vendor ${vendor} has no model-specific decoder: only architectural errors are decoded`,
  };
}

/** Whether a decoder is one of Intel's (architectural Intel decoding applies). */
export function isIntelKind(kind: CpuKind): boolean {
  return kind !== 'k8' && kind !== 'amd-fam10h' && kind !== 'zen' && kind !== 'amd' && kind !== 'generic';
}
