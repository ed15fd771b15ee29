import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EdacPoller, TracefsMceSource } from './sources.ts';
import { edacTree } from './testing/edac-tree.ts';
import { tracefsRoot } from './testing/formats.ts';

const dir = mkdtempSync(join(tmpdir(), 'hw-mce-sources-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('EDAC polling (a sysfs tree built in a temporary directory: this VM has no EDAC driver)', () => {
  it('reports per-DIMM and controller growth between polls, and a reset counter as its new value', () => {
    const root = edacTree(join(dir, 'edac'));
    const poller = new EdacPoller({ sysfs: root });
    expect(poller.poll().changes).toEqual([]);
    writeFileSync(join(root, 'mc', 'mc0', 'ce_count'), '9\n');
    writeFileSync(join(root, 'mc', 'mc0', 'dimm1', 'dimm_ce_count'), '4\n');
    writeFileSync(join(root, 'mc', 'mc1', 'csrow0', 'ch0_ce_count'), '1\n');
    expect(poller.poll().changes).toEqual([
      { mc: 0, what: 'total', label: 'Skylake Socket#0 IMC#0', ceDelta: 2, ueDelta: 0 },
      { mc: 0, what: 'dimm1', label: 'CPU_SrcID#0_MC#0_Chan#1_DIMM#0', ceDelta: 2, ueDelta: 0 },
      { mc: 1, what: 'csrow0/ch0', label: 'DIMM_A1', ceDelta: 1, ueDelta: 0 },
    ]);
    expect(poller.poll().changes).toEqual([]);
  });
});

const root = tracefsRoot();
const why = root === undefined ? 'tracefs is not mounted' : process.getuid?.() !== 0 ? 'needs root' : '';

describe.skipIf(why !== '')(`live tracefs source in a private instance${why ? ` (skipped: ${why})` : ''}`, () => {
  it('enables the events this kernel has, reads nothing when nothing fired, and leaves tracefs as it was', () => {
    const top = join(root!, 'events', 'ras', 'mc_event', 'enable');
    const before = readFileSync(top, 'utf8');
    const source = new TracefsMceSource({ tracefs: root! });
    const path = source.instance.path;
    try {
      expect(source.enabled).toContain('ras:mc_event');
      // This VM has no machine-check support: mce:mce_record is absent and said to be.
      if (!existsSync(join(root!, 'events', 'mce'))) expect(source.missing.join()).toMatch(/mce:mce_record \(ENOENT\)/);
      expect(readFileSync(join(path, 'events', 'ras', 'mc_event', 'enable'), 'utf8').trim()).toBe('1');
      expect(source.poll()).toEqual({ records: [], edac: [], notes: [] });
    } finally {
      source.close();
    }
    expect(existsSync(path)).toBe(false);
    expect(readFileSync(top, 'utf8')).toBe(before);
  });
});
