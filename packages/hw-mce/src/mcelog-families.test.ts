/**
 * The families mcelog decodes that its own test inputs do not cover — Intel P6, Core 2, Xeon 7400 (Dunnington),
 * Pentium 4, Xeon 7100 (Tulsa), Xeon 7500, the uncore banks of Haswell EP, Broadwell EP/DE, Skylake server,
 * Denverton, Ice Lake server/D, Snow Ridge and Granite Rapids, and AMD K8 — judged by
 * mcelog v208 built from its public repository:
 * sr./fixtures/mcelog-families/ holds inputs that set each model-specific field of these families in turn, mcelog's
 * output for each (both gzip-compressed), and manifest.json with the exact command line, version and commit. Every model-specific line
 * mcelog prints must be one of evtrace's details and every detail must be in mcelog's output; for K8 the
 * northbridge code's name, the ECC syndrome and the link number must agree.
 */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { cpuTypeByName } from './cpu.ts';
import { decodeMce } from './decode.ts';
import { readMceText } from './inputs/text.ts';

const DIR = new URL('./fixtures/mcelog-families/', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('manifest.json', DIR), 'utf8')) as {
  tool: string;
  cases: { name: string; records: number; command: string[]; input_gz: string; output_gz: string }[];
};

/** Splits a file at its `# record N` lines: the text of each record by N. */
function byRecord(text: string): Map<number, string> {
  const out = new Map<number, string>();
  const parts = text.split(/^# record (\d+)\n/m);
  for (let i = 1; i < parts.length; i += 2) out.set(Number(parts[i]), parts[i + 1]!);
  return out;
}

const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

describe(`model-specific decoding against ${manifest.tool} (mcelog --ascii)`, () => {
  for (const c of manifest.cases) {
    it(`${c.name}: ${c.records} records, every model-specific line as \`${c.command.join(' ')}\` prints it`, () => {
      const inputs = byRecord(gunzipSync(readFileSync(new URL(c.input_gz, DIR))).toString('utf8'));
      const outputs = byRecord(gunzipSync(readFileSync(new URL(c.output_gz, DIR))).toString('utf8'));
      expect(inputs.size).toBe(c.records);
      expect(outputs.size).toBe(c.records);
      const mismatches: string[] = [];
      let modelLines = 0;
      for (const [n, input] of inputs) {
        const { records, notes } = readMceText(input, { file: c.input_gz });
        expect(notes).toEqual([]);
        const d = decodeMce(records[0]!);
        const out = outputs.get(n)!;
        if (c.name === 'k8') {
          // mcelog bug: its K8 code 0xF is spelt "Tablew Walk Data Error"; evtrace asserts the right word.
          const nb = /^ {2}(Northbridge .+)$/m.exec(out)?.[1]?.replace('Tablew Walk', 'Table Walk');
          const syndrome = /^ {2}(Chipkill )?ECC syndrome = ([0-9a-f]+)$/m.exec(out);
          const link = /^ {2}link number = ([0-9a-f]+)$/m.exec(out)?.[1];
          const want = [
            nb,
            ...(syndrome ? [`${syndrome[1] ?? ''}ECC syndrome 0x${syndrome[2]}`] : []),
            ...(link !== undefined ? [`link number ${Number.parseInt(link, 16)}`] : []),
          ];
          const got = [d.amd?.xecText, ...d.details.filter((l) => /syndrome|link number/.test(l))];
          if (JSON.stringify(got) !== JSON.stringify(want)) mismatches.push(`#${n}: mcelog ${want} / evtrace ${got}`);
          modelLines += want.length;
          continue;
        }
        // mcelog's model-specific lines sit between its "MCA:" line and the STATUS line; a server bank's start at
        // the unit it names (`PCU: `, `UPI: `, `MemCtrl: `, `MCCHAN: `...), which must be evtrace's unit.
        // A memory controller's MCA code continues on a `Transaction:` line (evtrace's `code`, not a detail).
        let block = (/^MCA: .*\n([\s\S]*?)^STATUS /m.exec(out)?.[1] ?? '').replace(/^Transaction: .*\n/m, '');
        const unit = /^(HBM: )?(PCU|Punit|QPI|UPI|M2M|B2CMI|MemCtrl|MCCHAN)(?:: |\n)/m.exec(block);
        if (unit) {
          block = block.slice(unit.index + unit[0].length);
          const name = `${unit[1] ? 'HBM ' : ''}${unit[2]}`;
          if (d.location.unit !== name) mismatches.push(`#${n}: mcelog unit ${name}, evtrace ${d.location.unit}`);
        }
        let rest = squash(block);
        // Longest first: a line may hold a shorter one ("LL or Phy Control Error", "Phy Control Error").
        for (const line of [...d.details].sort((a, b) => b.length - a.length)) {
          if (!rest.includes(squash(line)) && !squash(block).includes(squash(line)))
            mismatches.push(`#${n}: evtrace says '${line}', mcelog does not: ${squash(block)}`);
          rest = rest.replaceAll(squash(line), ' ');
          modelLines++;
        }
        // Left for mcelog alone: its "Model:" label and <bit:value> for values without a name (evtrace names none).
        rest = squash(rest.replace(/Model:|<\d+:[0-9a-f]+>/g, ' '));
        if (rest !== '') mismatches.push(`#${n}: mcelog says '${rest}', evtrace does not (${d.details.join(' | ')})`);
      }
      expect(mismatches).toEqual([]);
      expect(modelLines).toBeGreaterThan(c.records / 2);
    });
  }

  it('a family without a model-specific decoder says so, naming the family and model', () => {
    const { records } = readMceText('CPU 0 BANK 1\nSTATUS 0x9000000000000150\nPROCESSOR 0:0x906e9\n');
    const d = decodeMce(records[0]!);
    expect(d.unknown.join('\n')).toMatch(/not decoded \(Intel client .*, family 6 model 0x9e\)/);
  });

  it('every CPU name of mcelog v208 (`mcelog --help`, "Valid CPUs") selects a decoder, the FSB families their own', () => {
    const names =
      'generic k8 intel p4 xeon5000 xeon7100 tulsa xeon71xx alderlake arrowlake atom broadwell broadwell-d broadwell-ep broadwell-ex xeon-v4 clearwaterforest cometlake core2 xeon3100 xeon3200 xeon5100 xeon5200 xeon7200 denverton diamond_rapids dunnington xeon7400 xeon74xx emeraldrapids_server grandridge graniterapids haswell-ep haswell-ex xeon-v3 haswell icelake icelake-d icelake_server ivybridge-ep ivybridge-ex xeon-v2 ivybridge kabylake knightslanding knightsmill lakefield lunarlake meteorlake core_i3 core_i5 core_i7 nehalem westmere xeon5500 p6old pantherlake raptorlake rocketlake sandybridge sandybridge-ep sapphirerapids_server sierraforest skylake cascadelake_server skylake_server tigerlake snowridge wildcatlake xeon7500 xeon75xx'.split(
        ' ',
      );
    const unknown = names.filter((n) => {
      try {
        cpuTypeByName(n);
        return false;
      } catch {
        return true;
      }
    });
    expect(unknown).toEqual([]);
    // mcelog lists xeon7100 twice (P4, then Tulsa) and its lookup takes the first; the Xeon 7100 is Tulsa.
    const kinds = ['xeon5000', 'xeon7100', 'xeon71xx', 'xeon3200', 'xeon7200', 'xeon74xx', 'xeon75xx', 'p6old'];
    expect(kinds.map(cpuTypeByName)).toEqual([
      'p4',
      'tulsa',
      'tulsa',
      'core2',
      'core2',
      'dunnington',
      'xeon75xx',
      'p6old',
    ]);
  });
});
