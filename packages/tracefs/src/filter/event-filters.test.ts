import { parseFormatFile } from '@evtrace/trace-format';
import { describe, expect, it } from 'vitest';
import { planEventFilters } from './event-filters.ts';

const COMMON = `\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
`;
const kmalloc = parseFormatFile(
  `name: kmalloc\nID: 658\nformat:\n${COMMON}\n\tfield:size_t bytes_req;\toffset:8;\tsize:8;\tsigned:0;\n\nprint fmt: "%zu", REC->bytes_req\n`,
  { system: 'kmem' },
);
const sw = parseFormatFile(
  `name: sched_switch\nID: 372\nformat:\n${COMMON}\n\tfield:pid_t prev_pid;\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: "%d", REC->prev_pid\n`,
  { system: 'sched' },
);

describe('planEventFilters', () => {
  it('gives each event the filter for every event and those scoped to it, joined with &&', () => {
    const plans = planEventFilters([kmalloc, sw], {
      filter: 'common_pid != 0',
      filters: [
        { events: ['kmem:*'], filter: 'bytes_req > 256' },
        { events: ['sched:sched_switch'], filter: 'prev_pid > 1' },
      ],
    });
    expect(plans.get('kmem:kmalloc')?.parsed.expression).toBe('(common_pid != 0) && (bytes_req > 256)');
    expect(plans.get('sched:sched_switch')?.parsed.expression).toBe('(common_pid != 0) && (prev_pid > 1)');
    expect(plans.get('kmem:kmalloc')?.kernel).toBeDefined();
  });

  it('leaves events no filter names without a plan', () => {
    const plans = planEventFilters([kmalloc, sw], { filters: [{ events: ['kmem:kmalloc'], filter: 'bytes_req > 1' }] });
    expect([...plans.keys()]).toEqual(['kmem:kmalloc']);
  });

  it('checks each expression alone, so the column is that of the text written (not of the joined one)', () => {
    expect(() =>
      planEventFilters([kmalloc, sw], {
        filter: 'common_pid != 0',
        filters: [{ events: ['sched:*'], filter: 'prev_pid > 1 && bytes_req > 2' }],
      }),
    ).toThrow(/invalid filter for sched:sched_switch at column 27:\nprev_pid > 1 && bytes_req > 2\n/);
  });

  it('refuses a scoped filter whose patterns name no recorded event', () => {
    expect(() => planEventFilters([kmalloc], { filters: [{ events: ['irq:*'], filter: 'irq > 1' }] })).toThrow(
      expect.objectContaining({ code: 'ERR_TRACEFS_EVENT', message: expect.stringMatching(/names no recorded event/) }),
    );
  });
});
