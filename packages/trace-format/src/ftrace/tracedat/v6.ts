/** Version 6 of trace.dat (trace-cmd.dat.v6(5)): the head, then each CPU's pages uncompressed and page-aligned. */
import { commonOptions, eventsBlock, ftraceBlock, headersBlock, type Meta, start } from './blocks.ts';
import { OPTION } from './ids.ts';
import { checkedChunks, type TraceDatCpuPages } from './pages.ts';
import { Out, partSize, putBytes, putParts } from './parts.ts';

function v6Head(meta: Meta, sizes: readonly number[], pageSize: number): Buffer {
  return v6HeadParts(meta, sizes, pageSize).bytes();
}

/** The head of a version 6 file; each CPU's pages follow it in order unless `offsets` places them. */
export function v6HeadParts(meta: Meta, sizes: readonly number[], pageSize: number, offsets?: readonly number[]): Out {
  const o = new Out();
  start(o, 6, pageSize);
  headersBlock(o, meta);
  ftraceBlock(o, meta);
  eventsBlock(o, meta);
  o.u32(partSize(meta.kallsyms));
  o.put(meta.kallsyms);
  o.u32(Buffer.byteLength(meta.printk));
  o.str(meta.printk);
  o.u64(Buffer.byteLength(meta.cmdlines));
  o.str(meta.cmdlines);
  o.u32(sizes.length);
  o.str('options  \0');
  commonOptions(o, meta, sizes.length);
  o.u16(OPTION.done);
  o.str('flyrecord\0');
  // The CPU table's offsets are known once the table's own size is: header + 16 bytes per CPU, then page-aligned data.
  let at = Math.ceil((o.length + 16 * sizes.length) / pageSize) * pageSize;
  for (const [cpu, size] of sizes.entries()) {
    o.u64(size === 0 ? 0 : (offsets?.[cpu] ?? at));
    o.u64(size);
    at += Math.ceil(size / pageSize) * pageSize;
  }
  o.align(pageSize);
  return o;
}

export function writeV6(meta: Meta, cpuPages: Buffer[], pageSize: number): Buffer {
  const o = new Out();
  o.put(
    v6Head(
      meta,
      cpuPages.map((p) => p.length),
      pageSize,
    ),
  );
  for (const p of cpuPages) {
    if (p.length === 0) continue;
    o.align(pageSize);
    o.put(p);
  }
  return o.bytes();
}

/**
 * Writes a version 6 file into the open file `fd` from offset 0, each CPU's pages copied by `copyTo` where it can,
 * read chunk by chunk otherwise. Every write is positional: the head's parts may be copied by the kernel at an offset,
 * which moves no position. Returns the file's size.
 */
export function writeV6File(
  fd: number,
  meta: Meta,
  cpus: readonly TraceDatCpuPages[],
  pageSize: number,
  file: string | undefined,
): number {
  const head = v6HeadParts(
    meta,
    cpus.map((c) => c.size),
    pageSize,
  );
  let written = putParts(fd, head.parts);
  for (let cpu = 0; cpu < cpus.length; cpu++) {
    if (cpus[cpu]!.size === 0) continue;
    written = putBytes(fd, Buffer.alloc((pageSize - (written % pageSize)) % pageSize), written);
    if (cpus[cpu]!.copyTo?.(fd, written) === true) written += cpus[cpu]!.size;
    else for (const chunk of checkedChunks(cpus[cpu]!, cpu, file)) written = putBytes(fd, chunk, written);
  }
  return written;
}
