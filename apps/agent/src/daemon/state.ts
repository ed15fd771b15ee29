/**
 * The agent's state directory: one `sessions/NAME/state.json` per session (its spec, the agent's pid, the tracefs
 * instance, the state, the `.part` being written and whose rights its paths are opened with), rewritten through a temporary file and a rename so a crash
 * never leaves half a state file. After kill -9 the next agent reads them to re-adopt or clean what was left.
 */
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SessionSpec, SessionState, TriggerSpec } from '@evtrace/agent-protocol';
import type { Caller } from './caller.ts';
import type { AttachTarget } from './persistent.ts';

/** What a state file holds. */
export interface SessionRecord {
  readonly spec: SessionSpec;
  /** The source after `auto` was resolved. */
  readonly source: string;
  readonly pid: number;
  readonly instance?: string;
  readonly state: SessionState;
  readonly part?: string;
  readonly triggers: readonly TriggerSpec[];
  /** The persistent buffer an attached session reads (a restarted agent attaches to it again). */
  readonly persistent?: AttachTarget;
  /** Who created the session (absent: the agent itself): its paths are opened with their rights, also after a restart. */
  readonly owner?: Caller;
}

export const sessionsDir = (stateDir: string) => join(stateDir, 'sessions');

export function writeRecord(dir: string, record: SessionRecord): void {
  const file = join(dir, 'state.json');
  writeFileSync(`${file}.next`, `${JSON.stringify(record, null, 2)}\n`);
  renameSync(`${file}.next`, file);
}

/** Every readable state file; unreadable ones are reported, not fatal. */
export function readRecords(stateDir: string): {
  records: { dir: string; record: SessionRecord }[];
  problems: string[];
} {
  const root = sessionsDir(stateDir);
  const records: { dir: string; record: SessionRecord }[] = [];
  const problems: string[] = [];
  if (!existsSync(root)) return { records, problems };
  for (const name of readdirSync(root).sort()) {
    const file = join(root, name, 'state.json');
    try {
      const record = JSON.parse(readFileSync(file, 'utf8')) as SessionRecord;
      if (typeof record?.spec?.name !== 'string' || typeof record.pid !== 'number') throw new Error('not a state file');
      records.push({ dir: join(root, name), record });
    } catch (error) {
      problems.push(`${file}: ${(error as Error).message}`);
    }
  }
  return { records, problems };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
