import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTextFormatter, openTrace } from '../detect.ts';
import { openTraceDat } from '../ftrace/tracedat/read.ts';
import { writeTraceDat } from '../ftrace/tracedat/write-events.ts';
import { writeTraceDatPages } from '../ftrace/tracedat/write-pages.ts';
import { countByEvent, differingLines, isTimerStartFlags, lineEvent, reportLines } from '../testing/report-diff.ts';
import { recordTraceDat, traceCmdRecording } from '../testing/tracecmd.ts';

/** Our text of a file, as `evtrace cat` prints it, split into lines. */
function ourLines(file: string): string[] {
  const reader = openTrace(file);
  const line = createTextFormatter(reader);
  const out: string[] = [];
  for (const e of reader.events()) out.push(...line(e).split('\n'));
  return out;
}

const { why, root } = traceCmdRecording();
/** The systems libtraceevent's plugins and print-format helpers touch most, where this kernel has them. */
const SYSTEMS = ['kmem', 'sched', 'irq', 'timer', 'workqueue', 'syscalls', 'tlb', 'rcu'].filter((s) =>
  existsSync(`${root}/events/${s}`),
);

describe.skipIf(why !== '')(
  `text of trace-cmd recordings against trace-cmd report${why ? ` (skipped: ${why})` : ''}`,
  { timeout: 120_000 },
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'evtrace-report-'));
    const whole = join(dir, 'systems.dat');
    const lossy = join(dir, 'lossy.dat');
    beforeAll(async () => {
      await recordTraceDat(
        root,
        whole,
        SYSTEMS.flatMap((s) => ['-e', s]),
        600,
      );
      // Two pages a CPU: the kernel overwrites what trace-cmd has not read yet and marks the loss on the next page.
      await recordTraceDat(root, lossy, ['-b', '8', '-e', 'kmem', '-e', 'sched', '-e', 'timer'], 600);
    }, 120_000);

    it(`prints every line of ${SYSTEMS.join(', ')} events as trace-cmd report does, plugins included`, () => {
      const theirs = reportLines(whole);
      const ours = ourLines(whole);
      // What the plugins and helpers change is there to compare.
      for (const [event, text] of [
        ['sched_switch', / ==> /],
        ['kmem_cache_alloc', /^\(\S+\+0x[0-9a-f]+\) call_site=/],
        ['mm_page_alloc', /^page=0x[0-9a-f]+ pfn=0x[0-9a-f]+ order=\d+ migratetype=\d+ gfp_flags=/],
        ['hrtimer_start', /^hrtimer=0x[0-9a-f]+ function=\S+\/0x[0-9a-f]+ expires=\d+ softexpires=\d+$/],
        // A `const char *` into the kernel's printk strings, printed from the file's printk section.
        ...(SYSTEMS.includes('rcu') ? ([['rcu_utilization', /^(Start|End) \S/]] as const) : []),
      ] as const) {
        const re = new RegExp(`\\] +[\\d.]+: ${event}: +(.*)$`);
        const body = theirs.map((l) => re.exec(l)?.[1]).find(Boolean);
        expect(body, `trace-cmd report shows a ${event}`).toBeDefined();
        expect(body).toMatch(text);
      }
      for (const system of SYSTEMS) {
        const names = new Set(
          openTrace(whole)
            .eventClasses.filter((c) => c.ftrace?.system === system)
            .map((c) => c.ftrace!.event),
        );
        expect(
          theirs.some((l) => names.has(lineEvent(l))),
          `events of ${system}`,
        ).toBe(true);
      }
      const diffs = differingLines(ours, theirs);
      const tolerated = diffs.filter(isTimerStartFlags);
      const rest = diffs.filter((d) => !isTimerStartFlags(d));
      expect(ours.length).toBe(theirs.length);
      expect(countByEvent(rest), JSON.stringify(rest.slice(0, 3), null, 1)).toEqual({});
      // The one exception (see isTimerStartFlags): trace-cmd's flags are D|P|I for every timer.
      for (const d of tolerated) expect(d.ours).toMatch(/ flags=[MDPI|]*$/);
    });

    it.skipIf(!SYSTEMS.includes('rcu'))(
      'keeps the printk strings in what it writes: trace-cmd report of a re-written file prints rcu_utilization as the original',
      () => {
        const r = openTraceDat(whole);
        expect(r.metadata.printk?.size).toBeGreaterThan(0);
        const rcu = (lines: string[]) => lines.filter((l) => lineEvent(l) === 'rcu_utilization');
        const theirs = rcu(reportLines(whole));
        expect(theirs.length).toBeGreaterThan(0);
        // Both writers, both versions' printk sections: events re-encoded into v7, pages copied into v6.
        const copy = join(dir, 'rewritten.dat');
        // Every event, as trace-cmd learns task names from the switches it prints before the rcu lines.
        const events = [...r.events()];
        writeTraceDat(copy, r.eventClasses, events, {
          cmdlines: r.metadata.cmdlines,
          ...(r.metadata.printkText !== undefined ? { printk: r.metadata.printkText } : {}),
        });
        expect(rcu(reportLines(copy))).toEqual(theirs);
        const pages = r.pagesInput();
        if (!('input' in pages)) throw new Error(pages.reason);
        const copied = join(dir, 'copied.dat');
        writeTraceDatPages(copied, pages.input, { version: 6 });
        expect(rcu(reportLines(copied))).toEqual(theirs);
      },
    );

    it('prints the CPU:N [N EVENTS DROPPED] lines where the kernel marked a loss, as trace-cmd report does, and writes them back', () => {
      const theirs = reportLines(lossy);
      const ours = ourLines(lossy);
      const dropped = theirs.filter((l) => /^CPU:\d+ \[(\d+ )?EVENTS DROPPED\]$/.test(l));
      expect(dropped.length).toBeGreaterThan(0);
      const diffs = differingLines(ours, theirs).filter((d) => !isTimerStartFlags(d));
      expect(ours.length).toBe(theirs.length);
      expect(countByEvent(diffs), JSON.stringify(diffs.slice(0, 3), null, 1)).toEqual({});
      // Events written again keep the losses: trace-cmd report prints the copy as the recording, DROPPED lines included.
      const r = openTraceDat(lossy);
      const copy = join(dir, 'lossy-rewritten.dat');
      writeTraceDat(copy, r.eventClasses, r.events(), {
        cmdlines: r.metadata.cmdlines,
        ...(r.metadata.kallsymsText !== undefined ? { kallsyms: r.metadata.kallsymsText } : {}),
        ...(r.metadata.printkText !== undefined ? { printk: r.metadata.printkText } : {}),
      });
      expect(reportLines(copy)).toEqual(theirs);
    });
  },
);
