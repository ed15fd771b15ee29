export { type InputLocation, TraceFormatError, type TraceFormatErrorCode } from './errors.ts';
export { type FormatFileOptions, parseFormatFile } from './ftrace/format-file.ts';
export type * from './model/types.ts';
