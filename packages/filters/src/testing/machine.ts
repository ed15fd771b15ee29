import { readFileSync } from 'node:fs';
import { parseCpuList } from '../cpulist.ts';
import { parseKallsyms, type SymbolTable } from '../symbols.ts';

/** nr_cpu_ids of this machine (the highest possible CPU + 1), or undefined when sysfs does not say. */
export function machineCpuIds(): number | undefined {
  try {
    const cpus = parseCpuList(readFileSync('/sys/devices/system/cpu/possible', 'utf8').trim(), 1 << 16);
    return cpus === undefined || cpus.size === 0 ? undefined : Math.max(...cpus) + 1;
  } catch {
    return undefined;
  }
}

/** This machine's kernel symbols, when /proc/kallsyms shows real addresses. */
export function machineSymbols(): SymbolTable | undefined {
  try {
    const text = readFileSync('/proc/kallsyms', 'utf8');
    return /^0+ /.test(text) ? undefined : parseKallsyms(text);
  } catch {
    return undefined;
  }
}
