/**
 * EDAC sysfs trees for tests (this VM has no EDAC driver): `dir/mc/...` in the layouts of
 * Documentation/admin-guide/ras.rst, one per-DIMM controller (skx_edac style) and one legacy csrow controller.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

function put(path: string, text: string): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, `${text}\n`);
}

/** Writes the tree under `mcParent/mc` and returns `mcParent`. `garbage` puts a malformed counter in mc1. */
export function edacTree(mcParent: string, options: { garbage?: boolean } = {}): string {
  const mc = join(mcParent, 'mc');
  put(join(mc, 'mc0', 'mc_name'), 'Skylake Socket#0 IMC#0');
  put(join(mc, 'mc0', 'ce_count'), '7');
  put(join(mc, 'mc0', 'ue_count'), '1');
  put(join(mc, 'mc0', 'ce_noinfo_count'), '0');
  put(join(mc, 'mc0', 'ue_noinfo_count'), '0');
  for (const [i, ce, ue] of [
    [0, 5, 1],
    [1, 2, 0],
  ] as const) {
    put(join(mc, 'mc0', `dimm${i}`, 'dimm_label'), `CPU_SrcID#0_MC#0_Chan#${i}_DIMM#0`);
    put(join(mc, 'mc0', `dimm${i}`, 'dimm_location'), `channel ${i} slot 0`);
    put(join(mc, 'mc0', `dimm${i}`, 'dimm_ce_count'), String(ce));
    put(join(mc, 'mc0', `dimm${i}`, 'dimm_ue_count'), String(ue));
  }
  put(join(mc, 'mc1', 'mc_name'), 'I5000');
  put(join(mc, 'mc1', 'ce_count'), '3');
  put(join(mc, 'mc1', 'ue_count'), '0');
  put(join(mc, 'mc1', 'ce_noinfo_count'), '1');
  put(join(mc, 'mc1', 'ue_noinfo_count'), options.garbage ? 'garbage' : '0');
  put(join(mc, 'mc1', 'csrow0', 'ce_count'), '2');
  put(join(mc, 'mc1', 'csrow0', 'ue_count'), '0');
  put(join(mc, 'mc1', 'csrow0', 'ch0_ce_count'), '2');
  put(join(mc, 'mc1', 'csrow0', 'ch0_dimm_label'), 'DIMM_A1');
  put(join(mc, 'mc1', 'csrow0', 'ch1_ce_count'), '0');
  put(join(mc, 'mc1', 'csrow0', 'ch1_dimm_label'), 'DIMM_B1');
  return mcParent;
}
