/**
 * The agent's hardware source over real inputs built in temporary directories (this VM has no machine-check support:
 * no `mce` tracepoint, no /dev/mcelog, no EDAC driver): a tracefs-shaped tree whose instance's `trace_pipe_raw` holds
 * ring-buffer pages encoded from the real format files, and an EDAC sysfs tree. What the source writes is read back
 * as a raw-pages directory by @evtrace/hw-mce's own trace reader.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { DecodedMce } from './decode.ts';
import type { EdacEvent } from './edac.ts';
import { MceError } from './errors.ts';
import { encodeStructMce } from './inputs/struct-mce.ts';
import { HardwareSource, mceTraceFields } from './live-source.ts';
import { readMceFile } from './read.ts';
import { emptyRecord, type MceRecord } from './record.ts';
import { edacTree } from './testing/edac-tree.ts';
import { appendPages, tracefsTree } from './testing/tracefs-tree.ts';

const dir = mkdtempSync(join(tmpdir(), 'hw-mce-live-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A sink keeping the pages it is given. */
function sink() {
  const pages: Buffer[] = [];
  return {
    pages,
    writeBytes(_type: number, payload: Uint8Array) {
      pages.push(Buffer.from(payload));
      return true;
    },
    flush() {},
  };
}

const skx = (over: Partial<MceRecord>): MceRecord =>
  Object.assign(emptyRecord({ kind: 'trace' }), {
    cpu: 3,
    bank: 13,
    status: 0x8c00004000010090n, // corrected memory read error, channel 0
    addr: 0x7f3a2000n,
    misc: 0x86n,
    mcgcap: 0x1000c16n,
    cpuvendor: 0,
    cpuid: 0x50654, // Skylake server
    socketid: 1,
    apicid: 6,
    ...over,
  });

describe('HardwareSource (tracefs-shaped tree and EDAC sysfs in a temporary directory: this VM has no MCE support)', () => {
  it('reads an instance’s pages and EDAC growth, decodes them, and writes them as mce_record / mc_event pages', () => {
    const root = join(dir, 'tracefs');
    const pipe = tracefsTree(root, 'hw');
    const edac = edacTree(join(dir, 'edac'));
    const decoded: DecodedMce[] = [];
    const edacEvents: EdacEvent[] = [];
    const source = new HardwareSource({
      tracefs: root,
      instance: 'hw',
      mcelog: join(dir, 'no-mcelog'),
      edacSysfs: edac,
      intervalMs: 0,
      onMce: (d) => decoded.push(d),
      onEdac: (e) => edacEvents.push(e),
    });
    source.prepare();
    expect(source.inputs).toEqual(['tracefs mce:mce_record', 'tracefs ras:mc_event']);
    // ras:mc_event is read from tracefs, so EDAC growth is not also turned into events; the absent device is said.
    expect(source.missing.join('\n')).toMatch(/no-mcelog: not read \(mce:mce_record reports the same records\)/);
    expect(source.missing.join('\n')).toMatch(/EDAC .*counters not polled as events/);
    expect(readFileSync(join(root, 'instances', 'hw', 'events', 'mce', 'mce_record', 'enable'), 'utf8')).toBe('1');
    const s = sink();
    source.start([s]);
    expect(source.poll()).toBe(0);
    const recs = [skx({}), skx({ bank: 14, cpu: 5, status: 0xbd80000000100134n, addr: 0x1000n })];
    appendPages(pipe, [
      ...recs.map((r) => ({ event: 'mce_record' as const, fields: mceTraceFields(r) })),
      {
        event: 'mc_event',
        fields: {
          error_type: 0,
          msg: 'memory read error',
          label: 'CPU_SrcID#1_MC#0_Chan#0_DIMM#0',
          error_count: 1,
          mc_index: 2,
          top_layer: 0,
          middle_layer: 0,
          lower_layer: -1,
          address: 0x7f3a2000n,
          grain_bits: 5,
          syndrome: 0n,
          driver_detail: '',
        },
      },
    ]);
    expect(source.poll()).toBeGreaterThan(0);
    expect(decoded.map((d) => [d.severity, d.class, d.location.socket, d.location.channel, d.location.cpu])).toEqual([
      ['corrected', 'memory-controller', 1, 0, 3],
      ['srar', 'cache', 1, undefined, 5],
    ]);
    expect(edacEvents.map((e) => [e.errorType, e.label, e.mc, e.count])).toEqual([
      ['corrected', 'CPU_SrcID#1_MC#0_Chan#0_DIMM#0', 2, 1],
    ]);
    expect(source.counters()).toEqual([{ cpu: 0, events: 3, lost: 0, bytes: expect.any(Number) }]);

    // What the session keeps is a raw-pages directory any evtrace reader opens: the same records come back.
    const out = join(dir, 'session');
    mkdirSync(out);
    source.writeMetadata(out);
    writeFileSync(join(out, 'cpu0.raw'), Buffer.concat(s.pages));
    const back = readMceFile(out);
    expect(back.kind).toBe('trace');
    expect(back.records.map((r) => [r.cpu, r.bank, r.status, r.addr, r.socketid, r.cpuid])).toEqual(
      recs.map((r) => [r.cpu, r.bank, r.status, r.addr, r.socketid, r.cpuid]),
    );
    expect(back.edac?.map((e) => e.label)).toEqual(['CPU_SrcID#1_MC#0_Chan#0_DIMM#0']);
    source.close();
    // The adopted instance stays; the events this source enabled are disabled again.
    expect(readFileSync(join(root, 'instances', 'hw', 'events', 'mce', 'mce_record', 'enable'), 'utf8')).toBe('0');
  });

  it('without the tracepoints, reads /dev/mcelog-less EDAC growth as mc_event events (counts before start are not new)', () => {
    const edac = edacTree(join(dir, 'edac2'));
    const events: EdacEvent[] = [];
    const source = new HardwareSource({
      tracefs: false,
      mcelog: false,
      edacSysfs: edac,
      intervalMs: 0,
      onEdac: (e) => events.push(e),
    });
    source.prepare();
    expect(source.inputs).toEqual([`EDAC ${edac}`]);
    const s = sink();
    source.start([s]);
    expect(source.poll()).toBe(0);
    writeFileSync(join(edac, 'mc', 'mc0', 'dimm1', 'dimm_ce_count'), '5\n');
    writeFileSync(join(edac, 'mc', 'mc0', 'dimm0', 'dimm_ue_count'), '2\n');
    expect(source.poll()).toBeGreaterThan(0);
    expect(events.map((e) => [e.errorType, e.mc, e.label, e.count, e.layers])).toEqual([
      ['uncorrected', 0, 'CPU_SrcID#0_MC#0_Chan#0_DIMM#0', 1, [0, -1, -1]],
      ['corrected', 0, 'CPU_SrcID#0_MC#0_Chan#1_DIMM#0', 3, [1, -1, -1]],
    ]);
    const out = join(dir, 'session2');
    mkdirSync(out);
    source.writeMetadata(out);
    writeFileSync(join(out, 'cpu0.raw'), Buffer.concat(s.pages));
    expect(readMceFile(out).edac?.map((e) => [e.errorType, e.count])).toEqual([
      ['uncorrected', 1],
      ['corrected', 3],
    ]);
    source.close();
  });

  it('a file standing in for /dev/mcelog is refused by the device ioctl, reported as a note, not guessed', () => {
    const file = join(dir, 'fake-mcelog');
    writeFileSync(file, encodeStructMce([skx({})]));
    const notes: string[] = [];
    const source = new HardwareSource({
      tracefs: false,
      mcelog: file,
      edacSysfs: false,
      intervalMs: 0,
      onNote: (n) => notes.push(n.message),
    });
    source.prepare();
    source.start([sink()]);
    expect(source.poll()).toBe(0);
    expect(notes).toEqual(['ioctl MCE_GET_RECORD_LEN failed: ENOTTY (not an mcelog device)']);
    source.close();
  });

  it('counts the records of a page the sink refuses as lost, and only those', () => {
    const edac = edacTree(join(dir, 'edac3'));
    const source = new HardwareSource({ tracefs: false, mcelog: false, edacSysfs: edac, intervalMs: 0 });
    source.prepare();
    let accept = false;
    source.start([{ writeBytes: () => accept, flush() {} }]);
    writeFileSync(join(edac, 'mc', 'mc0', 'dimm1', 'dimm_ce_count'), '5\n');
    source.poll();
    accept = true;
    writeFileSync(join(edac, 'mc', 'mc0', 'dimm0', 'dimm_ce_count'), '9\n');
    writeFileSync(join(edac, 'mc', 'mc0', 'dimm0', 'dimm_ue_count'), '3\n');
    source.poll();
    const [c] = source.counters();
    expect([c!.events, c!.lost]).toEqual([2, 1]);
    expect(c!.bytes).toBeGreaterThan(0);
    source.close();
  });

  it('says why when the host has no input at all', () => {
    const source = new HardwareSource({ tracefs: false, mcelog: join(dir, 'none'), edacSysfs: join(dir, 'none') });
    expect(() => source.prepare()).toThrow(MceError);
    expect(() => new HardwareSource({ tracefs: false, mcelog: false, edacSysfs: false }).prepare()).toThrow(
      /no machine-check or EDAC input on this host/,
    );
  });
});
