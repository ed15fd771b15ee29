/**
 * A SOFTWARE branch source: real programs run under QEMU user mode (`qemu-x86_64 -d in_asm,exec,nochain`). `in_asm`
 * prints each translated block's instructions (address, bytes, mnemonic) once; `exec` with chaining off prints every
 * executed block (`Trace VCPU: HOST [CS_BASE/PC/FLAGS/CFLAGS] SYMBOL`). A taken branch is where the next executed
 * block does not start right after the previous block's last instruction; that instruction says its kind (call, ret,
 * jmp, jcc). No hardware is involved: records carry no prediction flags, and each QEMU vCPU is one guest thread.
 */
import { spawn } from 'node:child_process';
import { type BranchKind, BranchList, type Decoded, parseHexAddress } from './branch.ts';
import { readElfSymbols } from './elf.ts';
import { BtsError } from './errors.ts';

interface Block {
  lastHi: number;
  lastLo: number;
  /** Address just past the last instruction, as a key (hi * 2^32 + lo; guest addresses are below 2^53). */
  next: number;
  kind: BranchKind | 'none';
  name: string | undefined;
}

const TWO32 = 4294967296;

/** The kind of branch an x86 mnemonic makes; 'none' for an instruction that does not branch. */
export function x86BranchKind(mnemonic: string, operands = ''): BranchKind | 'none' {
  const m = mnemonic.toLowerCase();
  const indirect = operands.trimStart().startsWith('*');
  if (m.startsWith('call')) return indirect ? 'ind_call' : 'call';
  if (m.startsWith('ret') || m === 'iretq' || m === 'iret' || m === 'iretl') return 'return';
  if (m.startsWith('jmp') || m === 'ljmp' || m === 'ljmpq') return indirect ? 'ind_jump' : 'jump';
  if (m.startsWith('j') || m.startsWith('loop')) return 'cond';
  if (m === 'syscall' || m === 'sysenter' || m === 'int' || m === 'int3') return 'syscall';
  if (m === 'sysret' || m === 'sysretq' || m === 'sysexit') return 'sysret';
  return 'none';
}

/** Options of {@link parseQemuLog}. */
export interface QemuLogOptions {
  /** Named in problems. */
  readonly source?: string;
}

/**
 * Derives taken branches from a QEMU `-d in_asm,exec,nochain` log. A block executed before its `IN:` listing was
 * seen (a log started mid-run) cannot say where it ends: the transition out of it is skipped and counted in a note.
 * Lines that belong to neither listing are ignored; a `Trace` or instruction line that does not parse is a problem
 * at its line and column, and parsing goes on.
 */
export function parseQemuLog(text: string, options: QemuLogOptions = {}): Decoded {
  const branches = new BranchList(1 << 12);
  const problems: BtsError[] = [];
  const blocks = new Map<number, Block>();
  const last = new Map<number, Block | null>();
  let unknownBlocks = 0;
  let listing: { pc: number; block: Block } | undefined;
  let lineNo = 0;
  const where = (line: number, column: number) => ({
    file: options.source,
    line,
    column,
  });
  for (let start = 0; start < text.length; ) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    lineNo++;
    const c0 = text.charCodeAt(start);
    if (c0 === 84 /* T */ && text.startsWith('Trace ', start)) {
      listing = undefined;
      const colon = text.indexOf(':', start + 6);
      const open = text.indexOf('[', start);
      const close = open < 0 ? -1 : text.indexOf(']', open);
      const vcpu = colon < 0 ? Number.NaN : Number(text.slice(start + 6, colon));
      const fields = open < 0 || close < 0 || close > end ? [] : text.slice(open + 1, close).split('/');
      const pcText = fields[1];
      const pc = pcText === undefined ? undefined : parseHexAddress(pcText);
      if (!Number.isInteger(vcpu) || pc === undefined) {
        problems.push(
          new BtsError(
            'ERR_BTS_SYNTAX',
            'malformed QEMU exec line: expected "Trace N: HOST [CS/PC/FLAGS/CFLAGS]"',
            where(lineNo, open < 0 ? 1 : open + 2 - start),
          ),
        );
      } else {
        const key = pc[0] * TWO32 + pc[1];
        const prev = last.get(vcpu);
        if (prev === null) unknownBlocks++;
        else if (prev !== undefined) {
          const taken =
            prev.kind === 'call' ||
            prev.kind === 'ind_call' ||
            prev.kind === 'return' ||
            prev.kind === 'jump' ||
            prev.kind === 'ind_jump';
          // A block that ends in a string instruction (rep movs) runs again at that instruction per iteration: not a branch.
          const repeat = prev.kind === 'none' && key === prev.lastHi * TWO32 + prev.lastLo;
          if (taken || (key !== prev.next && !repeat)) {
            const kind: BranchKind = prev.kind === 'none' ? 'other' : prev.kind;
            const i = branches.push(prev.lastHi, prev.lastLo, pc[0], pc[1], { kind, cpu: vcpu });
            const sym = close + 1 < end ? text.slice(close + 1, end).trim() : '';
            branches.setNames(i, prev.name, sym === '' ? undefined : sym);
          }
        }
        last.set(vcpu, blocks.get(key) ?? null);
      }
    } else if (c0 === 73 /* I */ && text.startsWith('IN:', start)) {
      const name = text.slice(start + 3, end).trim();
      listing = {
        pc: -1,
        block: { lastHi: 0, lastLo: 0, next: 0, kind: 'none', name: name === '' ? undefined : name },
      };
    } else if (listing !== undefined && c0 === 48 /* 0 */ && text.charCodeAt(start + 1) === 120) {
      const colon = text.indexOf(':', start);
      const addr = colon < 0 || colon > end ? undefined : parseHexAddress(text, start, colon);
      if (addr === undefined) {
        problems.push(
          new BtsError(
            'ERR_BTS_SYNTAX',
            'malformed QEMU instruction line: expected "0xADDR:  BYTES  MNEMONIC"',
            where(lineNo, 1),
          ),
        );
      } else {
        // After the colon: hex byte pairs, then the mnemonic and its operands.
        const rest = text
          .slice(colon + 1, end)
          .trim()
          .split(/\s+/);
        let n = 0;
        while (n < rest.length && /^[0-9a-f]{2}$/.test(rest[n]!)) n++;
        const b = listing.block;
        const key = addr[0] * TWO32 + addr[1];
        if (listing.pc < 0) listing.pc = key;
        b.lastHi = addr[0];
        b.lastLo = addr[1];
        b.next = key + n;
        b.kind = x86BranchKind(rest[n] ?? '', rest.slice(n + 1).join(' '));
        blocks.set(listing.pc, b);
      }
    } else if (end === start) {
      listing = undefined;
    }
    start = end + 1;
  }
  const notes: string[] = [
    'software source: QEMU user-mode emulation (no hardware branch trace); vCPU N is guest thread N',
  ];
  if (unknownBlocks > 0)
    notes.push(`${unknownBlocks} block exits skipped: the block's listing (IN:) is not in the log`);
  return { branches, problems, notes };
}

/** Options of {@link captureQemu}. */
export interface CaptureQemuOptions {
  /** Where QEMU writes its log. */
  readonly log: string;
  /** The QEMU binary; default chosen from the program's ELF class (qemu-x86_64 or qemu-i386). */
  readonly qemu?: string;
  readonly cwd?: string;
  /** Forwarded to the program's stdout and stderr. */
  readonly stdio?: 'inherit' | 'ignore';
  /** Aborting kills QEMU (and the program); the log keeps what it holds. */
  readonly signal?: AbortSignal;
  /** Called with QEMU's pid (the program's: user mode runs it in QEMU's process) once it started. */
  readonly onSpawn?: (pid: number) => void;
}

/** Runs `program args` under QEMU user mode, logging its blocks to `log`; resolves to the program's exit status. */
export async function captureQemu(
  program: string,
  args: readonly string[],
  options: CaptureQemuOptions,
): Promise<{ status: number | null; signal: NodeJS.Signals | null; qemu: string }> {
  let qemu = options.qemu;
  if (qemu === undefined) {
    qemu = 'qemu-x86_64';
    try {
      const { readFileSync } = await import('node:fs');
      const { resolveProgram } = await import('./which.ts');
      const bytes = readFileSync(resolveProgram(program));
      if (readElfSymbols(bytes, program).class === 32) qemu = 'qemu-i386';
    } catch {
      // Not readable here (QEMU will say so), or not ELF: QEMU reports that as well.
    }
  }
  const child = spawn(qemu, ['-d', 'in_asm,exec,nochain', '-D', options.log, program, ...args], {
    stdio: options.stdio ?? 'inherit',
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
  });
  if (child.pid !== undefined) options.onSpawn?.(child.pid);
  return new Promise((resolve, reject) => {
    child.on('error', (error) =>
      (error as { name?: string }).name === 'AbortError'
        ? undefined
        : reject(
            new BtsError(
              'ERR_BTS_CAPTURE',
              `cannot run ${qemu}: ${(error as NodeJS.ErrnoException).code ?? error.message} (install Debian's qemu-user)`,
              {},
              error,
            ),
          ),
    );
    child.on('close', (status, signal) => resolve({ status, signal, qemu: qemu! }));
  });
}
