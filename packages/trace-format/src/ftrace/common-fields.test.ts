import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { findTracefs } from '../testing/tracefs.ts';
import { FTRACE_COMMON_FIELDS, FTRACE_COMMON_FIELDS_TEXT } from './common-fields.ts';
import { parseFormatFile } from './format-file.ts';

describe('FTRACE_COMMON_FIELDS', () => {
  it('are what a format file made with FTRACE_COMMON_FIELDS_TEXT parses to, the own fields starting after them', () => {
    const text = `name: tick\nID: 7\nformat:\n${FTRACE_COMMON_FIELDS_TEXT}\n\tfield:int count;\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: "count=%d", REC->count\n`;
    const fields = parseFormatFile(text, { system: 'demo' }).ftrace!.fields;
    expect(fields.filter((f) => f.common)).toEqual(FTRACE_COMMON_FIELDS);
    expect(fields.filter((f) => !f.common).map((f) => f.name)).toEqual(['count']);
    const last = FTRACE_COMMON_FIELDS.at(-1)!;
    expect(last.offset + last.size).toBe(8);
  });
});

const tracefs = findTracefs();
describe.skipIf(!('path' in tracefs))(
  `FTRACE_COMMON_FIELDS_TEXT on this kernel's tracefs${'why' in tracefs ? ` (skipped: ${tracefs.why})` : ''}`,
  () => {
    const root = 'path' in tracefs ? tracefs.path : '';

    it('is the common block of every sched event format file, as the kernel prints it', () => {
      const events = readdirSync(`${root}/events/sched`, { withFileTypes: true }).filter((e) => e.isDirectory());
      expect(events.length).toBeGreaterThan(5);
      for (const event of events) {
        const text = readFileSync(`${root}/events/sched/${event.name}/format`, 'utf8');
        const block = text.slice(text.indexOf('format:\n') + 'format:\n'.length, text.indexOf('\n\n') + 1);
        expect(block, event.name).toBe(FTRACE_COMMON_FIELDS_TEXT);
      }
    });
  },
);
