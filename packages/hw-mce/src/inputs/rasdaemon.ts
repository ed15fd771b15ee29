/**
 * rasdaemon's sqlite database (`ras-mc_event.db`, tables `mce_record` and `mc_event` as ras-record.c creates them),
 * read with Node's built-in `node:sqlite`. Registers are re-decoded here; rasdaemon's own text columns are not
 * trusted. sqlite integers are signed 64-bit: registers come back to unsigned.
 */
import type { DatabaseSync } from 'node:sqlite';
import { EDAC_ERROR_TYPES, type EdacErrorType, type EdacEvent } from '../edac.ts';
import { type InputNote, MceError } from '../errors.ts';
import { emptyRecord, type MceRecord } from '../record.ts';

export interface RasdaemonResult {
  readonly records: MceRecord[];
  readonly edac: EdacEvent[];
  readonly notes: InputNote[];
}

type Row = Record<string, unknown>;

function u64(v: unknown): bigint {
  if (typeof v === 'bigint') return BigInt.asUintN(64, v);
  if (typeof v === 'number' && Number.isFinite(v)) return BigInt.asUintN(64, BigInt(Math.trunc(v)));
  return 0n;
}

function int(v: unknown): number | undefined {
  return typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : undefined;
}

/** rasdaemon stores err_type as text ("Corrected", "Uncorrected", "Deferred", "Fatal", "Info"). */
function errorType(v: unknown): EdacErrorType {
  const t = String(v ?? '').toLowerCase();
  return (EDAC_ERROR_TYPES as readonly string[]).includes(t) ? (t as EdacErrorType) : 'info';
}

/** Reads a rasdaemon database. @throws MceError `ERR_MCE_INPUT` when it is not an sqlite file with those tables. */
export function readRasdaemonDb(path: string): RasdaemonResult {
  let db: DatabaseSync;
  try {
    // Loaded on use: most inputs never need sqlite (and bundlers drop the node: prefix of a static import of it).
    const { DatabaseSync: Database } = process.getBuiltinModule('node:sqlite') as typeof import('node:sqlite');
    db = new Database(path, { readOnly: true, readBigInts: true });
  } catch (error) {
    throw new MceError('ERR_MCE_INPUT', `not a readable sqlite database: ${(error as Error).message}`, {
      location: { file: path },
      cause: error,
    });
  }
  try {
    const tables = new Set(
      (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Row[]).map((r) => String(r.name)),
    );
    if (!tables.has('mce_record') && !tables.has('mc_event')) {
      throw new MceError('ERR_MCE_INPUT', 'sqlite database without rasdaemon mce_record or mc_event tables', {
        location: { file: path },
      });
    }
    const notes: InputNote[] = [];
    const records: MceRecord[] = [];
    if (tables.has('mce_record')) {
      for (const row of db.prepare('SELECT * FROM mce_record ORDER BY id').all() as Row[]) {
        const id = int(row.id) ?? 0;
        if (row.status === null || row.status === undefined) {
          notes.push({ location: { file: path, line: id }, message: `mce_record row ${id} has no status: skipped` });
          continue;
        }
        const r = emptyRecord({ kind: 'rasdaemon-db', file: path, line: id });
        r.mcgcap = u64(row.mcgcap);
        r.mcgstatus = u64(row.mcgstatus);
        r.status = u64(row.status);
        r.addr = u64(row.addr);
        r.misc = u64(row.misc);
        r.ip = u64(row.ip);
        r.tsc = u64(row.tsc);
        r.time = u64(row.walltime);
        r.ppin = u64(row.ppin);
        r.cpu = int(row.cpu) ?? 0;
        r.cpuid = (int(row.cpuid) ?? 0) >>> 0;
        r.apicid = int(row.apicid);
        r.socketid = int(row.socketid);
        r.cs = int(row.cs) ?? 0;
        r.bank = int(row.bank) ?? 0;
        r.cpuvendor = int(row.cpuvendor);
        r.microcode = (int(row.microcode) ?? 0) >>> 0;
        // Newer rasdaemon versions keep the SMCA registers too.
        r.synd = u64(row.synd);
        r.ipid = u64(row.ipid);
        records.push(r);
      }
    }
    const edac: EdacEvent[] = [];
    if (tables.has('mc_event')) {
      for (const row of db.prepare('SELECT * FROM mc_event ORDER BY id').all() as Row[]) {
        edac.push({
          errorType: errorType(row.err_type),
          count: int(row.err_count) ?? 1,
          message: String(row.err_msg ?? ''),
          label: String(row.label ?? ''),
          mc: int(row.mc) ?? 0,
          layers: [int(row.top_layer) ?? -1, int(row.middle_layer) ?? -1, int(row.lower_layer) ?? -1],
          address: u64(row.address),
          grain: u64(row.grain),
          syndrome: u64(row.syndrome),
          driverDetail: String(row.driver_detail ?? ''),
          ...(row.timestamp ? { time: String(row.timestamp) } : {}),
          source: { kind: 'rasdaemon-db', file: path, row: int(row.id) ?? 0 },
        });
      }
    }
    return { records, edac, notes };
  } catch (error) {
    if (error instanceof MceError) throw error;
    throw new MceError('ERR_MCE_INPUT', `not a readable rasdaemon database: ${(error as Error).message}`, {
      location: { file: path },
      cause: error,
    });
  } finally {
    db.close();
  }
}
