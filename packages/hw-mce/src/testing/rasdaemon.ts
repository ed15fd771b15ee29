/**
 * Debian's rasdaemon as the author of the database tests read: `rasdaemon -f -r` creates `ras-mc_event.db` with its
 * own schema, `ras-mc-ctl --errors` / `--summary` print what it holds. Both use the fixed path
 * `/var/lib/rasdaemon/ras-mc_event.db`, so each runs in a private mount namespace with a temporary directory bound
 * over `/var/lib/rasdaemon`: the host's directory is never written.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { tracefsRoot } from './formats.ts';

/** rasdaemon's state directory, where it and ras-mc-ctl find `ras-mc_event.db`. */
const STATE_DIR = '/var/lib/rasdaemon';
/** The tables rasdaemon 0.6.8 (Debian 12) creates with `--record`. */
export const RASDAEMON_TABLES = ['aer_event', 'extlog_event', 'mc_event', 'mce_record'] as const;

function onPath(tool: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Why rasdaemon cannot create a database here, or '' when it can. */
export function rasdaemonUnavailable(): string {
  if (process.getuid?.() !== 0) return 'rasdaemon and mount namespaces need root';
  // ras-mc-ctl exits at start without modprobe (Debian's kmod).
  for (const tool of ['rasdaemon', 'ras-mc-ctl', 'unshare', 'sqlite3', 'modprobe']) {
    if (!onPath(tool)) return `${tool} is not installed (tooling/ci/apt-packages.txt)`;
  }
  try {
    execFileSync('unshare', ['-m', 'true'], { stdio: 'ignore' });
  } catch {
    return 'no private mount namespace here (unshare -m failed)';
  }
  const tracefs = tracefsRoot();
  if (tracefs === undefined) return 'tracefs is not mounted (rasdaemon reads its events there)';
  if (existsSync(join(tracefs, 'instances', 'rasdaemon'))) return 'a rasdaemon instance exists: rasdaemon runs here';
  return '';
}

/** `sh -c SCRIPT` in a private mount namespace where `dir` is bound over /var/lib/rasdaemon; `args` follow. */
function inNamespace(dir: string, script: string, args: readonly string[] = []): [string, string[]] {
  // The mount point must exist to bind over it; Debian's package does not ship it (systemd would create it).
  mkdirSync(STATE_DIR, { recursive: true });
  return ['unshare', ['-m', 'sh', '-c', `mount --bind "$1" ${STATE_DIR} && shift && ${script}`, 'sh', dir, ...args]];
}

function tablesOf(db: string): string[] {
  if (!existsSync(db)) return [];
  try {
    const d = new DatabaseSync(db, { readOnly: true });
    try {
      const rows = d.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all();
      return rows.map((r) => String(r.name));
    } finally {
      d.close();
    }
  } catch {
    return []; // being created (locked, or not yet a database)
  }
}

/**
 * Starts `rasdaemon -f -r` with `dir` as its state directory, waits until its database holds all of
 * {@link RASDAEMON_TABLES} (it makes them at start; the wait is long for a loaded machine), stops it with SIGTERM and
 * removes the tracefs instance it leaves. Returns the database path.
 */
export async function rasdaemonDatabase(dir: string, timeoutMs = 10_000): Promise<string> {
  const db = join(dir, 'ras-mc_event.db');
  const [cmd, args] = inNamespace(dir, 'exec rasdaemon -f -r');
  const started = performance.now();
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let created = false;
  try {
    while (performance.now() - started < timeoutMs && child.exitCode === null) {
      // The database is opened only once rasdaemon says it records every table: a reader's lock while it creates
      // them makes its CREATE TABLE fail with SQLITE_BUSY, which it does not retry.
      const said = RASDAEMON_TABLES.every((t) => stderr.includes(`Recording ${t} events`));
      created = said && RASDAEMON_TABLES.every((t) => tablesOf(db).includes(t));
      if (created) break;
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    child.kill('SIGTERM');
    await exited;
    const instance = join(tracefsRoot() ?? '/sys/kernel/tracing', 'instances', 'rasdaemon');
    if (existsSync(instance)) rmdirSync(instance);
  }
  if (!created) throw new Error(`rasdaemon -f -r created no ${RASDAEMON_TABLES.join(', ')} in ${db}:\n${stderr}`);
  return db;
}

/** `ras-mc-ctl ARGS` reading the database in `dir` (its fixed path, in a private mount namespace). */
export function rasMcCtl(dir: string, ...args: string[]): string {
  const [cmd, argv] = inNamespace(dir, 'exec ras-mc-ctl "$@"', args);
  return execFileSync(cmd, argv, { encoding: 'utf8' });
}

/** Runs SQL with the sqlite3 CLI (a writer other than the node:sqlite evtrace reads with). */
export function sqlite3(db: string, sql: string): string {
  return execFileSync('sqlite3', ['-bail', db, sql], { encoding: 'utf8' });
}
