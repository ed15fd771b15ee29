/**
 * A trace cat prints but CTF cannot hold (a CPU's events going back in time): convert --to ctf fails naming the input
 * file and the event, not with a bare writer message.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { compileRecordEncoder, kernelPageLayout, packPages } from '@evtrace/trace-format';
import { afterAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../exit-codes.ts';
import { run, sampleEvents, sampleInputs } from '../testing/sample-traces.ts';

const inputs = sampleInputs();
afterAll(() => rmSync(inputs.dir, { recursive: true, force: true }));

describe('convert --to ctf on a CPU whose events go back in time', () => {
  it('cat prints it; convert names the input, the event, its CPU and time', async () => {
    // The input: CPU 0's fourth event stamped earlier than its first (tsNs below); pages keep the order they are
    // written in, whatever the times say.
    const records = sampleEvents()
      .filter((e) => e.cpu === 0)
      .map((e, i) => ({
        tsNs: i === 3 ? e.tsNs - 5_000_000n : e.tsNs,
        data: compileRecordEncoder(e.eventClass)(e.fields, e.scopes!['event.context']!),
      }));
    writeFileSync(join(inputs.raw, 'cpu0.raw'), packPages(records, kernelPageLayout(4096)));
    const cat = await run('cat', inputs.raw);
    expect(cat.code).toBe(ExitCode.Ok);
    expect(cat.stdout).toContain('0.995006:');
    const r = await run('convert', inputs.raw, '--to', 'ctf', '-o', join(inputs.dir, 'out.ctf'));
    expect(r.code).toBe(ExitCode.Failure);
    expect(r.stderr).toMatch(
      new RegExp(
        `^evtrace: ERR_TRACE_CTF_WRITE: ${inputs.raw}: event \\d+ \\(kmem:kmalloc, CPU 0, 995006000 ns\\): timestamp 995006000 ns`,
      ),
    );
  });
});
