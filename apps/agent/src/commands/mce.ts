import { readFileSync } from 'node:fs';
import {
  type CpuKind,
  cpuTypeByName,
  type DecodedMce,
  decodeMce,
  edacCountersText,
  edacJson,
  edacSeverity,
  edacSummary,
  type InputKind,
  MceError,
  noteText,
  readMceFile,
  toJsonLine,
  toText,
} from '@evtrace/hw-mce';
import type { Command } from 'commander';
import { ExitCode } from '../exit-codes.ts';
import { setExamples } from '../help.ts';
import { addCommand, CliExit, type CliIO } from '../program.ts';
import { bufferedWriter } from './cat.ts';

const KINDS: readonly InputKind[] = [
  'mcelog-ascii',
  'kernel-log',
  'trace-text',
  'struct-mce',
  'trace',
  'rasdaemon-db',
  'edac-sysfs',
];

interface DecodeOptions {
  cpu?: string;
  json?: boolean;
  inputFormat?: string;
  recordLength?: string;
}

/** `evtrace mce`: machine checks and memory errors. */
export function registerMce(program: Command, io: CliIO): void {
  const mce = addCommand(program, 'mce')
    .summary('decode x86 machine checks and EDAC memory errors')
    .description(
      `Decodes machine-check records (Intel, including model-specific memory-controller fields, and AMD Zen Scalable
MCA) from the inputs mcelog and rasdaemon read, grades them as the kernel does and says what to do.`,
    );
  const decode = addCommand(mce, 'decode')
    .summary('decode machine-check records from a file or stdin')
    .description(
      `Reads FILE (or stdin with - or no FILE) and prints every machine-check record: what failed, where (socket,
channel, DIMM, page), how bad (corrected, deferred, ucna, srao, srar, fatal, as the kernel grades it) and what to do.
The input kind is detected: mcelog --ascii input and its decoded or --raw output, kernel log text (dmesg, syslog,
journald), mce:mce_record text lines (all three layouts), binary struct mce records (/dev/mcelog), a trace.dat or
raw-pages directory holding mce:mce_record / ras:mc_event, a rasdaemon sqlite database, or an EDAC sysfs tree
(/sys/devices/system/edac). --input-format forces one of: ${KINDS.join(', ')}. Problems in the input (truncated
records, garbage lines, bad values) are reported on stderr with their line and column or byte offset; every good
record around them is decoded. Exit status 1 when the input holds no record at all.
With --json, one object per record per line: cpu, bank, status, addr (hex or null), misc (hex or null), mcgstatus,
severity, class, summary, and the decoded details.`,
    )
    .argument('[file]', "input file or directory; '-' or nothing for stdin")
    .option('--cpu <type>', 'decode as this CPU type (e.g. skylake_server, nehalem, zen) instead of the recorded CPUID')
    .option('--json', 'one JSON object per record per line')
    .option('--input-format <kind>', `force the input kind (${KINDS.join('|')})`)
    .option('--record-length <bytes>', 'struct mce record length (MCE_GET_RECORD_LEN) of a binary dump; default probed')
    .action((file: string | undefined, options: DecodeOptions) => {
      let cpu: CpuKind | undefined;
      try {
        cpu = options.cpu === undefined ? undefined : cpuTypeByName(options.cpu);
      } catch (error) {
        throw new CliExit(ExitCode.Usage, `--cpu: ${(error as Error).message}`);
      }
      const kind = options.inputFormat as InputKind | undefined;
      if (kind !== undefined && !KINDS.includes(kind)) {
        throw new CliExit(ExitCode.Usage, `--input-format must be one of ${KINDS.join(', ')}, not '${kind}'`);
      }
      let recordLength: number | undefined;
      if (options.recordLength !== undefined) {
        recordLength = Number(options.recordLength);
        if (!/^\d+$/.test(options.recordLength) || recordLength < 88) {
          throw new CliExit(ExitCode.Usage, '--record-length must be an integer of at least 88 (bytes)');
        }
      }
      const stdin = file === undefined || file === '-';
      let result: ReturnType<typeof readMceFile>;
      try {
        result = stdin
          ? readMceFile(readFileSync(0), {
              ...(kind ? { kind } : {}),
              file: '<stdin>',
              ...(recordLength ? { recordLength } : {}),
            })
          : readMceFile(file, { ...(kind ? { kind } : {}), ...(recordLength ? { recordLength } : {}) });
      } catch (error) {
        if (error instanceof MceError) throw new CliExit(ExitCode.Failure, `${error.code}: ${error.message}`);
        throw error;
      }
      const out = bufferedWriter(io.stdout);
      const format: (d: DecodedMce) => string = options.json ? toJsonLine : toText;
      const edac = result.edac ?? [];
      const counters = result.counters ?? [];
      try {
        for (const r of result.records) out.put(format(decodeMce(r, cpu ? { cpu } : {})));
        for (const e of edac) {
          out.put(
            options.json
              ? `${JSON.stringify(edacJson(e))}\n`
              : `${edacSeverity(e.errorType).toUpperCase()}: ${edacSummary(e)}\n\n`,
          );
        }
        if (counters.length > 0) {
          out.put(
            options.json
              ? counters.map((c) => `${JSON.stringify({ edac_controller: c })}\n`).join('')
              : edacCountersText(counters),
          );
        }
      } finally {
        out.flush();
        for (const n of result.notes) io.stderr(`evtrace: ${noteText(n)}\n`);
      }
      if (result.records.length === 0 && edac.length === 0 && counters.length === 0) {
        throw new CliExit(
          ExitCode.Failure,
          `no machine-check record in ${stdin ? 'stdin' : file} (read as ${result.kind})`,
        );
      }
    });
  setExamples(
    decode,
    `evtrace mce decode mcelog.txt                    mcelog --ascii input, detected
dmesg | evtrace mce decode                       kernel log lines from stdin
evtrace mce decode --json /var/log/kern.log      one JSON object per record
evtrace mce decode --cpu skylake_server rec.txt  decode as a given CPU
evtrace mce decode /var/lib/rasdaemon/ras-mc_event.db`,
  );
}
