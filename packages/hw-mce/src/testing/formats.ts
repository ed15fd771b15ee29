/**
 * Format files for tests that build ring-buffer pages (this VM has no machine-check support: the `mce` system does not
 * exist in its tracefs, see /work/shared/KERNEL-NOTES.md).
 *
 * MCE_RECORD_FORMAT is `events/mce/mce_record/format` as Linux 6.x generates it from include/trace/events/mce.h
 * (TRACE_EVENT(mce_record) taking `struct mce_hw_err *`, with PPIN, microcode and the vendor-data dynamic array
 * `v_data`, v6.14 and later): the fields in TP_STRUCT__entry order at their natural alignment after the 8 bytes of
 * common fields, and TP_printk's format as the kernel prints it. The `ras:mc_event` format is read from this machine's
 * tracefs when it is mounted ({@link liveFormat}).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const MCE_RECORD_FORMAT = `name: mce_record
ID: 1501
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:u64 mcgcap;\toffset:8;\tsize:8;\tsigned:0;
\tfield:u64 mcgstatus;\toffset:16;\tsize:8;\tsigned:0;
\tfield:u64 status;\toffset:24;\tsize:8;\tsigned:0;
\tfield:u64 addr;\toffset:32;\tsize:8;\tsigned:0;
\tfield:u64 misc;\toffset:40;\tsize:8;\tsigned:0;
\tfield:u64 synd;\toffset:48;\tsize:8;\tsigned:0;
\tfield:u64 ipid;\toffset:56;\tsize:8;\tsigned:0;
\tfield:u64 ip;\toffset:64;\tsize:8;\tsigned:0;
\tfield:u64 tsc;\toffset:72;\tsize:8;\tsigned:0;
\tfield:u64 ppin;\toffset:80;\tsize:8;\tsigned:0;
\tfield:u64 walltime;\toffset:88;\tsize:8;\tsigned:0;
\tfield:u32 cpu;\toffset:96;\tsize:4;\tsigned:0;
\tfield:u32 cpuid;\toffset:100;\tsize:4;\tsigned:0;
\tfield:u32 apicid;\toffset:104;\tsize:4;\tsigned:0;
\tfield:u32 socketid;\toffset:108;\tsize:4;\tsigned:0;
\tfield:u8 cs;\toffset:112;\tsize:1;\tsigned:0;
\tfield:u8 bank;\toffset:113;\tsize:1;\tsigned:0;
\tfield:u8 cpuvendor;\toffset:114;\tsize:1;\tsigned:0;
\tfield:u32 microcode;\toffset:116;\tsize:4;\tsigned:0;
\tfield:__data_loc u8[] v_data;\toffset:120;\tsize:4;\tsigned:0;

print fmt: "CPU: %d, MCGc/s: %llx/%llx, MC%d: %016llx, IPID: %016llx, ADDR: %016llx, MISC: %016llx, SYND: %016llx, RIP: %02x:<%016llx>, TSC: %llx, PPIN: %llx, vendor: %u, CPUID: %x, time: %llu, socket: %u, APIC: %x, microcode: %x, vendor data: %s", REC->cpu, REC->mcgcap, REC->mcgstatus, REC->bank, REC->status, REC->ipid, REC->addr, REC->misc, REC->synd, REC->cs, REC->ip, REC->tsc, REC->ppin, REC->cpuvendor, REC->cpuid, REC->walltime, REC->socketid, REC->apicid, REC->microcode, __print_dynamic_array(v_data, sizeof(u8))
`;

/** The tracefs mount point of this machine, if any. */
export function tracefsRoot(): string | undefined {
  try {
    return readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((l) => l.split(' '))
      .find((f) => f[2] === 'tracefs')?.[1];
  } catch {
    return undefined;
  }
}

/** A format file of the running kernel (`ras/mc_event`), or undefined with the reason. */
export function liveFormat(system: string, event: string): { text?: string; why?: string } {
  const root = tracefsRoot();
  if (root === undefined) return { why: 'tracefs is not mounted' };
  const file = join(root, 'events', system, event, 'format');
  if (!existsSync(file)) return { why: `${file} does not exist on this kernel` };
  try {
    return { text: readFileSync(file, 'utf8') };
  } catch (error) {
    return { why: `${file}: ${(error as NodeJS.ErrnoException).code ?? error} (needs root)` };
  }
}

/** /work/shared/fixtures, resolved from this package (`../shared` of the repository root). */
export const FIXTURES = new URL('../../../../../shared/fixtures/', import.meta.url).pathname;

/** Fails loudly when the shared fixtures are missing (CI has them). */
export function fixture(path: string): string {
  const p = join(FIXTURES, path);
  if (!existsSync(p))
    throw new Error(`shared fixture missing: ${p} (tests need /work/shared/fixtures, as CI provides)`);
  return p;
}
