/** Error codes of @evtrace/ringbuf. */
export type RingbufErrorCode = 'ERR_PLACEHOLDER';

export class RingbufError extends Error {
  readonly code: RingbufErrorCode;
  constructor(code: RingbufErrorCode, message: string) {
    super(message);
    this.name = 'RingbufError';
    this.code = code;
  }
}
