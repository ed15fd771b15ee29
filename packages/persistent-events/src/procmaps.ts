/**
 * Who has a buffer file mapped, from `/proc/PID/maps`: a read-write shared mapping is a writer, a read-only one a
 * reader. Nothing is registered in the buffer, so a killed process never leaves a stale entry behind. Processes of
 * other users are visible to root only.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Processes mapping one file. */
export interface Mappers {
  /** Pids with a read-write shared mapping. */
  writers: number[];
  /** Pids with a read-only shared mapping (and no read-write one). */
  readers: number[];
}

/** The `major:minor` device of a `stat` st_dev as /proc/PID/maps prints it (hex). */
export function mapsDevice(dev: number): string {
  const major = ((dev >>> 8) & 0xfff) | (Math.floor(dev / 2 ** 32) & ~0xfff);
  const minor = (dev & 0xff) | ((dev >>> 12) & 0xfff00);
  return `${major.toString(16).padStart(2, '0')}:${minor.toString(16).padStart(2, '0')}`;
}

/** Classifies the shared mappings of the file (device, inode) in one maps text. */
export function mappingsIn(mapsText: string, device: string, inode: number): { write: boolean; read: boolean } {
  let write = false;
  let read = false;
  const ino = String(inode);
  for (const line of mapsText.split('\n')) {
    // address perms offset dev inode path
    const f = line.split(/\s+/, 5);
    if (f[4] !== ino || f[3] !== device) continue;
    const perms = f[1] ?? '';
    if (perms[3] !== 's') continue;
    if (perms[1] === 'w') write = true;
    else read = true;
  }
  return { write, read };
}

/** Scans every visible process for shared mappings of the file (device `dev` from stat, `inode`). */
export function findMappers(dev: number, inode: number, procDir = '/proc'): Mappers {
  const device = mapsDevice(dev);
  const out: Mappers = { writers: [], readers: [] };
  let pids: string[];
  try {
    pids = readdirSync(procDir).filter((p) => /^\d+$/.test(p));
  } catch {
    return out;
  }
  for (const pid of pids) {
    let text: string;
    try {
      text = readFileSync(`${procDir}/${pid}/maps`, 'latin1');
    } catch {
      continue;
    }
    const m = mappingsIn(text, device, inode);
    if (m.write) out.writers.push(Number(pid));
    else if (m.read) out.readers.push(Number(pid));
  }
  return out;
}
