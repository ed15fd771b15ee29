/**
 * Test support: a real systemd as PID 1, booted by systemd-nspawn (Debian's `systemd-container`) from this host's own
 * /usr on a throwaway root (--volatile=yes: / is a tmpfs, /usr read-only). Directories laid over /usr put a package's
 * files where dpkg would (on a merged-/usr host), files written under /etc add units and drop-ins, and /results is a
 * host directory the units write into. The container has no network and powers itself off; nothing on the host
 * changes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Why no systemd container can boot here, or undefined when one can be tried. */
export function systemdContainerMissing(): string | undefined {
  if (process.getuid?.() !== 0) return 'systemd-nspawn needs root';
  if (spawnSync('systemd-nspawn', ['--version'], { stdio: 'ignore' }).status !== 0)
    return 'systemd-nspawn is not installed (apt-get install systemd-container)';
  if (!existsSync('/lib/systemd/systemd')) return 'systemd is not installed (apt-get install systemd)';
  return undefined;
}

/** What {@link bootSystemd} starts. */
export interface BootOptions {
  /** A scratch directory of the caller's; /results inside the container is its `results` subdirectory. */
  readonly dir: string;
  /** Directories laid over /usr, lowest first (a package's `usr/`, its `lib/` as `lib/`). */
  readonly usr: readonly string[];
  /** Files to create under /etc, by path relative to it (units, drop-ins, scripts). */
  readonly etc: Readonly<Record<string, string>>;
  /** Units started once the system is up; the last one to finish should power the container off. */
  readonly start: readonly string[];
  /** Capabilities beyond nspawn's default set that the units may keep (`CAP_PERFMON`...). */
  readonly capabilities?: readonly string[];
  /** nspawn is asked to power the container off after this, and killed 10 s later. */
  readonly timeoutMs: number;
}

/** How the boot went. */
export interface Boot {
  /** Whether systemd ran as the container's PID 1 (its first unit started). */
  readonly booted: boolean;
  /** nspawn's exit status (null when it had to be killed). */
  readonly status: number | null;
  /** What nspawn printed (its own errors; the container's console stays quiet). */
  readonly console: string;
  /** The boot's journal (`journalctl --boot`): systemd's and every unit's messages, or '' if none was saved. */
  readonly journal: string;
  /** The host directory mounted as /results. */
  readonly results: string;
}

/**
 * Marks the boot as reached (so that a container that never ran systemd is told apart from a unit that failed) and,
 * as the system goes down, saves the boot's journal for the test to read.
 */
const BOOTED_UNIT = `[Unit]
DefaultDependencies=no
After=systemd-journald.service
Conflicts=shutdown.target
Before=shutdown.target
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/touch /results/.booted
ExecStop=/bin/sh -c 'journalctl --boot --no-pager --output=short-monotonic > /results/.journal'
`;

/** Boots systemd in a container as {@link BootOptions} describe and waits until it powers off. */
export async function bootSystemd(o: BootOptions): Promise<Boot> {
  const results = join(o.dir, 'results');
  const etc = join(o.dir, 'etc');
  mkdirSync(results, { recursive: true });
  const files = {
    ...o.etc,
    'systemd/system/evtrace-test-booted.service': BOOTED_UNIT,
  };
  const binds: string[] = [];
  for (const [path, text] of Object.entries(files)) {
    const file = join(etc, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    binds.push(`--bind-ro=${file}:/etc/${path}`);
  }
  const machine = `evtrace-test-${process.pid}-${Date.now().toString(36)}`;
  const args = [
    '--directory=/',
    '--volatile=yes',
    // No service manager on the host to register with or to put the container into a scope of its own.
    '--register=no',
    '--keep-unit',
    '--private-network',
    '--console=pipe',
    `--machine=${machine}`,
    ...(o.capabilities?.length ? [`--capability=${o.capabilities.join(',')}`] : []),
    ...(o.usr.length > 0 ? [`--overlay-ro=/usr:${o.usr.join(':')}:/usr`] : []),
    ...binds,
    `--bind=${results}:/results`,
    '--boot',
    '--',
    'systemd.wants=evtrace-test-booted.service',
    ...o.start.map((unit) => `systemd.wants=${unit}`),
  ];
  const nspawn = spawn('systemd-nspawn', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let printed = '';
  nspawn.stdout.on('data', (d: Buffer) => (printed += d.toString()));
  nspawn.stderr.on('data', (d: Buffer) => (printed += d.toString()));
  // SIGTERM makes nspawn power the container off; SIGKILL would leave its processes behind.
  const stop = setTimeout(() => {
    printed += `\n[test] no poweroff within ${o.timeoutMs} ms: asking nspawn to stop the container\n`;
    nspawn.kill('SIGTERM');
  }, o.timeoutMs);
  const kill = setTimeout(() => nspawn.kill('SIGKILL'), o.timeoutMs + 10_000);
  const status = await new Promise<number | null>((resolve) => {
    nspawn.once('error', (e) => {
      printed += `${e.message}\n`;
      resolve(null);
    });
    nspawn.once('close', (code) => resolve(code));
  });
  clearTimeout(stop);
  clearTimeout(kill);
  // nspawn leaves its mount propagation directory when /run is not a tmpfs; it is ours alone.
  rmSync(join('/run/systemd/nspawn/propagate', machine), { recursive: true, force: true });
  const journal = join(results, '.journal');
  return {
    booted: existsSync(join(results, '.booted')),
    status,
    console: printed,
    journal: existsSync(journal) ? readFileSync(journal, 'utf8') : '',
    results,
  };
}
