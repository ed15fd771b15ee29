import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { openTrace, openTraceDat, perfettoSchema } from '@evtrace/trace-format';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { run, sampleInputs } from '../testing/sample-traces.ts';

function hasTool(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('evtrace convert', () => {
  const { dat, raw, dir } = sampleInputs();

  it('writes JSON lines equal to cat --json, and text equal to cat', async () => {
    const out = join(dir, 'a.jsonl');
    const r = await run('convert', raw, '-o', out, '--to', 'jsonl');
    expect(r.code).toBe(ExitCode.Ok);
    expect(r.stderr).toBe(`evtrace: 40 events written to ${out} (jsonl)\n`);
    expect(readFileSync(out, 'utf8')).toBe((await run('cat', dat, '--json')).stdout);
    const txt = join(dir, 'a.txt');
    await run('convert', dat, '-o', txt, '--to', 'text');
    expect(readFileSync(txt, 'utf8')).toBe((await run('cat', dat)).stdout);
  });

  it('-o - writes text, jsonl and perfetto-json to standard output, and refuses the kinds that need a path', async () => {
    const jsonl = await run('convert', raw, '-o', '-', '--to', 'jsonl');
    expect([jsonl.code, jsonl.stderr]).toEqual([
      ExitCode.Ok,
      'evtrace: 40 events written to standard output (jsonl)\n',
    ]);
    expect(jsonl.stdout).toBe((await run('cat', dat, '--json')).stdout);
    expect((await run('convert', dat, '-o', '-', '--to', 'text')).stdout).toBe((await run('cat', dat)).stdout);
    const json = await run('convert', dat, '-o', '-', '--to', 'perfetto-json');
    expect(JSON.parse(json.stdout).traceEvents.length).toBeGreaterThanOrEqual(40);
    for (const [to, why] of [
      ['tracedat', 'section offsets'],
      ['ctf', 'a directory'],
      ['perfetto', 'binary'],
    ] as const) {
      const r = await run('convert', dat, '-o', '-', '--to', to);
      expect([r.code, r.stdout]).toEqual([ExitCode.Usage, '']);
      expect(r.stderr).toContain(`-o -: --to ${to} cannot go to standard output`);
      expect(r.stderr).toContain(why);
      expect(existsSync(join(process.cwd(), '-'))).toBe(false);
    }
  });

  it('writes a Perfetto protobuf trace: every event in its CPU bundle, tasks named from their COMMs', async () => {
    const out = join(dir, 'p.pftrace');
    const r = await run('convert', dat, '-o', out, '--to', 'perfetto', '--filter', 'bytes_req > 100');
    expect(r.code).toBe(ExitCode.Ok);
    expect(r.stderr).toContain(`evtrace: 21 events written to ${out} (perfetto)\n`);
    const { Trace } = perfettoSchema();
    const trace = Trace.toObject(Trace.decode(readFileSync(out)), { longs: String }) as {
      packet: {
        ftrace_events?: { cpu: number; event: { timestamp: string; pid: number; generic: { event_name: string } }[] };
        process_tree?: object;
      }[];
    };
    const events = trace.packet.flatMap((p) =>
      (p.ftrace_events?.event ?? []).map((e) => ({ cpu: p.ftrace_events!.cpu, ...e })),
    );
    const reference = (await run('cat', dat, '--json', '--filter', 'bytes_req > 100')).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { ts_ns: string | number; cpu: number; event: string });
    const key = (ts: string, cpu: number, name: string) => `${ts}/${cpu}/${name}`;
    expect(events.map((e) => key(e.timestamp, e.cpu, e.generic.event_name)).sort()).toEqual(
      reference.map((e) => key(String(e.ts_ns), e.cpu, e.event.split(':')[1]!)).sort(),
    );
    // The filter left out the execs, the only events here that show a task's thread group: no tasks described.
    expect(trace.packet.some((p) => p.process_tree !== undefined)).toBe(false);
    const all = join(dir, 'all.pftrace');
    expect((await run('convert', dat, '-o', all, '--to', 'perfetto')).code).toBe(ExitCode.Ok);
    const tree = (
      Trace.toObject(Trace.decode(readFileSync(all))) as {
        packet: { process_tree?: { processes: { pid: number; cmdline: string[] }[] } }[];
      }
    ).packet.at(-1)?.process_tree;
    // Each exec'd task leads its own group, named after its file as the kernel names it.
    expect(tree?.processes).toContainEqual({ pid: 103, cmdline: ['t3'], cmdline_is_comm: true });
    expect(tree?.processes).toHaveLength(10);
  });

  it('writes Perfetto JSON with one instant event per event and named tasks', async () => {
    const out = join(dir, 'p.json');
    expect((await run('convert', dat, '-o', out, '--to', 'perfetto-json', '--filter', 'bytes_req > 100')).code).toBe(
      ExitCode.Ok,
    );
    const json = JSON.parse(readFileSync(out, 'utf8'));
    const instants = json.traceEvents.filter((e: { ph: string }) => e.ph === 'i');
    expect(instants.length).toBe(21);
    expect(instants[0]).toMatchObject({ name: 'kmalloc', cat: 'kmem', ts: 1000012, args: { bytes_req: 120, cpu: 0 } });
    const names = json.traceEvents
      .filter((e: { name: string }) => e.name === 'thread_name')
      .map((e: { args: { name: string } }) => e.args.name);
    expect(names).toContain('worker (100)');
  });

  it('round-trips trace.dat v6, v7 zstd and zlib through evtrace', async () => {
    const reference = (await run('cat', dat, '--json')).stdout;
    for (const extra of [
      ['--file-version', '6'],
      ['--compression', 'zstd'],
      ['--compression', 'zlib'],
    ]) {
      const out = join(dir, `rt-${extra.join('')}.dat`);
      const r = await run('convert', raw, '-o', out, '--to', 'tracedat', ...extra);
      expect(r.code).toBe(ExitCode.Ok);
      expect((await run('cat', out, '--json')).stdout).toBe(reference);
    }
  });

  it('copies a trace.dat into a trace.dat page for page, and decodes and encodes again only to filter', async () => {
    const reference = (await run('cat', dat, '--json')).stdout;
    const pages = (file: string) =>
      openTraceDat(file)
        .cpuPages()
        .map((p) => (typeof p.bytes === 'function' ? Buffer.concat([...p.bytes()]) : p.bytes));
    for (const version of ['6', '7']) {
      const out = join(dir, `copy-v${version}.dat`);
      const r = await run('convert', dat, '-o', out, '--to', 'tracedat', '--file-version', version);
      expect(r.code).toBe(ExitCode.Ok);
      expect(r.stderr).toMatch(
        new RegExp(
          `^evtrace: pages of 2 CPUs copied to .*copy-v${version}\\.dat \\(tracedat v${version}, \\d+ bytes\\)\n$`,
        ),
      );
      expect(pages(out)).toEqual(pages(dat));
      expect((await run('cat', out, '--json')).stdout).toBe(reference);
    }
    const filtered = join(dir, 'filtered.dat');
    const f = await run('convert', dat, '-o', filtered, '--to', 'tracedat', '--filter', 'bytes_req > 100');
    expect(f.code).toBe(ExitCode.Ok);
    expect(f.stderr).toMatch(/evtrace: \d+ events written to .*filtered\.dat \(tracedat\)\n$/);
    expect((await run('cat', filtered, '--json')).stdout).toBe(
      (await run('cat', dat, '--json', '--filter', 'bytes_req > 100')).stdout,
    );
  });

  it('decodes and encodes again, with a note, a trace.dat whose offset option a copy of its pages would lose', async () => {
    const v6 = join(dir, 'offset-src.dat');
    expect((await run('convert', dat, '-o', v6, '--to', 'tracedat', '--file-version', '6')).code).toBe(ExitCode.Ok);
    // An offset option (id 7, "1000") put first in v6's option list; as many zero bytes of the padding before the
    // first CPU's pages are taken out, so that every offset in the file still holds.
    const bytes = readFileSync(v6);
    const option = Buffer.concat([Buffer.from([7, 0, 5, 0, 0, 0]), Buffer.from('1000\0')]);
    const at = bytes.indexOf('options  \0') + 'options  \0'.length;
    const first = openTraceDat(v6).info.buffers[0]!.cpus.find((c) => c.size > 0)!.offset;
    expect(bytes.subarray(first - option.length, first).every((b) => b === 0)).toBe(true);
    const shifted = join(dir, 'offset.dat');
    writeFileSync(
      shifted,
      Buffer.concat([bytes.subarray(0, at), option, bytes.subarray(at, first - option.length), bytes.subarray(first)]),
    );
    const out = join(dir, 'offset-out.dat');
    const r = await run('convert', shifted, '-o', out, '--to', 'tracedat');
    expect(r.code).toBe(ExitCode.Ok);
    expect(r.stderr).toContain(
      'pages not copied as they are (the file shifts its timestamps by 1000 ns (offset option))',
    );
    expect(r.stderr).toMatch(/evtrace: 40 events written to .*offset-out\.dat \(tracedat\)\n$/);
    const original = (await run('cat', dat, '--json')).stdout;
    const stamps = (text: string) =>
      text
        .trimEnd()
        .split('\n')
        .map((l) => BigInt(JSON.parse(l).ts_ns));
    expect(stamps((await run('cat', out, '--json')).stdout)).toEqual(stamps(original).map((t) => t + 1000n));
  });

  it('rejects bad option values with status 2', async () => {
    expect((await run('convert', dat, '-o', join(dir, 'x'), '--to', 'svg')).code).toBe(ExitCode.Usage);
    expect((await run('convert', dat, '-o', join(dir, 'x'), '--to', 'tracedat', '--file-version', '5')).code).toBe(
      ExitCode.Usage,
    );
    expect(
      (
        await run(
          'convert',
          dat,
          '-o',
          join(dir, 'x'),
          '--to',
          'tracedat',
          '--file-version',
          '6',
          '--compression',
          'zstd',
        )
      ).code,
    ).toBe(ExitCode.Usage);
  });

  it.skipIf(!hasTool('trace-cmd'))(
    'writes trace.dat that trace-cmd report prints like evtrace cat (skipped without trace-cmd: apt-get install trace-cmd)',
    async () => {
      const out = join(dir, 'tc.dat');
      expect((await run('convert', raw, '-o', out, '--to', 'tracedat')).code).toBe(ExitCode.Ok);
      const theirs = execFileSync('trace-cmd', ['report', out], {
        maxBuffer: 1 << 28,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      expect(theirs.replace(/^cpus=\d+\n/, '')).toBe((await run('cat', out)).stdout);
    },
  );

  it.skipIf(!hasTool('babeltrace2'))(
    'writes CTF that babeltrace2 reads with every event (skipped without babeltrace2: apt-get install babeltrace2)',
    async () => {
      const out = join(dir, 'ctf');
      expect((await run('convert', dat, '-o', out, '--to', 'ctf')).code).toBe(ExitCode.Ok);
      expect(existsSync(join(out, 'metadata'))).toBe(true);
      const text = execFileSync('babeltrace2', [out], { maxBuffer: 1 << 28, encoding: 'utf8' });
      const lines = text.trimEnd().split('\n');
      expect(lines.length).toBe(40);
      expect(lines[3]).toMatch(/sched:sched_process_exec: .*filename = "\/bin\/t3"/);
      // And back: CTF in, the same payloads out.
      const back = [...openTrace(out).events()].map((e) => e.fields.bytes_req ?? e.fields.filename);
      const orig = [...openTrace(dat).events()].map((e) => e.fields.bytes_req ?? e.fields.filename);
      expect(back.map(String)).toEqual(orig.map(String));
    },
  );
});

const FIXTURES = new URL(
  '../../../../../shared/fixtures/ctf-babeltrace-v2.0.4/tests/data/ctf-traces/succeed',
  import.meta.url,
).pathname;
const CLI = new URL('../../dist/cli.js', import.meta.url).pathname;
const ctfSkip = !existsSync(FIXTURES)
  ? `${FIXTURES} is absent`
  : !hasTool('babeltrace2')
    ? 'babeltrace2 is not installed (apt-get install babeltrace2)'
    : !existsSync(CLI)
      ? `${CLI} is not built`
      : undefined;

describe.skipIf(ctfSkip !== undefined)(
  `evtrace convert --to ctf, as babeltrace2 reads it${ctfSkip ? ` (skipped: ${ctfSkip})` : ''}`,
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'evtrace-convert-ctf-'));
    const babeltrace = (trace: string, ...args: string[]) =>
      execFileSync('babeltrace2', ['--clock-gmt', ...args, trace], { maxBuffer: 1 << 28, encoding: 'utf8' });
    const convert = async (name: string) => {
      const out = join(dir, name);
      const { stderr } = await promisify(execFile)(process.execPath, [
        CLI,
        'convert',
        join(FIXTURES, name),
        '-o',
        out,
        '--to',
        'ctf',
      ]);
      return { out, stderr };
    };

    it('keeps the env and stream event context of an LTTng trace (wk-heartbeat-u)', async () => {
      const { out, stderr } = await convert('wk-heartbeat-u');
      expect(stderr).toBe(`evtrace: 20 events written to ${out} (ctf)\n`);
      const theirs = babeltrace(join(FIXTURES, 'wk-heartbeat-u'));
      const ours = babeltrace(out);
      // The source has timestamps and cpu_id already, so nothing is added: the text is the same, line for line.
      expect(ours).toBe(theirs);
      expect(ours.split('\n')[0]).toBe(
        '[17:48:17.586558519] (+?.?????????) wk-heartbeat:(3208) heartbeat:msg: { cpu_id = 2 }, { vtid = 3214, vpid = 3208 }, { msg = "heartbeat" }',
      );
      // Every env entry and scope name too, as babeltrace2 prints them with --names/--fields all.
      expect(babeltrace(out, '--names=all', '--fields=all')).toBe(
        babeltrace(join(FIXTURES, 'wk-heartbeat-u'), '--names=all', '--fields=all'),
      );
    });

    it('adds only a time and cpu_id to a trace without timestamps or packet context (smalltrace)', async () => {
      const { out } = await convert('smalltrace');
      const theirs = babeltrace(join(FIXTURES, 'smalltrace')).trimEnd().split('\n');
      expect(theirs).toEqual([
        'string: { str = "This is a test trace" }',
        'string: { str = "with only two small events." }',
      ]);
      // The writer always records a time (0 here) and the CPU (0) in the packet context.
      const expected = theirs.map((line, i) => {
        const [name, rest] = [line.slice(0, line.indexOf(': ') + 2), line.slice(line.indexOf(': ') + 2)];
        return `[00:00:00.000000000] (${i === 0 ? '+?.?????????' : '+0.000000000'}) ${name}{ cpu_id = 0 }, ${rest}`;
      });
      expect(babeltrace(out).trimEnd().split('\n')).toEqual(expected);
    });
  },
);
