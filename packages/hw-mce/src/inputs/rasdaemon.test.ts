/**
 * rasdaemon's database as rasdaemon creates it: Debian's `rasdaemon -f -r` makes the tables, rows go in as its
 * ras-record.c stores them (registers bound as signed 64-bit integers, text timestamps and error types), written by
 * the sqlite3 CLI; evtrace reads them back, and `ras-mc-ctl --errors` / `--summary` on the same database are the judge.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeMce } from '../decode.ts';
import { MceError } from '../errors.ts';
import { readMceFile } from '../read.ts';
import type { MceRecord } from '../record.ts';
import { rasdaemonDatabase, rasdaemonUnavailable, rasMcCtl, sqlite3 } from '../testing/rasdaemon.ts';
import { readRasdaemonDb } from './rasdaemon.ts';

const dir = mkdtempSync(join(tmpdir(), 'hw-mce-ras-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A u64 register as rasdaemon binds it (sqlite3_bind_int64): bit 63 set is a negative integer. */
const i64 = (v: bigint) => BigInt.asIntN(64, v).toString();
const text = (s: string) => `'${s.replaceAll("'", "''")}'`;

/** mce_record rows: [timestamp, mcgcap, mcgstatus, status, addr, misc, ip, tsc, walltime, cpu, cpuid, apicid, socketid, cs, bank, cpuvendor]. */
const MCE_ROWS: readonly (readonly [string, ...bigint[]])[] = [
  // Skylake-SP memory controller, corrected read error on channel 1.
  [
    '2026-11-22 03:12:01 +0000',
    0x1000c16n,
    0n,
    0x8c00004000010091n,
    0x1234000n,
    0x86n,
    0n,
    0n,
    1763781121n,
    3n,
    0x50654n,
    0x44n,
    1n,
    0n,
    14n,
    0n,
  ],
  // A data-load SRAR with RIPV/EIPV, and a TSC with bit 63 set.
  [
    '2026-11-22 03:12:02 +0000',
    0n,
    5n,
    0xbd80000000100134n,
    0x7f001000n,
    0x86n,
    0x401000n,
    0x9000000012345678n,
    1763781122n,
    5n,
    0x50654n,
    5n,
    0n,
    0x33n,
    1n,
    0n,
  ],
];

/** mc_event rows: [timestamp, err_count, err_type, err_msg, label, mc, top, middle, lower, address, grain, syndrome, driver_detail]. */
const MC_ROWS = [
  [
    '2026-11-22 03:13:00 +0000',
    2,
    'Corrected',
    'memory read error',
    'CPU_SrcID#0_MC#1_Chan#0_DIMM#1',
    1,
    0,
    1,
    -1,
    0x55aa000,
    64,
    0,
    'rank:0',
  ],
  [
    '2026-11-22 03:13:05 +0000',
    1,
    'Corrected',
    'memory read error',
    'CPU_SrcID#0_MC#1_Chan#0_DIMM#1',
    1,
    0,
    1,
    -1,
    0x55ab000,
    64,
    0x1f,
    'rank:0',
  ],
  [
    '2026-11-22 03:14:00 +0000',
    1,
    'Uncorrected',
    'memory scrubbing error',
    'CPU_SrcID#1_MC#0_Chan#2_DIMM#0',
    0,
    2,
    0,
    -1,
    0x3_0000_1000,
    4096,
    0,
    'rank:1 bank:3',
  ],
] as const;

const MCE_COLUMNS =
  'timestamp, mcgcap, mcgstatus, status, addr, misc, ip, tsc, walltime, cpu, cpuid, apicid, socketid, cs, bank, cpuvendor, bank_name, error_msg, mcgstatus_msg, mcistatus_msg, mcastatus_msg, user_action, mc_location';
const MC_COLUMNS =
  'timestamp, err_count, err_type, err_msg, label, mc, top_layer, middle_layer, lower_layer, address, grain, syndrome, driver_detail';

/** The INSERT rasdaemon prepares (`INSERT INTO t (id, ...) VALUES (NULL, ...)`), with the values of a row. */
function inserts(): string {
  const mce = MCE_ROWS.map(
    ([ts, ...regs], i) =>
      `INSERT INTO mce_record (id, ${MCE_COLUMNS}) VALUES (NULL, ${text(ts)}, ${regs.map(i64).join(', ')}, 'Memory Controller', ${text(`rasdaemon's own text ${i}`)}, '', 'Corrected_error', '', '', '');`,
  );
  const mc = MC_ROWS.map(
    (r) =>
      `INSERT INTO mc_event (id, ${MC_COLUMNS}) VALUES (NULL, ${r.map((v) => (typeof v === 'string' ? text(v) : String(v))).join(', ')});`,
  );
  return [...mce, ...mc].join('\n');
}

/** ras-mc-ctl's --errors line of an mce_record: the registers it prints (it leaves out those that are 0). */
function mceRegisters(line: string): Record<string, bigint> {
  return Object.fromEntries([...line.matchAll(/, (\w+)=0x([0-9a-f]+)/g)].map((m) => [m[1]!, BigInt(`0x${m[2]}`)]));
}

/** The same registers of a record evtrace read, named as ras-mc-ctl names them, without the zero ones. */
function evtraceRegisters(r: MceRecord): Record<string, bigint> {
  const all: Record<string, bigint> = {
    mcgcap: r.mcgcap,
    mcgstatus: r.mcgstatus,
    status: r.status,
    addr: r.addr,
    misc: r.misc,
    ip: r.ip,
    tsc: r.tsc,
    walltime: r.time,
    cpu: BigInt(r.cpu),
    cpuid: BigInt(r.cpuid),
    apicid: BigInt(r.apicid ?? 0),
    socketid: BigInt(r.socketid ?? 0),
    cs: BigInt(r.cs),
    bank: BigInt(r.bank),
  };
  return Object.fromEntries(Object.entries(all).filter(([, v]) => v !== 0n));
}

/** The lines of one section of ras-mc-ctl's output ("MCE events:" up to the blank line). */
function section(out: string, title: string): string[] {
  const at = out.indexOf(`${title}\n`);
  if (at < 0) return [];
  const body = out.slice(at + title.length + 1);
  return body
    .slice(0, body.indexOf('\n\n') < 0 ? undefined : body.indexOf('\n\n'))
    .split('\n')
    .filter(Boolean);
}

/** mce_record as rasdaemon >= 0.8 creates it (ppin and microcode added): Debian 12's 0.6.8 cannot make it here. */
const NEWER_MCE_RECORD = `CREATE TABLE mce_record (id INTEGER PRIMARY KEY, timestamp TEXT, mcgcap INTEGER,
  mcgstatus INTEGER, status INTEGER, addr INTEGER, misc INTEGER, ip INTEGER, tsc INTEGER, walltime INTEGER, ppin INTEGER,
  cpu INTEGER, cpuid INTEGER, apicid INTEGER, socketid INTEGER, cs INTEGER, bank INTEGER, cpuvendor INTEGER,
  microcode INTEGER, bank_name TEXT, error_msg TEXT, mcgstatus_msg TEXT, mcistatus_msg TEXT, mcastatus_msg TEXT,
  user_action TEXT, mc_location TEXT)`;

const why = rasdaemonUnavailable();
describe.skipIf(why !== '')(
  `a database rasdaemon created, judged by ras-mc-ctl${why ? ` (skipped: ${why})` : ''}`,
  () => {
    const stateDir = join(dir, 'state');
    let db: string;
    /** The database as rasdaemon left it, before any row. */
    const fresh = join(dir, 'fresh.db');

    beforeAll(async () => {
      mkdirSync(stateDir);
      db = await rasdaemonDatabase(stateDir);
      copyFileSync(db, fresh);
      sqlite3(db, inserts());
    }, 30_000);

    it('the empty database rasdaemon -f -r creates at start: read, no record, no error', () => {
      expect(readRasdaemonDb(fresh)).toEqual({ records: [], edac: [], notes: [] });
    });

    it("the hand-made schema below is rasdaemon's mce_record plus the ppin and microcode columns of newer versions", () => {
      const columns = (file: string) =>
        sqlite3(file, "SELECT name FROM pragma_table_info('mce_record')").split('\n').filter(Boolean).sort();
      const newer = join(dir, 'schema-newer.db');
      sqlite3(newer, NEWER_MCE_RECORD);
      expect(columns(newer)).toEqual([...columns(fresh), 'microcode', 'ppin'].sort());
    });

    it('mce_record rows: the registers ras-mc-ctl --errors prints, unsigned again, and decoded', () => {
      const read = readMceFile(db);
      expect(read.kind).toBe('rasdaemon-db');
      expect(read.notes).toEqual([]);
      const lines = section(rasMcCtl(stateDir, '--errors'), 'MCE events:');
      expect(lines.length).toBe(MCE_ROWS.length);
      expect(read.records.map(evtraceRegisters)).toEqual(lines.map(mceRegisters));
      // The judge printed bit 63 of status and tsc: rasdaemon stored them as negative integers.
      expect(lines[1]).toMatch(/status=0xbd80000000100134, .*tsc=0x9000000012345678/);
      const [a, b] = read.records;
      expect(decodeMce(a!).location.channel).toBe(1);
      expect(decodeMce(b!).severity).toBe('srar');
    });

    it('mc_event rows: every field ras-mc-ctl --errors prints, and the groups of --summary', () => {
      const edac = readMceFile(db).edac ?? [];
      const out = rasMcCtl(stateDir, '--errors');
      const re =
        /^(\d+) (.+? [+-]\d{4}) (\d+) (\w+) error\(s\): (.*) at (.*) location: (-?\d+):(-?\d+):(-?\d+):(-?\d+), addr (\d+), grain (\d+), syndrome (\d+) (.*)$/;
      const judged = section(out, 'Memory controller events:').map((l) => {
        const m = re.exec(l);
        if (!m) throw new Error(`ras-mc-ctl line not understood: ${l}`);
        return {
          time: m[2],
          count: Number(m[3]),
          errorType: m[4]!.toLowerCase(),
          message: m[5],
          label: m[6],
          mc: Number(m[7]),
          layers: [Number(m[8]), Number(m[9]), Number(m[10])],
          address: BigInt(m[11]!),
          grain: BigInt(m[12]!),
          syndrome: BigInt(m[13]!),
          driverDetail: m[14],
          source: { kind: 'rasdaemon-db', file: db, row: Number(m[1]) },
        };
      });
      expect(judged.length).toBe(MC_ROWS.length);
      expect(edac).toEqual(judged);
      // --summary groups rows by type, label and location; evtrace's events, grouped the same way, count the same.
      const summary = rasMcCtl(stateDir, '--summary');
      const groups = new Map<string, number>();
      for (const e of edac) {
        const type = e.errorType[0]!.toUpperCase() + e.errorType.slice(1);
        const key = `${type} on DIMM Label(s): '${e.label}' location: ${e.mc}:${e.layers.join(':')}`;
        groups.set(key, (groups.get(key) ?? 0) + 1);
      }
      expect(
        section(summary, 'Memory controller events summary:')
          .map((l) => l.trim())
          .sort(),
      ).toEqual([...groups].map(([k, n]) => `${k} errors: ${n}`).sort());
      const mceTotal = section(summary, 'MCE records summary:').reduce(
        (n, l) => n + Number(/^\s*(\d+) /.exec(l)![1]),
        0,
      );
      expect(mceTotal).toBe(readMceFile(db).records.length);
    });
  },
);

describe('rasdaemon databases rasdaemon 0.6.8 cannot make here', () => {
  it('hand-made, labelled: the ppin and microcode columns newer rasdaemon versions add are read', () => {
    // rasdaemon >= 0.8 adds ppin and microcode to mce_record; Debian 12's 0.6.8 (the one run above) does not have them.
    const file = join(dir, 'newer.db');
    const db = new DatabaseSync(file);
    db.exec(NEWER_MCE_RECORD);
    db.prepare(`INSERT INTO mce_record (status, ppin, microcode, cpu, bank) VALUES (?, ?, ?, 3, 14)`).run(
      BigInt.asIntN(64, 0x8c00004000010091n),
      BigInt.asIntN(64, 0xa1b2c3d4e5f60718n),
      0x2007006,
    );
    db.exec('INSERT INTO mce_record (status) VALUES (NULL)');
    db.close();
    const read = readMceFile(file);
    expect(read.records.map((r) => [r.status, r.ppin, r.microcode, r.cpu, r.bank])).toEqual([
      [0x8c00004000010091n, 0xa1b2c3d4e5f60718n, 0x2007006, 3, 14],
    ]);
    expect(read.notes).toEqual([expect.objectContaining({ message: 'mce_record row 2 has no status: skipped' })]);
  });

  it('refuses an sqlite database without rasdaemon tables, and a file that is not sqlite', () => {
    const other = join(dir, 'other.db');
    const db = new DatabaseSync(other);
    db.exec('CREATE TABLE t (x INTEGER)');
    db.close();
    expect(() => readRasdaemonDb(other)).toThrow(/without rasdaemon mce_record or mc_event tables/);
    const junk = join(dir, 'junk.db');
    writeFileSync(junk, 'SQLite format 3\0 but then garbage '.repeat(40));
    expect(() => readRasdaemonDb(junk)).toThrow(MceError);
  });
});
