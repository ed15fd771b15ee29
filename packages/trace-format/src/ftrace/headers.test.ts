import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TraceFormatError } from '../errors.ts';
import { findTracefs } from '../testing/tracefs.ts';
import { HEADER_EVENT_TEXT, headerPageText } from './format-text.ts';
import { parseHeaderEvent, parseHeaderPage } from './headers.ts';

const HEADER_PAGE = `\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;
`;

describe('header_page and header_event', () => {
  it('reads the page layout, with the page size from the data field or an override', () => {
    expect(parseHeaderPage(HEADER_PAGE)).toEqual({
      byteOrder: 'le',
      timestampOffset: 0,
      commitOffset: 8,
      commitSize: 8,
      dataOffset: 16,
      pageSize: 4096,
    });
    expect(parseHeaderPage(HEADER_PAGE, { pageSize: 16384, byteOrder: 'be' })).toMatchObject({
      pageSize: 16384,
      byteOrder: 'be',
    });
    const small = HEADER_PAGE.replace('size:8;\tsigned:1', 'size:4;\tsigned:1').replace('offset:16', 'offset:12');
    expect(parseHeaderPage(small)).toMatchObject({ commitSize: 4, dataOffset: 12, pageSize: 4092 });
  });

  it('writes back what it reads', () => {
    const layout = parseHeaderPage(HEADER_PAGE);
    expect(parseHeaderPage(headerPageText(layout))).toEqual(layout);
    expect(parseHeaderEvent(HEADER_EVENT_TEXT)).toMatchObject({ typeLenBits: 5, timeDeltaBits: 27, padding: 29 });
  });

  it('rejects missing fields and impossible layouts, naming the file', () => {
    expect(() => parseHeaderPage(HEADER_PAGE.replace(/.*commit.*\n/, ''), { file: 'hp' })).toThrow(
      /^hp: header_page has no commit field/,
    );
    expect(() => parseHeaderPage(HEADER_PAGE.replace('size:4080', 'size:0'), { file: 'hp' })).toThrow(
      /impossible page layout/,
    );
    expect(() => parseHeaderEvent(HEADER_EVENT_TEXT.replace('5 bits', '6 bits'), { file: 'he' })).toThrow(
      /^he: unsupported event header/,
    );
  });

  it('never fails with anything but TraceFormatError on mutated texts', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(HEADER_PAGE, HEADER_EVENT_TEXT),
        fc.array(fc.tuple(fc.nat(400), fc.nat(12), fc.string({ maxLength: 6 })), { maxLength: 5 }),
        (base, edits) => {
          let text = base;
          for (const [pos, del, ins] of edits) text = text.slice(0, pos) + ins + text.slice(pos + del);
          try {
            if (base === HEADER_PAGE) {
              const l = parseHeaderPage(text);
              expect(l.pageSize).toBeGreaterThan(l.dataOffset);
            } else {
              parseHeaderEvent(text);
            }
          } catch (e) {
            expect(e).toBeInstanceOf(TraceFormatError);
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  const tracefs = findTracefs();
  it.skipIf(!('path' in tracefs))(
    `parses this kernel's files${'why' in tracefs ? ` (skipped: ${tracefs.why})` : ''}`,
    () => {
      const root = (tracefs as { path: string }).path;
      const layout = parseHeaderPage(readFileSync(`${root}/events/header_page`, 'utf8'));
      const subbuf = Number(readFileSync(`${root}/buffer_subbuf_size_kb`, 'utf8')) * 1024;
      expect(layout.pageSize).toBe(subbuf);
      expect(layout.commitSize).toBe(8);
      expect(parseHeaderEvent(readFileSync(`${root}/events/header_event`, 'utf8')).dataMaxTypeLen).toBe(28);
    },
  );
});
