/**
 * Errors of the agent daemon. Each carries the protocol error code its reply uses, so the server turns any
 * failure into a clear error reply without guessing.
 */
import type { AgentErrorCode } from '@evtrace/agent-protocol';

export class AgentError extends Error {
  readonly code: AgentErrorCode;
  constructor(code: AgentErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AgentError';
    this.code = code;
  }
}

/** What a failed system call's errno means, for messages that name the path rather than repeat Node's. */
const ERRNO_TEXT: Readonly<Record<string, string>> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EEXIST: 'it exists already',
  ELOOP: 'it is a symbolic link, which the agent does not follow',
  ENOENT: 'no such file or directory',
  ENOTDIR: 'a component of the path is not a directory',
  EISDIR: 'it is a directory',
  ENOSPC: 'no space left on device',
  EDQUOT: 'disk quota exceeded',
  EROFS: 'read-only file system',
};

/** A Node file-system error as `cannot SYSCALL PATH: what (ERRNO)`, or undefined for other errors. */
function fsMessage(error: unknown): string | undefined {
  const e = error as NodeJS.ErrnoException;
  if (typeof e?.code !== 'string' || typeof e.syscall !== 'string' || typeof e.path !== 'string') return undefined;
  return `cannot ${e.syscall} ${e.path}: ${ERRNO_TEXT[e.code] ?? e.code} (${e.code})`;
}

/** Maps an error of the layers below (tracefs, filters, trace-format, the file system) to an AgentError. */
export function asAgentError(error: unknown): AgentError {
  if (error instanceof AgentError) return error;
  const code = (error as { code?: unknown })?.code;
  const message = error instanceof Error ? error.message : String(error);
  // A system call's error names what it was done to; other errors keep their code in front.
  const tagged = fsMessage(error) ?? (typeof code === 'string' ? `${code}: ${message}` : message);
  switch (code) {
    case 'ERR_TRACEFS_EVENT':
      return new AgentError('ERR_EVENT', tagged, { cause: error });
    case 'ERR_TRACEFS_FILTER':
      return new AgentError('ERR_FILTER', tagged, { cause: error });
    case 'EACCES':
    case 'EPERM':
      return new AgentError('ERR_PERMISSION', tagged, { cause: error });
    case 'ERR_TRACEFS_OUTPUT':
    case 'ENOSPC':
    case 'EDQUOT':
    case 'ENOENT':
    case 'EEXIST':
    case 'EROFS':
    case 'ELOOP':
    case 'ENOTDIR':
    case 'EISDIR':
      return new AgentError('ERR_OUTPUT', tagged, { cause: error });
    case 'ERR_TRACEFS_NOT_FOUND':
    case 'ERR_TRACEFS_PERMISSION':
    case 'ERR_TRACEFS_SETTING':
    case 'ERR_TRACEFS_IO':
    case 'ERR_BTS_UNSUPPORTED':
    case 'ERR_BTS_CAPTURE':
    case 'ERR_BTS_ARGUMENT':
      return new AgentError('ERR_SOURCE', tagged, { cause: error });
    default:
      if ((error as { name?: string })?.name === 'FilterError')
        return new AgentError('ERR_FILTER', message, { cause: error });
      return new AgentError('ERR_INTERNAL', tagged, { cause: error });
  }
}
