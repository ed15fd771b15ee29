/**
 * evtrace's SMCA decoding judged by rasdaemon 0.8.5's post-processing mode (`rasdaemon -p --smca ...`), built from
 * its public repository and run over every bank type this decoder knows, every extended error code of its table
 * (and one past it), on Zen 1 to Zen 5 family/model values, Genoa's CS erratum and MI300's HBM controllers included.
 * src/fixtures/rasdaemon-smca.jsonl.gz holds each exact command line and what rasdaemon printed (first row: version,
 * commit and build). Bank name, extended error text and memory location must agree; where rasdaemon prints a
 * reserved code's placeholder, evtrace says the code is reserved.
 */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { cpuidOf } from './cpu.ts';
import { decodeMce } from './decode.ts';
import { emptyRecord } from './record.ts';

interface Row {
  readonly args: readonly string[];
  readonly out: string;
}

const lines = gunzipSync(readFileSync(new URL('./fixtures/rasdaemon-smca.jsonl.gz', import.meta.url)))
  .toString('utf8')
  .trim()
  .split('\n');
const header = JSON.parse(lines[0]!) as { tool: string };
const rows = lines.slice(1).map((l) => JSON.parse(l) as Row);

/** `NAME (bank=N), mca: TEXT. Ext Err Code: X <generic decoding>[, Locn: LOCATION], Error Msg: ...` */
const OUT = /^(.+) \(bank=(\d+)\), mca: (?:(.*?)\. Ext Err Code: (\d+) )?.*?(?:, Locn: (\S+?))?, Error Msg: /;

function arg(row: Row, name: string): string {
  const i = row.args.indexOf(name);
  if (i < 0) throw new Error(`fixture row without ${name}: ${row.args.join(' ')}`);
  return row.args[i + 1]!;
}

function decodeRow(row: Row) {
  const family = Number(arg(row, '--family'));
  const model = Number(arg(row, '--model'));
  return decodeMce(
    Object.assign(emptyRecord({ kind: 'mcelog-ascii' }), {
      cpuvendor: 2,
      cpuid: cpuidOf(family, model),
      bank: Number(arg(row, '--bank')),
      status: BigInt(arg(row, '--status')),
      ipid: BigInt(arg(row, '--ipid')),
      synd: BigInt(arg(row, '--synd')),
    }),
  );
}

describe(`SMCA bank types and extended error codes against ${header.tool} (rasdaemon -p --smca)`, () => {
  it('the fixture covers every bank type on Zen 1 to Zen 5', () => {
    const gens = new Set(rows.map((r) => `${arg(r, '--family')}/${arg(r, '--model')}`));
    expect([...gens].sort()).toEqual([
      '0x17/0x1',
      '0x17/0x31',
      '0x19/0x1',
      '0x19/0x11',
      '0x19/0x90',
      '0x1a/0x2',
      '0x1a/0x44',
    ]);
    expect(new Set(rows.map((r) => arg(r, '--ipid'))).size).toBe(35);
  });

  it('bank name, extended error text and location agree on every row', () => {
    const mismatches: string[] = [];
    let described = 0;
    for (const row of rows) {
      const m = OUT.exec(row.out);
      if (!m) throw new Error(`rasdaemon output not understood: ${row.out}`);
      const [, name, bankNo, text, xec, locn] = m;
      const d = decodeRow(row);
      const got: string[] = [];
      if (d.amd?.unit !== name || d.location.bank !== Number(bankNo)) got.push(`bank ${d.amd?.bankName}`);
      if (text === undefined) {
        // rasdaemon prints nothing past the end of a table: evtrace says the code is not known.
        if (d.amd?.xecText !== undefined || !/not known/.test(d.unknown.join())) got.push(`xec ${d.amd?.xecText}`);
      } else if (text === 'Reserved') {
        if (d.amd?.xecText !== undefined || !/reserved/.test(d.unknown.join())) got.push(`xec ${d.amd?.xecText}`);
      } else {
        described++;
        if (d.amd?.xecText !== text || d.amd?.xec !== Number(xec)) got.push(`xec ${d.amd?.xec} ${d.amd?.xecText}`);
        if (!d.summary.includes(text)) got.push(`summary ${d.summary}`);
      }
      const channelCs = locn ? /^memory_channel=(\d+),csrow=(\d+)$/.exec(locn) : null;
      if (channelCs && d.location.channel !== Number(channelCs[1])) got.push(`channel ${d.location.channel}`);
      if (channelCs && d.amd?.bankType === 'umc' && d.location.chipSelect !== Number(channelCs[2]))
        got.push(`chip select ${d.location.chipSelect}`);
      if (
        channelCs &&
        d.amd?.bankType === 'umc_v2' &&
        !d.details.includes(`HBM channel ${channelCs[1]}, UMC PHY ${channelCs[2]}`)
      )
        got.push(`details ${d.details.join('; ')}`);
      const die = locn ? /^memory_die_id=(\d+)$/.exec(locn) : null;
      if (die && !d.details.includes(`memory die ${die[1]}`)) got.push(`details ${d.details.join('; ')}`);
      if (got.length > 0)
        mismatches.push(`${row.args.join(' ')}\n  rasdaemon: ${row.out}\n  evtrace: ${got.join(', ')}`);
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
    expect(described).toBeGreaterThan(3000);
  });

  it('a DRAM ECC error on a UMC bank is a memory error with DIMM advice on every generation', () => {
    const umc = rows.filter((r) =>
      /^Unified Memory Controller \(bank=\d+\), mca: DRAM (?:On Die )?ECC error\./.test(r.out),
    );
    expect(umc.length).toBe(7);
    for (const row of umc) {
      const d = decodeRow(row);
      expect(d.class).toBe('memory-controller');
      expect(d.summary).toMatch(/^corrected memory error: DRAM (On Die )?ECC error \(.*Unified Memory Controller/);
      expect(d.advice).toMatch(/DIMM/);
    }
  });
});
