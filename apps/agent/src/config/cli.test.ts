import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import { ExitCode, errorLine, exitCodeOf } from '../exit-codes.ts';
import { addConfigOptions, agentConfigFromCli, configReport } from './cli.ts';
import { ConfigError } from './errors.ts';

const EXAMPLE = new URL('../../examples/agent.toml', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'evtrace-config-cli-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const noFile = join(work, 'absent.toml');

describe('evtrace agent configuration flags', () => {
  it('adds only the flags a command lacks, and parses them into config options', () => {
    const cmd = new Command('agent').option('--socket <path>', "the command's own help").exitOverride();
    addConfigOptions(cmd);
    expect(cmd.options.filter((o) => o.long === '--socket')).toHaveLength(1);
    expect(cmd.options.find((o) => o.long === '--socket')!.description).toBe("the command's own help");
    cmd.parse(['--metrics', '127.0.0.1:0', '--buffer-size', '8MiB', '--check-config', '--state-dir', 'st'], {
      from: 'user',
    });
    const options = cmd.opts();
    expect(options).toEqual({ metrics: '127.0.0.1:0', bufferSize: '8MiB', checkConfig: true, stateDir: 'st' });
    const config = agentConfigFromCli(options, {}, { file: noFile });
    expect(config.metrics).toEqual({ host: '127.0.0.1', port: 0 });
    expect(config.bufferSize).toBe(8 << 20);
    expect(config.stateDir).toBe(join(process.cwd(), 'st'));
  });

  it('a configuration error is a usage error (exit status 2) with its place in the message', async () => {
    const bad = join(work, 'bad.toml');
    writeFileSync(bad, '[sessions.x]\nevents = ["a:b"]\nmode = "fast"\n');
    let error: unknown;
    try {
      agentConfigFromCli({ config: bad }, {}, { file: noFile });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(exitCodeOf(error)).toBe(ExitCode.Usage);
    expect(errorLine(error)).toBe(
      `ERR_CONFIG_VALUE: ${bad}:3:8: sessions.x.mode: expected overwrite or discard, got "fast"`,
    );
  });

  it('replaces the built-in defaults with the ones it is given', () => {
    const config = agentConfigFromCli({}, {}, { file: noFile, settings: { socket: '/tmp/u/agent.sock' } });
    expect(config.socket).toBe('/tmp/u/agent.sock');
    expect(config.origins.socket).toEqual({ kind: 'default' });
  });

  it('--check-config reports each value with its origin and each session', () => {
    const config = agentConfigFromCli({ config: EXAMPLE, mode: 'overwrite' }, { EVTRACE_METRICS: '[::1]:9000' });
    const report = configReport(config);
    expect(report).toContain(`config file: ${EXAMPLE}\n`);
    expect(report).toMatch(/^ {2}metrics +\[::1\]:9000 +\(environment variable EVTRACE_METRICS\)$/m);
    expect(report).toMatch(/^ {2}mode +overwrite +\(--mode\)$/m);
    expect(report).toMatch(new RegExp(`^ {2}socket +/run/evtrace/agent.sock +\\(${EXAMPLE}:5:10\\)$`, 'm'));
    expect(report).toMatch(
      /^ {2}flight: events sched:sched_switch,sched:sched_wakeup; overwrite; 16MiB; auto; started at boot$/m,
    );
    expect(report).toMatch(/^ {2}mce: .*created at boot, not started$/m);
    expect(report).toMatch(/^ {2}kmem: .*output \/var\/lib\/evtrace\/kmem \(ctf\); rotate 3600s;/m);
  });
});
