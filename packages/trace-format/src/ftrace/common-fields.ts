/**
 * The fields the kernel puts at the start of every tracepoint record (`struct trace_entry`), as every event `format`
 * file lists them. Sources and writers that make format files of their own (synthetic and user-space sources,
 * converted CTF classes) start theirs with these, so that every reader decodes `pid` and the flags alike.
 */
import type { FtraceFieldInfo } from '../model/types.ts';
import { fieldLineText } from './format-text.ts';

/** `common_type`, `common_flags`, `common_preempt_count` and `common_pid`: 8 bytes; an event's own fields follow. */
export const FTRACE_COMMON_FIELDS: readonly FtraceFieldInfo[] = [
  { name: 'common_type', cType: 'unsigned short', offset: 0, size: 2, signed: false, common: true },
  { name: 'common_flags', cType: 'unsigned char', offset: 2, size: 1, signed: false, common: true },
  { name: 'common_preempt_count', cType: 'unsigned char', offset: 3, size: 1, signed: false, common: true },
  { name: 'common_pid', cType: 'int', offset: 4, size: 4, signed: true, common: true },
];

/**
 * {@link FTRACE_COMMON_FIELDS} as the lines of a `format` file (after `format:`, before the blank line and the
 * event's own fields), exactly as the kernel prints them.
 */
export const FTRACE_COMMON_FIELDS_TEXT: string = FTRACE_COMMON_FIELDS.map(fieldLineText).join('');
