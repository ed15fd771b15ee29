/**
 * The standalone evtrace and its .deb, built once here by the scripts `pnpm package` runs: the binary runs with no
 * Node on PATH (every part the bundle cannot hold in code: worker threads, koffi, the filter language, Perfetto's
 * schema), and the package unpacked into a temporary root has each file where Debian keeps it.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pkg from '../../package.json' with { type: 'json' };
import { hasPython, listenNotify } from '../testing/notify-socket.ts';
import { bootSystemd, systemdContainerMissing } from '../testing/systemd-container.ts';

const app = new URL('../..', import.meta.url).pathname;
const out = join(app, 'out');
/** Where `tool` is on this PATH, or '' (the binaries under test run with a PATH that holds nothing). */
const which = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
const has = (tool: string) => which(tool) !== '';
const hasDpkgDeb = has('dpkg-deb');
const tracefs = ['/sys/kernel/tracing', '/sys/kernel/debug/tracing'].some((d) => existsSync(join(d, 'trace_pipe')));
const root = process.getuid?.() === 0;

const dir = mkdtempSync(join(tmpdir(), 'evtrace-standalone-'));
/** A PATH with nothing on it: no node, no npm, no shell tools. */
const noNode = join(dir, 'empty-bin');
mkdirSync(noNode);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `binary` with PATH holding no Node; stdout, stderr and status. */
function run(binary: string, args: readonly string[]) {
  const r = spawnSync(binary, args, {
    encoding: 'utf8',
    cwd: dir,
    env: { PATH: noNode, HOME: dir },
    timeout: 60_000,
    maxBuffer: 1 << 28,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function script(name: string): void {
  const r = spawnSync(process.execPath, [join(app, 'scripts', name)], { encoding: 'utf8', timeout: 900_000 });
  if (r.status !== 0) throw new Error(`scripts/${name} failed (${r.status}):\n${r.stderr}`);
}

beforeAll(() => script('standalone.ts'), 900_000);

describe('the standalone binary, with no Node on PATH', () => {
  const evtrace = join(out, 'evtrace');

  it('runs where `command -v node` finds nothing', () => {
    const probe = spawnSync('/bin/sh', ['-c', 'command -v node'], { env: { PATH: noNode } });
    expect(probe.status).not.toBe(0);
    const r = run(evtrace, ['--version']);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  it('prints its help and completion scripts', () => {
    const help = run(evtrace, ['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^NAME\n {2}evtrace - record, convert, filter and inspect Linux trace events/);
    const bash = run(evtrace, ['completion', 'bash']);
    expect(bash.code).toBe(0);
    expect(bash.stdout).toContain('complete -o filenames -F _evtrace evtrace');
  });

  it('runs the demo: producers on worker threads from the embedded worker bundle', () => {
    const r = run(evtrace, ['demo', '--producers', '2', '--events', '50', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { producer: number; seq: number });
    expect(events).toHaveLength(100);
    for (const p of [0, 1]) expect(events.filter((e) => e.producer === p).map((e) => e.seq)).toHaveLength(50);
  });

  it('records from the demo source, reads the file back and converts it with the embedded Perfetto schema', () => {
    const dat = join(dir, 'demo.dat');
    const rec = run(evtrace, ['record', '--source', 'demo', '-e', 'sched:*', '--duration', '200ms', '-o', dat]);
    expect(rec.code, rec.stderr).toBe(0);
    const recorded = Number(/recorded (\d+) events/.exec(rec.stderr)?.[1]);
    expect(recorded).toBeGreaterThan(0);
    const cat = run(evtrace, ['cat', dat]);
    expect(cat.code, cat.stderr).toBe(0);
    const lines = cat.stdout.trim().split('\n');
    expect(lines).toHaveLength(recorded);
    expect(lines[0]).toMatch(/sched_(switch|wakeup):/);
    // Read on two worker threads (their bundle from the binary): the same text.
    const shared = run(evtrace, ['cat', '--threads', '2', dat]);
    expect(shared.code, shared.stderr).toBe(0);
    expect(shared.stdout).toBe(cat.stdout);
    const pf = run(evtrace, ['convert', dat, '--to', 'perfetto', '-o', join(dir, 'demo.pftrace')]);
    expect(pf.code, pf.stderr).toBe(0);
    expect(pf.stderr).toContain(`${recorded} events written`);
    expect(statSync(join(dir, 'demo.pftrace')).size).toBeGreaterThan(recorded);
  });

  it.skipIf(!root || !has('perf'))(
    'reads a perf.data of perf kmem record with its embedded WebAssembly reader, and one that reader declines on its reading thread from the embedded bundle (needs root and perf)',
    () => {
      const data = join(dir, 'kmem.data');
      const workload = ['perf', 'bench', 'sched', 'messaging', '-g', '1', '-l', '5'];
      execFileSync('perf', ['kmem', 'record', '-o', data, '--', ...workload], { stdio: 'ignore' });
      // Cut in its data: the WebAssembly reader declines it, and the TypeScript reader keeps what came before.
      const cut = join(dir, 'cut.data');
      const bytes = readFileSync(data);
      writeFileSync(cut, bytes.subarray(0, Math.floor(bytes.length * 0.6)));
      for (const args of [
        ['kmem', 'report', '--caller', '--alloc', data],
        ['kmem', 'report', '--lenient', '--caller', '--alloc', cut],
      ]) {
        const report = run(evtrace, args);
        expect(report.code, report.stderr).toBe(0);
        // The same tables as the CLI built from the sources.
        const built = spawnSync(process.execPath, [join(app, 'dist', 'cli.js'), ...args], {
          encoding: 'utf8',
          maxBuffer: 1 << 28,
        });
        expect(built.status, built.stderr).toBe(0);
        expect(report.stdout).toMatch(/Callsite .*Total_alloc/);
        expect(report.stdout).toBe(built.stdout);
      }
    },
  );

  it.skipIf(!root || !tracefs)(
    'records the kernel with a filter and with a reader thread per CPU (koffi, @evtrace/filters and the reader bundle from the binary; needs root and tracefs)',
    () => {
      const dat = join(dir, 'kernel.dat');
      const filtered = ['--filter', 'prev_pid >= 0 && next_comm ~ "*"', '--duration', '300ms', '-o', dat];
      const rec = run(evtrace, ['record', '--source', 'kernel', '-e', 'sched:sched_switch', ...filtered]);
      expect(rec.code, rec.stderr).toBe(0);
      const cat = run(evtrace, ['cat', dat]);
      expect(cat.code, cat.stderr).toBe(0);
      expect(cat.stdout).toMatch(/sched_switch:/);
      // The per-CPU readers are worker threads: a worker that could not start would fail the recording.
      const perCpu = ['--reader-threads', 'per-cpu', '--duration', '200ms', '-o', join(dir, 'per-cpu.dat')];
      const threads = run(evtrace, ['record', '--source', 'kernel', '-e', 'sched:sched_switch', ...perCpu]);
      expect(threads.code, threads.stderr).toBe(0);
      expect(threads.stderr).toMatch(/recorded \d+ events/);
    },
  );
});

describe.skipIf(!hasDpkgDeb)('the .deb (needs dpkg-deb)', () => {
  const unpacked = join(dir, 'root');
  let deb = '';
  beforeAll(() => {
    script('deb.ts');
    deb = join(out, readdirSync(out).find((f) => f.endsWith('.deb')) ?? 'missing.deb');
    mkdirSync(unpacked);
    execFileSync('dpkg-deb', ['-x', deb, unpacked]);
  }, 900_000);

  it('describes itself to dpkg', () => {
    const info = execFileSync('dpkg-deb', ['--info', deb], { encoding: 'utf8' });
    expect(info).toMatch(/^ Package: evtrace$/m);
    expect(info).toMatch(new RegExp(`^ Version: ${pkg.version.replaceAll('.', '\\.')}$`, 'm'));
    expect(info).toMatch(/^ Architecture: (amd64|arm64)$/m);
    expect(info).toMatch(/^ Depends: libc6 \(>= 2\.28\)/m);
    const contents = execFileSync('dpkg-deb', ['--contents', deb], { encoding: 'utf8' });
    expect(contents).toMatch(/^-rwxr-xr-x root\/root +\d+ .* \.\/usr\/bin\/evtrace$/m);
  });

  it('installs the binary, which runs with no Node on PATH', () => {
    const binary = join(unpacked, 'usr/bin/evtrace');
    expect(statSync(binary).mode & 0o777).toBe(0o755);
    const r = run(binary, ['--version']);
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  it('installs a compressed manual page for evtrace and each command', () => {
    const man = join(unpacked, 'usr/share/man/man1');
    const pages = readdirSync(man);
    expect(pages).toContain('evtrace.1.gz');
    expect(pages).toContain('evtrace-record.1.gz');
    expect(pages).toEqual(pkg.man.map((p) => `${p.split('/').at(-1)}.gz`).sort());
    const record = gunzipSync(readFileSync(join(man, 'evtrace-record.1.gz'))).toString();
    expect(record).toMatch(/^\.TH EVTRACE\\-RECORD 1 /);
    expect(record).toContain('\\-\\-duration');
  });

  it('installs bash completion that completes a command', () => {
    const bash = join(unpacked, 'usr/share/bash-completion/completions/evtrace');
    const complete = spawnSync(
      'bash',
      ['-c', `source ${bash} && COMP_WORDS=(evtrace reco) COMP_CWORD=1 && _evtrace && echo "\${COMPREPLY[@]}"`],
      { encoding: 'utf8' },
    );
    expect(complete.stdout.trim()).toBe('record');
  });

  it.skipIf(!has('zsh'))(
    'installs zsh completion that compinit binds to evtrace (needs zsh: apt-get install zsh)',
    () => {
      const vendor = join(unpacked, 'usr/share/zsh/vendor-completions');
      expect(readFileSync(join(vendor, '_evtrace'), 'utf8').startsWith('#compdef evtrace\n')).toBe(true);
      expect(spawnSync('zsh', ['-n', join(vendor, '_evtrace')]).status).toBe(0);
      const bound = 'autoload -U compinit; compinit -u -D; print -r -- $_comps[evtrace]';
      const comps = spawnSync('zsh', ['-f', '-c', `fpath=(${vendor} $fpath); ${bound}`], { encoding: 'utf8' });
      expect(comps.stdout.trim()).toBe('_evtrace');
    },
  );

  it.skipIf(!has('fish'))(
    'installs fish completion that completes a command (needs fish: apt-get install fish)',
    () => {
      const fish = join(unpacked, 'usr/share/fish/vendor_completions.d/evtrace.fish');
      expect(readFileSync(fish, 'utf8')).toContain(
        "complete -c evtrace -f -n '__evtrace_at \\'evtrace\\'' -a 'record'",
      );
      expect(spawnSync('fish', ['--no-execute', fish]).status).toBe(0);
      const offered = spawnSync('fish', ['-c', `source ${fish}; complete -C 'evtrace reco'`], {
        encoding: 'utf8',
        env: { ...process.env, HOME: dir },
      });
      expect(offered.stdout).toMatch(/^record\t/m);
    },
  );

  it('installs the agent unit: Type=notify, a watchdog, the packaged binary, limited capabilities', () => {
    const unit = readFileSync(join(unpacked, 'lib/systemd/system/evtrace-agent.service'), 'utf8');
    expect(unit).toMatch(/^Type=notify$/m);
    expect(unit).toMatch(/^WatchdogSec=\d+s$/m);
    expect(unit).toMatch(/^ExecStart=\/usr\/bin\/evtrace agent$/m);
    expect(unit).not.toContain('/usr/local/bin');
    const caps = /^CapabilityBoundingSet=(.*)$/m.exec(unit)?.[1]?.split(' ');
    expect(caps).toContain('CAP_PERFMON');
    expect(caps).not.toContain('CAP_SYS_ADMIN');
    expect(caps).not.toContain('CAP_DAC_OVERRIDE');
  });

  /** setpriv's --bounding-set for the unit's CapabilityBoundingSet: what systemd leaves a root service. */
  const unitBoundingSet = () => {
    const unit = readFileSync(join(unpacked, 'lib/systemd/system/evtrace-agent.service'), 'utf8');
    const caps = /^CapabilityBoundingSet=(.*)$/m.exec(unit)![1]!.split(' ');
    return ['-all', ...caps.map((c) => `+${c.replace(/^CAP_/, '').toLowerCase()}`)].join(',');
  };

  it.skipIf(!root || !tracefs || !has('setpriv'))(
    "records the kernel with only the unit's capabilities (needs root, tracefs and setpriv)",
    () => {
      const dat = join(dir, 'capped.dat');
      const r = spawnSync(
        which('setpriv'),
        ['--bounding-set', unitBoundingSet(), join(unpacked, 'usr/bin/evtrace'), 'record', '--source', 'kernel'].concat(
          ['-e', 'sched:sched_switch', '--filter', 'prev_pid >= 0', '--duration', '300ms', '-o', dat],
        ),
        { encoding: 'utf8', env: { PATH: noNode } },
      );
      expect(r.status, r.stderr).toBe(0);
      expect(Number(/recorded (\d+) events/.exec(r.stderr)?.[1])).toBeGreaterThan(0);
    },
  );

  it.skipIf(!root || !tracefs || !has('setpriv'))(
    "runs a kernel session in the agent with only the unit's capabilities (needs root, tracefs and setpriv)",
    async () => {
      const evtrace = join(unpacked, 'usr/bin/evtrace');
      const socket = join(dir, 'capped-agent.sock');
      const agent = spawn(
        which('setpriv'),
        ['--bounding-set', unitBoundingSet(), evtrace, 'agent', '--socket', socket, '--state-dir', join(dir, 'capped')],
        { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: noNode } },
      );
      let log = '';
      agent.stderr.on('data', (d: Buffer) => (log += d.toString()));
      const exited = new Promise((resolve) => agent.once('exit', resolve));
      const client = (...args: string[]) => {
        const r = spawnSync(evtrace, args, { encoding: 'utf8', env: { PATH: noNode, EVTRACE_AGENT_SOCKET: socket } });
        expect(r.status, `${args.join(' ')}: ${r.stderr}\n${log}`).toBe(0);
      };
      try {
        for (let waited = 0; !log.includes('listening on') && waited < 20_000; waited += 50) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        const output = join(dir, 'capped-out');
        client(
          'session',
          'create',
          'k',
          '--events',
          'sched:sched_switch',
          '--mode',
          'discard',
          '--source',
          'kernel',
          '--output',
          output,
        );
        client('session', 'start', 'k');
        await new Promise((resolve) => setTimeout(resolve, 300));
        client('session', 'stop', 'k');
        const files = readdirSync(output);
        expect(files).toHaveLength(1);
        const cat = run(evtrace, ['cat', join(output, files[0]!)]);
        expect(cat.stdout).toMatch(/sched_switch:/);
        agent.kill('SIGTERM');
        expect(await exited, log).toBe(0);
      } finally {
        agent.kill('SIGKILL');
      }
    },
    60_000,
  );

  it.skipIf(!has('systemd-analyze'))('has a unit systemd-analyze verifies without a warning (needs systemd)', () => {
    // The executables resolved in the unpacked root (verify checks that they exist and are executable).
    const copy = join(dir, 'evtrace-agent.service');
    const unit = readFileSync(join(unpacked, 'lib/systemd/system/evtrace-agent.service'), 'utf8');
    writeFileSync(copy, unit.replaceAll('/usr/bin/evtrace', join(unpacked, 'usr/bin/evtrace')));
    const r = spawnSync('systemd-analyze', ['verify', '--man=no', copy], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('ships the copyright file with the MIT text and Node.js license', () => {
    const copyright = readFileSync(join(unpacked, 'usr/share/doc/evtrace/copyright'), 'utf8');
    expect(copyright).toMatch(
      /^Format: https:\/\/www\.debian\.org\/doc\/packaging-manuals\/copyright-format\/1\.0\/$/m,
    );
    expect(copyright).toContain(' Permission is hereby granted, free of charge');
    expect(readFileSync(join(unpacked, 'usr/share/doc/evtrace/LICENSE.node'), 'utf8')).toContain('Node.js');
  });

  /**
   * Records the agent unit's state as `systemctl show` prints it once it is up, two watchdog intervals later and once
   * stopped, and a session run through the control socket in between: one file each, for the test to read.
   */
  const checkScript = (watchdogSeconds: number) => `set -u
show() { systemctl show evtrace-agent.service -p "$PROPS" > "/results/$1.txt"; }
PROPS=ActiveState,SubState,Result,Type,NotifyAccess,WatchdogUSec,WatchdogTimestamp,WatchdogTimestampMonotonic,\\
ActiveEnterTimestampMonotonic,StatusText,CapabilityBoundingSet,MainPID,NRestarts,ExecMainCode,ExecMainStatus,\\
FragmentPath,DropInPaths
show started
{
  evtrace session create s --events 'sched:*' --source demo --mode discard --output /results/session \\
    && evtrace session start s && sleep 1 && evtrace session stop s && evtrace session list --json
} > /results/session.json 2> /results/session.err
echo $? > /results/session.status
# Two watchdog intervals: the agent must have pinged after the first one ran out, or systemd restarted it.
sleep ${2 * watchdogSeconds}
show later
systemctl stop evtrace-agent.service
show stopped
`;

  const noSystemd = systemdContainerMissing();
  it.skipIf(noSystemd !== undefined)(
    `runs as a Type=notify service of a real systemd (PID 1 in systemd-nspawn): ready, watchdog fed, a session through the socket, a clean stop${noSystemd === undefined ? '' : ` (skipped: ${noSystemd})`}`,
    async (ctx) => {
      // The package's files where dpkg puts them on a merged-/usr system: lib/systemd/system is /usr/lib/systemd/system.
      const box = join(dir, 'systemd');
      cpSync(join(unpacked, 'lib'), join(box, 'usr-lib', 'lib'), { recursive: true });
      const WATCHDOG_S = 3;
      const boot = await bootSystemd({
        dir: box,
        usr: [join(unpacked, 'usr'), join(box, 'usr-lib')],
        etc: {
          // The packaged unit as it is, but for a watchdog short enough to wait out in a test.
          'systemd/system/evtrace-agent.service.d/test.conf': `[Service]\nWatchdogSec=${WATCHDOG_S}s\n`,
          'systemd/system/evtrace-check.service': `[Unit]
Wants=evtrace-agent.service
After=evtrace-agent.service
[Service]
Type=oneshot
ExecStart=/bin/bash /etc/evtrace-check.sh
ExecStopPost=/bin/systemctl --no-block poweroff
`,
          'evtrace-check.sh': checkScript(WATCHDOG_S),
        },
        start: ['evtrace-check.service'],
        // The unit keeps these; nspawn's default set has none of them.
        capabilities: ['CAP_PERFMON', 'CAP_IPC_LOCK', 'CAP_SYSLOG'],
        timeoutMs: 50_000,
      });
      // Only a boot that never reached systemd is the host's doing; anything after that is the agent's.
      if (!boot.booted) {
        ctx.skip(`systemd did not boot in systemd-nspawn here (exit ${boot.status}): ${boot.console.trim()}`);
      }
      const read = (name: string) => readFileSync(join(boot.results, name), 'utf8');
      const show = (name: string): Record<string, string> => {
        if (!existsSync(join(boot.results, `${name}.txt`)))
          throw new Error(`no ${name}.txt; nspawn printed:\n${boot.console}\nthe journal:\n${boot.journal}`);
        return Object.fromEntries(
          read(`${name}.txt`)
            .trim()
            .split('\n')
            .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
        );
      };
      const started = show('started');
      const context = `nspawn printed:\n${boot.console}\nthe journal:\n${boot.journal}`;
      // The packaged unit, changed by nothing but the test's drop-in.
      expect(started.FragmentPath, context).toMatch(/^(\/usr)?\/lib\/systemd\/system\/evtrace-agent\.service$/);
      expect(started.DropInPaths).toBe('/etc/systemd/system/evtrace-agent.service.d/test.conf');
      // READY=1 arrived: a Type=notify unit is active and running only after it.
      expect(started, context).toMatchObject({
        Type: 'notify',
        NotifyAccess: 'main',
        ActiveState: 'active',
        SubState: 'running',
      });
      expect(started.StatusText).toBe('listening on /run/evtrace/agent.sock');
      expect(started.WatchdogUSec).toBe(`${WATCHDOG_S}s`);
      expect(started.CapabilityBoundingSet?.split(' ').sort()).toEqual([
        'cap_chown',
        'cap_ipc_lock',
        'cap_perfmon',
        'cap_setgid',
        'cap_setuid',
        'cap_sys_nice',
        'cap_sys_ptrace',
        'cap_syslog',
      ]);

      // A session created, run and stopped through the control socket, its file readable.
      expect(read('session.status').trim(), `${read('session.err')}\n${context}`).toBe('0');
      const [session] = JSON.parse(read('session.json').trim().split('\n').at(-1)!) as [
        { events: number; files: string[] },
      ];
      expect(session.events).toBeGreaterThan(0);
      expect(session.files).toEqual(['/results/session/s-0001.dat']);
      const cat = run(join(unpacked, 'usr/bin/evtrace'), ['cat', join(boot.results, 'session/s-0001.dat')]);
      expect(cat.code, cat.stderr).toBe(0);
      expect(cat.stdout.trim().split('\n')).toHaveLength(session.events);

      // The watchdog: pinged after more than one interval, same process, never restarted.
      const later = show('later');
      expect(later, context).toMatchObject({
        ActiveState: 'active',
        SubState: 'running',
        NRestarts: '0',
        MainPID: started.MainPID,
      });
      expect(later.WatchdogTimestamp).not.toBe('');
      const fedFor = Number(later.WatchdogTimestampMonotonic) - Number(started.ActiveEnterTimestampMonotonic);
      expect(fedFor).toBeGreaterThan(WATCHDOG_S * 1e6);

      // `systemctl stop`: SIGTERM, sessions finished, exit 0.
      const stopped = show('stopped');
      expect(stopped, context).toMatchObject({
        ActiveState: 'inactive',
        SubState: 'dead',
        Result: 'success',
        ExecMainCode: '1',
        ExecMainStatus: '0',
      });
      // systemd's own "Stopping" line may come between the agent's two.
      expect(boot.journal).toMatch(
        /evtrace\[(\d+)\]: evtrace agent: SIGTERM: stopping every session\n(?:.*\n)*?.*evtrace\[\1\]: evtrace agent: stopped\n/,
      );
    },
    90_000,
  );

  it.skipIf(!hasPython)(
    'runs the agent from the package, which notifies systemd (needs python3 for the socket)',
    async () => {
      const name = join(dir, 'notify.sock');
      const systemd = await listenNotify(name);
      const agent = spawn(
        join(unpacked, 'usr/bin/evtrace'),
        ['agent', '--socket', join(dir, 'agent.sock'), '--state-dir', join(dir, 'state')],
        { stdio: 'ignore', env: { PATH: noNode, NOTIFY_SOCKET: name, WATCHDOG_USEC: '200000' } },
      );
      const exited = new Promise((resolve) => agent.once('exit', resolve));
      try {
        await systemd.until((d) => d.startsWith('READY=1\n'));
        await systemd.until((d) => d === 'WATCHDOG=1\n', 2);
        agent.kill('SIGTERM');
        expect(await exited).toBe(0);
      } finally {
        agent.kill('SIGKILL');
        systemd.close();
      }
    },
    30_000,
  );
});
