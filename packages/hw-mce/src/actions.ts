/**
 * What a {@link TrackerEvent} can set off: mcelog-style triggers (a command run with the event's environment, in the
 * configured directory, at most `children-max` at a time) and page offlining through sysfs
 * (`/sys/devices/system/memory/soft_offline_page` and `hard_offline_page`, Documentation/ABI/testing/sysfs-memory-page-offline),
 * which only happens when the caller enables it.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { MceError } from './errors.ts';
import type { TrackerEvent } from './tracker.ts';

export interface TriggerResult {
  readonly command: string;
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs triggers with mcelog's environment, `childrenMax` at a time. */
export class TriggerRunner {
  readonly #directory: string | undefined;
  readonly #max: number;
  #running = 0;
  readonly #queue: (() => void)[] = [];

  constructor(options: { directory?: string; childrenMax?: number } = {}) {
    this.#directory = options.directory;
    this.#max = Math.max(1, options.childrenMax ?? 2);
  }

  /**
   * Runs the event's trigger (none configured: resolves undefined). A relative trigger path is taken from the trigger
   * directory, as mcelog does. @throws MceError `ERR_MCE_ACTION` when the command cannot be started.
   */
  async run(e: TrackerEvent): Promise<TriggerResult | undefined> {
    if (e.trigger === undefined) return undefined;
    if (this.#running >= this.#max) await new Promise<void>((resolve) => this.#queue.push(resolve));
    this.#running++;
    try {
      return await this.#spawn(e.trigger, e.env);
    } finally {
      this.#running--;
      this.#queue.shift()?.();
    }
  }

  #spawn(trigger: string, env: Readonly<Record<string, string>>): Promise<TriggerResult> {
    const command = isAbsolute(trigger) || this.#directory === undefined ? trigger : join(this.#directory, trigger);
    return new Promise((resolve, reject) => {
      const child = spawn(command, [], {
        cwd: this.#directory,
        env: { PATH: process.env.PATH ?? '/sbin:/usr/sbin:/bin:/usr/bin', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (b: Buffer) => (stdout += b));
      child.stderr.on('data', (b: Buffer) => (stderr += b));
      child.on('error', (error) =>
        reject(
          new MceError(
            'ERR_MCE_ACTION',
            `cannot run trigger ${command}: ${(error as NodeJS.ErrnoException).code ?? error}`,
            { cause: error },
          ),
        ),
      );
      child.on('close', (exitCode) => resolve({ command, exitCode, stdout, stderr }));
    });
  }
}

/** Where the kernel takes page-offline requests. */
export const MEMORY_SYSFS = '/sys/devices/system/memory';

/**
 * Offlines the page of a page event through sysfs (soft, hard, or soft falling back to hard). Returns what was done.
 * @throws MceError `ERR_MCE_ACTION` naming the file and errno when the kernel refuses.
 */
export function applyPageAction(e: TrackerEvent, options: { sysfs?: string } = {}): 'soft' | 'hard' | undefined {
  if (e.action === undefined || e.address === undefined) return undefined;
  const root = options.sysfs ?? MEMORY_SYSFS;
  const write = (kind: 'soft' | 'hard') => {
    const file = join(root, `${kind}_offline_page`);
    try {
      writeFileSync(file, `0x${e.address!.toString(16)}`);
    } catch (error) {
      throw new MceError(
        'ERR_MCE_ACTION',
        `${kind} offline of page 0x${e.address!.toString(16)} refused: ${(error as NodeJS.ErrnoException).code ?? error}`,
        {
          location: { file },
          cause: error,
        },
      );
    }
    return kind;
  };
  if (e.action === 'hard-offline') return write('hard');
  if (e.action === 'soft-offline') return write('soft');
  try {
    return write('soft');
  } catch {
    return write('hard');
  }
}
