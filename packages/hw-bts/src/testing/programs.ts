/** Test support: small C programs built with the system compiler, and whether the tools tests need are here. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Whether a program is on PATH. */
export function hasTool(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The skip reason of tests that compile a program. */
export const CC_MISSING = 'no C compiler: cc is not installed (apt-get install gcc)';

/** Why QEMU-based tests cannot run here, or '' when they can. */
export function qemuMissing(): string {
  if (!hasTool('cc')) return CC_MISSING;
  if (!hasTool('qemu-x86_64')) return 'qemu-x86_64 is not installed (apt-get install qemu-user)';
  if (process.arch !== 'x64') return `host is ${process.arch}, the test programs are x86-64`;
  return '';
}

/** A recursive Fibonacci (fib(6): 25 calls, nesting 6 deep below main) and a 100-iteration loop in `spin`. */
export const PROGRAM = `
int __attribute__((noinline)) fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int __attribute__((noinline)) spin(int n) { volatile int s = 0; for (int i = 0; i < n; i++) s += i; return s; }
int main(void) { volatile int r = fib(6); volatile int s = spin(100); return (r == 8 && s == 4950) ? 0 : 1; }
`;

/** Compiles `source` statically (fixed addresses, no PIE) into a fresh directory; returns the executable's path. */
export function buildProgram(source = PROGRAM, name = 'prog'): string {
  const dir = mkdtempSync(join(tmpdir(), 'hw-bts-'));
  const c = join(dir, `${name}.c`);
  const exe = join(dir, name);
  writeFileSync(c, source);
  execFileSync('cc', ['-O1', '-static', '-no-pie', '-fno-inline', '-fno-optimize-sibling-calls', '-o', exe, c]);
  return exe;
}

/** Runs `exe` under QEMU with the block log; returns the log's path. */
export function qemuLog(exe: string): string {
  const log = `${exe}.qemu.log`;
  execFileSync('qemu-x86_64', ['-d', 'in_asm,exec,nochain', '-D', log, exe]);
  return log;
}
