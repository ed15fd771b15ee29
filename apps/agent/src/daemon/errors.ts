/**
 * Errors of the agent daemon. Each carries the protocol error code its reply uses, so the server turns any
 * failure into a clear error reply without guessing.
 */
import type { AgentErrorCode } from '@evtrace/agent-protocol';
import { codeOf, EvtraceError, errorText } from '@evtrace/errors';

export class AgentError extends EvtraceError<AgentErrorCode> {
  constructor(code: AgentErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
    this.name = 'AgentError';
  }
}

/** Maps an error of the layers below (tracefs, filters, trace-format, the file system) to an AgentError. */
export function asAgentError(error: unknown): AgentError {
  if (error instanceof AgentError) return error;
  const code = codeOf(error);
  const message = error instanceof Error ? error.message : String(error);
  const tagged = errorText(error);
  switch (code) {
    case 'ERR_TRACEFS_EVENT':
      return new AgentError('ERR_AGENT_EVENT', tagged, { cause: error });
    case 'ERR_TRACEFS_FILTER':
      return new AgentError('ERR_AGENT_FILTER', tagged, { cause: error });
    case 'EACCES':
    case 'EPERM':
      return new AgentError('ERR_AGENT_PERMISSION', tagged, { cause: error });
    case 'ERR_TRACEFS_OUTPUT':
    case 'ERR_TRACE_OUTPUT':
    case 'ENOSPC':
    case 'EDQUOT':
    case 'ENOENT':
    case 'EEXIST':
    case 'EROFS':
    case 'ELOOP':
    case 'ENOTDIR':
    case 'EISDIR':
      return new AgentError('ERR_AGENT_OUTPUT', tagged, { cause: error });
    case 'ERR_TRACEFS_NOT_FOUND':
    case 'ERR_TRACEFS_PERMISSION':
    case 'ERR_TRACEFS_SETTING':
    case 'ERR_TRACEFS_IO':
    case 'ERR_BTS_UNSUPPORTED':
    case 'ERR_BTS_CAPTURE':
    case 'ERR_BTS_ARGUMENT':
      return new AgentError('ERR_AGENT_SOURCE', tagged, { cause: error });
    default:
      if ((error as { name?: string })?.name === 'FilterError')
        return new AgentError('ERR_AGENT_FILTER', message, { cause: error });
      return new AgentError('ERR_AGENT_INTERNAL', tagged, { cause: error });
  }
}
