import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadAgentConfig } from './config/load.ts';
import { CliExit, ExitCode, errorLine } from './exit-codes.ts';
import { runCli } from './program.ts';
import { durationOption, parseDuration, parseRotate, parseSize, sizeOption } from './units.ts';

describe('sizes', () => {
  it('reads binary and decimal units and bare bytes', () => {
    expect(parseSize('64MiB')).toBe(64 * 1024 * 1024);
    expect(parseSize('64M')).toBe(64 * 1024 * 1024);
    expect(parseSize('10MB')).toBe(10_000_000);
    expect(parseSize('512 KiB')).toBe(512 * 1024);
    expect(parseSize('1.5GiB')).toBe(1.5 * 1024 ** 3);
    expect(parseSize('4096')).toBe(4096);
    expect(parseSize('4096B')).toBe(4096);
  });
  it('reads the single-letter units in either case as powers of 1024', () => {
    expect(['16k', '16K', '16KiB'].map(parseSize)).toEqual([16384, 16384, 16384]);
    expect(['16m', '16M', '16MiB'].map(parseSize)).toEqual([16 << 20, 16 << 20, 16 << 20]);
    expect(['1g', '1G', '1GiB'].map(parseSize)).toEqual([1 << 30, 1 << 30, 1 << 30]);
    expect(['2t', '2T', '2TiB'].map(parseSize)).toEqual([2 * 1024 ** 4, 2 * 1024 ** 4, 2 * 1024 ** 4]);
  });
  it('refuses what is not a size', () => {
    for (const t of [
      '',
      'MiB',
      '64Mb',
      '64mib',
      '64kb',
      '-1M',
      '1e3',
      '64 MiBs',
      '0.5B',
      '99999999999T',
      '1,024',
      '12q',
    ]) {
      expect(parseSize(t), t).toBeUndefined();
    }
  });
});

describe('durations', () => {
  it('reads ms, s, m, h and d, and a number alone as seconds', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('30s')).toBe(30_000);
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration('1.5h')).toBe(5_400_000);
    expect(parseDuration('1d')).toBe(86_400_000);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('3')).toBe(3000);
  });
  it('refuses zero, negative values and unknown units', () => {
    for (const t of ['0', '0s', '1w', 's', '1 hour', '-5s', '10 parsecs', '2M', '1e3s', '']) {
      expect(parseDuration(t), t).toBeUndefined();
    }
  });
});

describe('rotation', () => {
  it('is a duration or a size, each with its unit; m is minutes there', () => {
    expect(parseRotate('30s')).toEqual({ seconds: 30 });
    expect(parseRotate('5m')).toEqual({ seconds: 300 });
    expect(parseRotate('64M')).toEqual({ bytes: 64 << 20 });
    expect(parseRotate('100MiB')).toEqual({ bytes: 100 << 20 });
  });
  it('refuses a number alone, which could be either, and nothing', () => {
    for (const t of ['100', '0M', '12q', '']) expect(parseRotate(t), t).toBeUndefined();
  });
});

describe('options', () => {
  it('a bad value is a usage error naming the option', async () => {
    let error: unknown;
    try {
      sizeOption('--size', '12q');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CliExit);
    expect((error as CliExit).exitCode).toBe(ExitCode.Usage);
    expect(errorLine(error)).toBe('ERR_CLI_USAGE: --size: "12q" is not a size (e.g. 16m, 1g, 4096)');
    expect(() => durationOption('--duration', 'soon')).toThrow(
      '--duration: "soon" is not a duration (e.g. 10s, 500ms, 2m, 1h)',
    );
  });
  it('gives what the parsers give', () => {
    expect(sizeOption('--size', '16m')).toBe(16 << 20);
    expect(durationOption('--duration', '250ms')).toBe(250);
  });
});

describe('16m is a size everywhere it is a size', () => {
  const dir = mkdtempSync(join(tmpdir(), 'evtrace-units-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('in the configuration file, the environment and the flags', () => {
    const file = join(dir, 'agent.toml');
    writeFileSync(file, 'buffer_size = "16m"\n[sessions.s]\nevents = ["a:b"]\noutput = "/o"\nrotate = "16M"\n');
    const fromFile = loadAgentConfig({ flags: { config: file }, env: {} });
    expect(fromFile.bufferSize).toBe(16 << 20);
    expect(fromFile.sessions[0]?.rotate).toEqual({ bytes: 16 << 20 });
    const empty = join(dir, 'empty.toml');
    writeFileSync(empty, '');
    expect(loadAgentConfig({ flags: { config: empty }, env: { EVTRACE_BUFFER_SIZE: '16m' } }).bufferSize).toBe(
      16 << 20,
    );
    expect(loadAgentConfig({ flags: { config: empty, bufferSize: '16m' }, env: {} }).bufferSize).toBe(16 << 20);
  });

  it('in the commands: persistent create --size 16m, demo --page-size 64k', async () => {
    let stdout = '';
    let stderr = '';
    const io = { stdout: (t: string) => (stdout += t), stderr: (t: string) => (stderr += t) };
    const created = await runCli(['persistent', 'create', 'units/m', '--size', '16m', '--dir', dir], io);
    expect(stderr).toBe('');
    expect(created).toBe(ExitCode.Ok);
    expect(stdout).toBe(`created user buffer units/m: ${dir}/units/m.evrb (16M, overwrite)\n`);
    stdout = '';
    const demo = await runCli(['demo', '--page-size', '64k', '--events', '2', '--producers', '1'], io);
    expect(demo).toBe(ExitCode.Ok);
    expect(stderr).toMatch(/pages of 65536 bytes/);
  });
});
