export { type InputLocation, TraceFormatError, type TraceFormatErrorCode } from './errors.ts';
export type * from './model/types.ts';
