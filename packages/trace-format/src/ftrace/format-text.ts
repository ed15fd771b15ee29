/** Text of tracefs metadata files as the kernel prints them, for writers that must embed them (trace.dat). */
import type { EventClass, FtraceFieldInfo } from '../model/types.ts';
import { declarationText } from './encode.ts';
import type { PageLayout } from './headers.ts';

/** An event `format` file for `event` (the inverse of {@link parseFormatFile}). */
export function formatFileText(event: EventClass): string {
  const info = event.ftrace;
  if (info === undefined) throw new TypeError(`${event.name} has no ftrace field info`);
  const common = info.fields
    .filter((f) => f.common)
    .map(fieldLineText)
    .join('');
  const own = info.fields
    .filter((f) => !f.common)
    .map(fieldLineText)
    .join('');
  return `name: ${info.event}\nID: ${event.id}\nformat:\n${common}\n${own}\nprint fmt: ${event.printFormat ?? '""'}\n`;
}

/** One field's line of a `format` file, as the kernel prints it (tab-indented, newline-terminated). */
export function fieldLineText(f: FtraceFieldInfo): string {
  return `\tfield:${declarationText(f)};\toffset:${f.offset};\tsize:${f.size};\tsigned:${f.signed ? 1 : 0};\n`;
}

/** `events/header_page` for a layout. */
export function headerPageText(layout: PageLayout): string {
  return [
    `\tfield: u64 timestamp;\toffset:${layout.timestampOffset};\tsize:8;\tsigned:0;`,
    `\tfield: local_t commit;\toffset:${layout.commitOffset};\tsize:${layout.commitSize};\tsigned:1;`,
    `\tfield: int overwrite;\toffset:${layout.commitOffset};\tsize:1;\tsigned:1;`,
    `\tfield: char data;\toffset:${layout.dataOffset};\tsize:${layout.pageSize - layout.dataOffset};\tsigned:0;`,
    '',
  ].join('\n');
}

/** `events/header_event`, the same on every kernel since 2.6.31. */
export const HEADER_EVENT_TEXT = `# compressed entry header
\ttype_len    :    5 bits
\ttime_delta  :   27 bits
\tarray       :   32 bits

\tpadding     : type == 29
\ttime_extend : type == 30
\ttime_stamp : type == 31
\tdata max type_len  == 28
`;
