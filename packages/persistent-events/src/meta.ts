/**
 * The metadata page that follows the ring buffer region in a buffer file: the ringbuf header page says how big the
 * region is, and at that offset a 4 KiB page holds "EVPM", a version, and a JSON document (creation time, event
 * classes). The region itself is untouched ringbuf layout, readable by anything that reads ringbuf.
 */
import { PersistentError } from './errors.ts';

/** "EVPM" in file order, as a little-endian u32. */
export const META_MAGIC = 0x4d505645;
export const META_VERSION = 1;
export const META_SIZE = 4096;
const META_HEADER = 12;

/** One record type of a buffer, named. */
export interface EventClass {
  /** The ringbuf record type (0 .. 2^32 - 1). */
  type: number;
  /** `system:event` style name, 1..128 printable characters. */
  name: string;
}

/** What the metadata page records. */
export interface BufferMeta {
  /** Creation time, ISO 8601 UTC. */
  created: string;
  classes: EventClass[];
}

/** Validates event classes given as names (type = position) or as {type, name}. */
export function normalizeClasses(classes: ReadonlyArray<string | EventClass> | undefined): EventClass[] {
  const out: EventClass[] = [];
  const seen = new Set<number>();
  (classes ?? []).forEach((c, i) => {
    const cls = typeof c === 'string' ? { type: i, name: c } : { type: c?.type, name: c?.name };
    if (!Number.isInteger(cls.type) || cls.type < 0 || cls.type > 0xffff_ffff) {
      throw new PersistentError(
        'ERR_PERSISTENT_ARGUMENT',
        `event class ${i}: type ${String(cls.type)} must be an integer 0..2^32-1`,
      );
    }
    if (typeof cls.name !== 'string' || !/^[\x21-\x7e]{1,128}$/.test(cls.name)) {
      throw new PersistentError(
        'ERR_PERSISTENT_ARGUMENT',
        `event class ${i}: name must be 1..128 printable ASCII characters`,
      );
    }
    if (seen.has(cls.type))
      throw new PersistentError('ERR_PERSISTENT_ARGUMENT', `event class ${i}: type ${cls.type} given twice`);
    seen.add(cls.type);
    out.push(cls as EventClass);
  });
  return out;
}

/** Encodes the metadata page. */
export function encodeMeta(meta: BufferMeta): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(meta));
  if (json.length > META_SIZE - META_HEADER) {
    throw new PersistentError(
      'ERR_PERSISTENT_ARGUMENT',
      `buffer metadata (event classes) takes ${json.length} bytes; at most ${META_SIZE - META_HEADER}`,
    );
  }
  const page = new Uint8Array(META_SIZE);
  const dv = new DataView(page.buffer);
  dv.setUint32(0, META_MAGIC, true);
  dv.setUint32(4, META_VERSION, true);
  dv.setUint32(8, json.length, true);
  page.set(json, META_HEADER);
  return page;
}

/**
 * Decodes the metadata page found at file offset `base` of `path`.
 * @throws PersistentError `ERR_PERSISTENT_CORRUPT` with the file offset of the bad field.
 */
export function decodeMeta(page: Uint8Array, base: number, path: string): BufferMeta {
  const bad = (at: number, why: string) =>
    new PersistentError('ERR_PERSISTENT_CORRUPT', `metadata page ${why}`, { path, offset: base + at });
  if (page.length < META_SIZE) throw bad(page.length, `is truncated (${page.length} of ${META_SIZE} bytes)`);
  const dv = new DataView(page.buffer, page.byteOffset, page.length);
  const magic = dv.getUint32(0, true);
  if (magic !== META_MAGIC) throw bad(0, `magic 0x${magic.toString(16)} is not "EVPM"`);
  const version = dv.getUint32(4, true);
  if (version !== META_VERSION) throw bad(4, `version ${version} is not ${META_VERSION}`);
  const length = dv.getUint32(8, true);
  if (length > META_SIZE - META_HEADER) throw bad(8, `JSON length ${length} exceeds the page`);
  let doc: unknown;
  try {
    doc = JSON.parse(
      new TextDecoder('utf-8', { fatal: true }).decode(page.subarray(META_HEADER, META_HEADER + length)),
    );
  } catch (error) {
    throw bad(META_HEADER, `JSON does not parse: ${(error as Error).message}`);
  }
  const m = doc as Partial<BufferMeta> | null;
  if (m === null || typeof m !== 'object' || typeof m.created !== 'string' || !Array.isArray(m.classes)) {
    throw bad(META_HEADER, 'JSON lacks created and classes');
  }
  try {
    return { created: m.created, classes: normalizeClasses(m.classes) };
  } catch (error) {
    throw bad(META_HEADER, (error as Error).message);
  }
}
