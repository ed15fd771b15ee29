/**
 * A rasdaemon database built here with node:sqlite in rasdaemon's schema (ras-record.c: tables mce_record and
 * mc_event, the columns and types it creates; rasdaemon is not installed on this VM).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeMce } from '../decode.ts';
import { MceError } from '../errors.ts';
import { readMceFile } from '../read.ts';
import { readRasdaemonDb } from './rasdaemon.ts';

const dir = mkdtempSync(join(tmpdir(), 'hw-mce-ras-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function rasdaemonDb(): string {
  const file = join(dir, 'ras-mc_event.db');
  const db = new DatabaseSync(file);
  db.exec(`CREATE TABLE mce_record (id INTEGER PRIMARY KEY, timestamp TEXT, mcgcap INTEGER, mcgstatus INTEGER,
    status INTEGER, addr INTEGER, misc INTEGER, ip INTEGER, tsc INTEGER, walltime INTEGER, ppin INTEGER, cpu INTEGER,
    cpuid INTEGER, apicid INTEGER, socketid INTEGER, cs INTEGER, bank INTEGER, cpuvendor INTEGER, microcode INTEGER,
    bank_name TEXT, error_msg TEXT, mcgstatus_msg TEXT, mcistatus_msg TEXT, mcastatus_msg TEXT, user_action TEXT,
    mc_location TEXT)`);
  db.exec(`CREATE TABLE mc_event (id INTEGER PRIMARY KEY, timestamp TEXT, err_count INTEGER, err_type TEXT,
    err_msg TEXT, label TEXT, mc INTEGER, top_layer INTEGER, middle_layer INTEGER, lower_layer INTEGER,
    address INTEGER, grain INTEGER, syndrome INTEGER, driver_detail TEXT)`);
  const ins = db.prepare(`INSERT INTO mce_record (timestamp, mcgcap, mcgstatus, status, addr, misc, ip, tsc, walltime,
    ppin, cpu, cpuid, apicid, socketid, cs, bank, cpuvendor, microcode, bank_name, error_msg) VALUES
    (?, ?, ?, ?, ?, ?, 0, 0, ?, 0, ?, ?, ?, ?, 0, ?, ?, ?, 'x', 'rasdaemon text is not trusted')`);
  // sqlite integers are signed: rasdaemon stores a status with bit 63 set as a negative number.
  ins.run(
    '2026-11-22 03:12:01 +0000',
    0x1000c16n,
    0n,
    BigInt.asIntN(64, 0x8c00004000010091n),
    0x1234000n,
    0x86n,
    1763781121n,
    3,
    0x50654,
    0x44,
    1,
    14,
    0,
    0x2007006,
  );
  ins.run(
    '2026-11-22 03:12:02 +0000',
    0n,
    5n,
    BigInt.asIntN(64, 0xbd80000000100134n),
    0x7f001000n,
    0x86n,
    1763781122n,
    5,
    0x50654,
    5,
    0,
    1,
    0,
    0x2007006,
  );
  db.prepare(`INSERT INTO mc_event (timestamp, err_count, err_type, err_msg, label, mc, top_layer, middle_layer,
    lower_layer, address, grain, syndrome, driver_detail) VALUES (?, 2, 'Corrected', 'memory read error',
    'CPU_SrcID#0_MC#1_Chan#0_DIMM#1', 1, 0, 1, -1, ?, 64, 0, 'rank:0')`).run('2026-11-22 03:13:00 +0000', 0x55aa000n);
  db.close();
  return file;
}

describe('rasdaemon sqlite database (node:sqlite)', () => {
  it('reads mce_record rows as registers (unsigned again) and mc_event rows as EDAC events', () => {
    const file = rasdaemonDb();
    const read = readMceFile(file);
    expect(read.kind).toBe('rasdaemon-db');
    expect(read.records.length).toBe(2);
    const [a, b] = read.records;
    expect([a!.status, a!.cpu, a!.bank, a!.socketid, a!.apicid, a!.time]).toEqual([
      0x8c00004000010091n,
      3,
      14,
      1,
      0x44,
      1763781121n,
    ]);
    expect(decodeMce(a!).location.channel).toBe(1);
    expect(decodeMce(b!).severity).toBe('srar');
    expect(read.edac).toEqual([
      expect.objectContaining({
        errorType: 'corrected',
        count: 2,
        label: 'CPU_SrcID#0_MC#1_Chan#0_DIMM#1',
        mc: 1,
        layers: [0, 1, -1],
        address: 0x55aa000n,
      }),
    ]);
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
