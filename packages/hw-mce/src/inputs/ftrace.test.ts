/**
 * mce:mce_record and ras:mc_event from ring-buffer pages. This VM has no machine-check support (no mce tracepoint,
 * EDAC never fires), so the pages are built here with @evtrace/trace-format's page writer from the real format files:
 * mce_record's as Linux 6.x generates it (testing/formats.ts says where it comes from) and this machine's own
 * events/ras/mc_event/format read from tracefs.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  compileRecordEncoder,
  HEADER_EVENT_TEXT,
  headerPageText,
  kernelPageLayout,
  packPages,
  parseFormatFile,
} from '@evtrace/trace-format';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeMce } from '../decode.ts';
import { readMceFile } from '../read.ts';
import { liveFormat, MCE_RECORD_FORMAT } from '../testing/formats.ts';

const mcEvent = liveFormat('ras', 'mc_event');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe.skipIf(mcEvent.text === undefined)(
  `ring-buffer pages built from the mce_record (Linux 6.x) and this kernel's ras:mc_event formats${mcEvent.why ? ` (skipped: ${mcEvent.why})` : ''}`,
  () => {
    it('reads every record of a raw-pages directory through the format files, and decodes them', () => {
      const layout = kernelPageLayout();
      const mce = parseFormatFile(MCE_RECORD_FORMAT, { system: 'mce' });
      const ras = parseFormatFile(mcEvent.text!, { system: 'ras' });
      const encMce = compileRecordEncoder(mce);
      const encRas = compileRecordEncoder(ras);
      const common = { common_flags: 0, common_preempt_count: 0, common_pid: 0 };
      const records = [];
      // 300 records: several pages of 124-byte records plus the EDAC event in between.
      for (let i = 0; i < 300; i++) {
        records.push({
          tsNs: 1_000_000n + BigInt(i) * 1000n,
          data: encMce(
            {
              mcgcap: 0x1000c16n,
              mcgstatus: 0n,
              status: 0x8c00004000010090n | BigInt(i & 0xf),
              addr: 0x1234000n + BigInt(i) * 0x1000n,
              misc: 0x86n,
              synd: 0n,
              ipid: 0n,
              ip: 0n,
              tsc: BigInt(i),
              ppin: 0x2b0c3a4d1e5f6071n,
              walltime: 1763781121n + BigInt(i),
              cpu: i % 2,
              cpuid: 0x50654,
              apicid: 4,
              socketid: 1,
              cs: 0,
              bank: 13 + (i % 6),
              cpuvendor: 0,
              microcode: 0x2007006,
              v_data: [],
            },
            common,
          ),
        });
        if (i === 150) {
          records.push({
            tsNs: 1_000_000n + BigInt(i) * 1000n + 1n,
            data: encRas(
              {
                error_type: 0,
                msg: 'memory read error',
                label: 'CPU_SrcID#1_MC#0_Chan#2_DIMM#0',
                error_count: 3,
                mc_index: 0,
                top_layer: 2,
                middle_layer: 0,
                lower_layer: -1,
                address: 0x1234000n,
                grain_bits: 6,
                syndrome: 0n,
                driver_detail: 'rank:1 bg:2',
              },
              common,
            ),
          });
        }
      }
      const dir = mkdtempSync(join(tmpdir(), 'hw-mce-pages-'));
      dirs.push(dir);
      mkdirSync(join(dir, 'events', 'mce', 'mce_record'), { recursive: true });
      mkdirSync(join(dir, 'events', 'ras', 'mc_event'), { recursive: true });
      writeFileSync(join(dir, 'events', 'header_page'), headerPageText(layout));
      writeFileSync(join(dir, 'events', 'header_event'), HEADER_EVENT_TEXT);
      writeFileSync(join(dir, 'events', 'mce', 'mce_record', 'format'), MCE_RECORD_FORMAT);
      writeFileSync(join(dir, 'events', 'ras', 'mc_event', 'format'), mcEvent.text!);
      const pages = packPages(records, layout);
      expect(pages.length).toBeGreaterThan(4096 * 8);
      writeFileSync(join(dir, 'cpu0.raw'), pages);

      const read = readMceFile(dir);
      expect(read.kind).toBe('trace');
      expect(read.notes).toEqual([]);
      expect(read.records.length).toBe(300);
      const r = read.records[299]!;
      expect([
        r.cpu,
        r.bank,
        r.status,
        r.addr,
        r.mcgcap,
        r.cpuid,
        r.socketid,
        r.apicid,
        r.ppin,
        r.microcode,
        r.time,
      ]).toEqual([
        1,
        13 + (299 % 6),
        0x8c00004000010090n | 0xbn,
        0x1234000n + 299n * 0x1000n,
        0x1000c16n,
        0x50654,
        1,
        4,
        0x2b0c3a4d1e5f6071n,
        0x2007006,
        1763781121n + 299n,
      ]);
      const d = decodeMce(read.records[0]!);
      expect([d.cpu.kind, d.class, d.severity, d.location.channel]).toEqual([
        'skylake-server',
        'memory-controller',
        'corrected',
        0,
      ]);
      expect(read.edac?.length).toBe(1);
      expect(read.edac![0]).toMatchObject({
        errorType: 'corrected',
        count: 3,
        label: 'CPU_SrcID#1_MC#0_Chan#2_DIMM#0',
        layers: [2, 0, -1],
        address: 0x1234000n,
        grain: 64n,
        driverDetail: 'rank:1 bg:2',
      });
    });
  },
);
