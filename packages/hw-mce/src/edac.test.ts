/**
 * EDAC sysfs counters. This VM has no EDAC driver (/sys/devices/system/edac is absent), so the trees are built in a
 * temporary directory in the layouts of Documentation/admin-guide/ras.rst: per-DIMM (mcN/dimmM/dimm_ce_count ...) and
 * the legacy chip-select rows (mcN/csrowM/ce_count, chK_ce_count, chK_dimm_label).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, describe, expect, it } from 'vitest';
import recordSchema from '../schemas/record.json' with { type: 'json' };
import { edacJson, edacSummary, readEdacSysfs } from './edac.ts';
import { readMceFile } from './read.ts';
import { edacTree } from './testing/edac-tree.ts';

const root = mkdtempSync(join(tmpdir(), 'hw-mce-edac-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('EDAC sysfs counters, both layouts (trees built in a temporary directory)', () => {
  it('reads controller totals, per-DIMM counters and legacy csrow channels; a bad counter is a note', () => {
    const { controllers, notes } = readEdacSysfs(edacTree(root, { garbage: true }));
    expect(controllers.map((c) => [c.mc, c.name, c.ce, c.ue, c.layout])).toEqual([
      [0, 'Skylake Socket#0 IMC#0', 7, 1, 'dimm'],
      [1, 'I5000', 3, 0, 'csrow'],
    ]);
    expect(controllers[0]!.dimms).toEqual([
      { mc: 0, name: 'dimm0', label: 'CPU_SrcID#0_MC#0_Chan#0_DIMM#0', location: 'channel 0 slot 0', ce: 5, ue: 1 },
      { mc: 0, name: 'dimm1', label: 'CPU_SrcID#0_MC#0_Chan#1_DIMM#0', location: 'channel 1 slot 0', ce: 2, ue: 0 },
    ]);
    expect(controllers[1]!.csrows).toEqual([{ csrow: 0, ce: 2, ue: 0 }]);
    expect(controllers[1]!.dimms.map((d) => [d.name, d.label, d.ce, d.ue])).toEqual([
      ['csrow0/ch0', 'DIMM_A1', 2, undefined],
      ['csrow0/ch1', 'DIMM_B1', 0, undefined],
    ]);
    expect(notes).toEqual([
      { location: { file: join(root, 'mc', 'mc1', 'ue_noinfo_count') }, message: "not a counter: 'garbage'" },
    ]);
    expect(readMceFile(root).kind).toBe('edac-sysfs');
  });

  it('says when there is no EDAC tree', () => {
    expect(() => readEdacSysfs(join(root, 'nope'))).toThrow(/no EDAC memory controllers/);
  });

  it('summarises an mc_event for operators and JSON', () => {
    const e = {
      errorType: 'uncorrected' as const,
      count: 1,
      message: 'memory read error',
      label: 'DIMM_A1',
      mc: 0,
      layers: [0, 1, -1] as const,
      address: 0x1234000n,
      grain: 64n,
      syndrome: 0n,
      driverDetail: '',
      source: { kind: 'trace' as const },
    };
    expect(edacSummary(e)).toBe(
      'uncorrected memory 1 error: memory read error (memory controller 0, DIMM DIMM_A1, location 0:1:-1, page 0x1234)',
    );
    const validate = new Ajv2020({ strict: true }).compile(recordSchema);
    expect(validate(edacJson(e)), JSON.stringify(validate.errors)).toBe(true);
    expect(edacJson(e)).toMatchObject({
      severity: 'ucna',
      class: 'memory-controller',
      addr: '0x1234000',
      page: '0x1234',
    });
  });
});
