import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmdirSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Test support: a private tracefs instance to ask the real kernel. Finds tracefs through /proc/mounts, mounting it at
 * /sys/kernel/tracing when root and absent; everything happens in `instances/<unique>`, removed by `remove()`.
 */

export interface Tracefs {
  readonly root: string;
}

/** The tracefs mount, or the reason there is none (tests skip with it). */
export function findTracefs(): { tracefs?: Tracefs; why?: string } {
  const mounted = () => {
    try {
      const line = readFileSync('/proc/mounts', 'utf8')
        .split('\n')
        .find((l) => l.split(' ')[2] === 'tracefs');
      return line?.split(' ')[1];
    } catch {
      return undefined;
    }
  };
  let root = mounted();
  if (root === undefined && process.getuid?.() === 0) {
    try {
      mkdirSync('/sys/kernel/tracing', { recursive: true });
      execFileSync('mount', ['-t', 'tracefs', 'nodev', '/sys/kernel/tracing'], { stdio: 'ignore' });
    } catch {
      // Reported below.
    }
    root = mounted();
  }
  if (root === undefined) return { why: 'tracefs is not mounted and cannot be mounted (needs root)' };
  if (!existsSync(join(root, 'instances'))) return { why: `${root} has no instances directory` };
  if (process.getuid?.() !== 0) return { why: 'writing tracefs needs root' };
  return { tracefs: { root } };
}

/** What the kernel said about one filter write. */
export interface KernelVerdict {
  readonly ok: boolean;
  /** error_log message, e.g. "Field not found" (undefined when the write failed without a log entry). */
  readonly message?: string;
  /** error_log caret column. */
  readonly column?: number;
  /** The caret column of the event's `filter` file (clamped to the expression's length). */
  readonly filterFileColumn?: number;
  readonly errno?: string;
}

export class Instance {
  readonly path: string;

  constructor(tracefs: Tracefs, label: string) {
    this.path = join(tracefs.root, 'instances', `evtrace-${label}-${process.pid}-${Date.now().toString(36)}`);
    mkdirSync(this.path);
  }

  file(...parts: string[]): string {
    return join(this.path, ...parts);
  }

  /** Writes `expression` to events/EVENT/filter and reads back the verdict, then clears the filter. */
  tryFilter(event: string, expression: string): KernelVerdict {
    const filterFile = this.file('events', event, 'filter');
    writeFileSync(this.file('error_log'), '');
    let errno: string | undefined;
    const fd = openSync(filterFile, 'w');
    try {
      writeSync(fd, Buffer.from(expression, 'utf8'));
    } catch (error) {
      errno = (error as NodeJS.ErrnoException).code ?? 'EIO';
    } finally {
      closeSync(fd);
    }
    const verdict = errno === undefined ? { ok: true } : { ok: false, errno, ...readVerdict(this, filterFile) };
    writeFileSync(filterFile, '0');
    return verdict;
  }

  /** Removes the instance (tracing in it stops; its buffers are freed). */
  remove(): void {
    try {
      writeFileSync(this.file('tracing_on'), '0');
    } catch {
      // Best effort; rmdir below is what matters.
    }
    for (let attempt = 0; ; attempt++) {
      try {
        rmdirSync(this.path);
        return;
      } catch (error) {
        if (attempt >= 20 || (error as NodeJS.ErrnoException).code !== 'EBUSY') throw error;
        execFileSync('sleep', ['0.1']);
      }
    }
  }
}

const PREFIX = '  Command: ';

function readVerdict(
  instance: Instance,
  filterFile: string,
): { message?: string; column?: number; filterFileColumn?: number } {
  const log = readFileSync(instance.file('error_log'), 'utf8').split('\n');
  const head = log.findLastIndex((l) => /^\[\s*[\d.]+\] event filter parse error: error: /.test(l));
  if (head < 0) return {};
  const message = log[head]!.replace(/^\[\s*[\d.]+\] event filter parse error: error: /, '');
  let k = head + 1;
  while (k < log.length && !log[k]!.startsWith(PREFIX)) k++;
  // The command may span lines (a newline inside the expression); the caret line is the next line made of spaces and ^.
  while (k < log.length && !/^ *\^$/.test(log[k]!)) k++;
  const column = k < log.length ? log[k]!.indexOf('^') - PREFIX.length : undefined;
  const shown = readFileSync(filterFile, 'utf8').split('\n');
  const caret = shown.findIndex((l) => /^ *\^$/.test(l));
  return {
    message,
    ...(column !== undefined ? { column } : {}),
    ...(caret >= 0 ? { filterFileColumn: shown[caret]!.indexOf('^') } : {}),
  };
}
