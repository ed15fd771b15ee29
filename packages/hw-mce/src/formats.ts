/**
 * The format files of the two tracepoints this package reads, for sources that produce their pages without a kernel
 * that has them (the agent's hardware source on a host without machine-check support, tests).
 *
 * MCE_RECORD_FORMAT is `events/mce/mce_record/format` as Linux 6.x generates it from include/trace/events/mce.h
 * (TRACE_EVENT(mce_record) taking `struct mce_hw_err *`, with PPIN, microcode and the vendor-data dynamic array
 * `v_data`, v6.14 and later): the fields in TP_STRUCT__entry order at their natural alignment after the 8 bytes of
 * common fields, and TP_printk's format as the kernel prints it. MC_EVENT_FORMAT is `events/ras/mc_event/format` as
 * Linux 6.18 (x86-64) prints it (include/trace/events/ras.h). A kernel's own format files take precedence: their IDs
 * and layouts are the ones its pages use.
 */

import { FTRACE_COMMON_FIELDS_TEXT } from '@evtrace/trace-format';

export const MCE_RECORD_FORMAT = `name: mce_record
ID: 1501
format:
${FTRACE_COMMON_FIELDS_TEXT}
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

export const MC_EVENT_FORMAT = `name: mc_event
ID: 2206
format:
${FTRACE_COMMON_FIELDS_TEXT}
	field:unsigned int error_type;	offset:8;	size:4;	signed:0;
	field:__data_loc char[] msg;	offset:12;	size:4;	signed:0;
	field:__data_loc char[] label;	offset:16;	size:4;	signed:0;
	field:u16 error_count;	offset:20;	size:2;	signed:0;
	field:u8 mc_index;	offset:22;	size:1;	signed:0;
	field:s8 top_layer;	offset:23;	size:1;	signed:1;
	field:s8 middle_layer;	offset:24;	size:1;	signed:1;
	field:s8 lower_layer;	offset:25;	size:1;	signed:1;
	field:long address;	offset:32;	size:8;	signed:1;
	field:u8 grain_bits;	offset:40;	size:1;	signed:0;
	field:long syndrome;	offset:48;	size:8;	signed:1;
	field:__data_loc char[] driver_detail;	offset:56;	size:4;	signed:0;

print fmt: "%d %s error%s:%s%s on %s (mc:%d location:%d:%d:%d address:0x%08lx grain:%d syndrome:0x%08lx%s%s)", REC->error_count, mc_event_error_type(REC->error_type), REC->error_count > 1 ? "s" : "", __get_str(msg)[0] ? " " : "", __get_str(msg), __get_str(label), REC->mc_index, REC->top_layer, REC->middle_layer, REC->lower_layer, REC->address, 1 << REC->grain_bits, REC->syndrome, __get_str(driver_detail)[0] ? " " : "", __get_str(driver_detail)
`;

/**
 * `evtrace:mce_threshold`: a leaky-bucket threshold crossed (what mcelog reports and triggers on), written by the
 * agent's hardware source into the session after the machine check that crossed it. No kernel has this event; its
 * format file follows the kernel's conventions (common fields, then the fields at their natural alignment, strings
 * as `__data_loc char[]`) so trace-cmd, babeltrace2 and evtrace read it like a tracepoint. Its ID sits at the top of
 * the 16-bit range, far from the IDs kernels give their events.
 */
export const MCE_THRESHOLD_FORMAT = `name: mce_threshold
ID: 65101
format:
${FTRACE_COMMON_FIELDS_TEXT}
\tfield:__data_loc char[] kind;\toffset:8;\tsize:4;\tsigned:0;
\tfield:__data_loc char[] location;\toffset:12;\tsize:4;\tsigned:0;
\tfield:__data_loc char[] message;\toffset:16;\tsize:4;\tsigned:0;
\tfield:__data_loc char[] threshold;\toffset:20;\tsize:4;\tsigned:0;
\tfield:__data_loc char[] action;\toffset:24;\tsize:4;\tsigned:0;
\tfield:__data_loc char[] result;\toffset:28;\tsize:4;\tsigned:0;
\tfield:unsigned int count;\toffset:32;\tsize:4;\tsigned:0;
\tfield:unsigned int cpu;\toffset:36;\tsize:4;\tsigned:0;
\tfield:unsigned int bank;\toffset:40;\tsize:4;\tsigned:0;
\tfield:u64 addr;\toffset:48;\tsize:8;\tsigned:0;

print fmt: "%s %s: %s, count %u, threshold %s, cpu %u bank %u addr %llx, action %s: %s", __get_str(kind), __get_str(location), __get_str(message), REC->count, __get_str(threshold), REC->cpu, REC->bank, REC->addr, __get_str(action), __get_str(result)
`;
