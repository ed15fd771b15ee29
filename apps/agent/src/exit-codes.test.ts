import { openSync } from 'node:fs';
import { ProtocolError } from '@evtrace/agent-protocol';
import { PersistentError } from '@evtrace/persistent-events';
import { TraceFormatError } from '@evtrace/trace-format';
import { TracefsError } from '@evtrace/tracefs';
import { CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { ConfigError } from './config/errors.ts';
import { CliExit, ExitCode, errorLine, exitCodeOf, usageError } from './exit-codes.ts';

describe('exitCodeOf', () => {
  it('gives the command line errors of every package status 2, the rest 1', () => {
    expect(exitCodeOf(new TracefsError('ERR_TRACEFS_EVENT', 'unknown event'))).toBe(ExitCode.Usage);
    expect(exitCodeOf(new TracefsError('ERR_TRACEFS_PERMISSION', 'not root'))).toBe(ExitCode.Failure);
    expect(exitCodeOf(new PersistentError('ERR_PERSISTENT_NAME', 'bad name'))).toBe(ExitCode.Usage);
    expect(exitCodeOf(new PersistentError('ERR_PERSISTENT_CORRUPT', 'bad page'))).toBe(ExitCode.Failure);
    expect(exitCodeOf(new ProtocolError('ERR_AGENT_FILTER', 'no such field', { remote: true }))).toBe(ExitCode.Usage);
    expect(exitCodeOf(new ProtocolError('ERR_AGENT_NO_SESSION', 'no session x', { remote: true }))).toBe(
      ExitCode.Failure,
    );
    expect(exitCodeOf(new ConfigError('ERR_CONFIG_VALUE', 'bad', { origin: { kind: 'default' } }))).toBe(
      ExitCode.Usage,
    );
    expect(exitCodeOf(new TraceFormatError('ERR_TRACE_INPUT', 'cannot open'))).toBe(ExitCode.Failure);
    expect(exitCodeOf(new Error('a bug'))).toBe(ExitCode.Failure);
  });

  it("takes a CliExit's own status, and commander's: help 0, a parse error 2", () => {
    expect(exitCodeOf(usageError('--x: bad'))).toBe(ExitCode.Usage);
    expect(exitCodeOf(new CliExit('ERR_TRACEFS_EVENT', 'x'))).toBe(ExitCode.Usage);
    expect(exitCodeOf(CliExit.quiet(ExitCode.Rejected))).toBe(ExitCode.Rejected);
    expect(exitCodeOf(new CommanderError(1, 'commander.unknownOption', "error: unknown option '--x'"))).toBe(
      ExitCode.Usage,
    );
    expect(exitCodeOf(new CommanderError(0, 'commander.helpDisplayed', '(outputHelp)'))).toBe(ExitCode.Ok);
  });
});

describe('errorLine', () => {
  it('is CODE: message, a system call failure ERR_CLI_IO naming the call, the path and errno', async () => {
    expect(errorLine(usageError('--limit must be a non-negative integer'))).toBe(
      'ERR_CLI_USAGE: --limit must be a non-negative integer',
    );
    expect(errorLine(new TracefsError('ERR_TRACEFS_EVENT', "unknown event 'a:b'"))).toBe(
      "ERR_TRACEFS_EVENT: unknown event 'a:b'",
    );
    let enoent: unknown;
    try {
      openSync('/nonexistent/evtrace', 'r');
    } catch (error) {
      enoent = error;
    }
    expect(errorLine(enoent)).toBe('ERR_CLI_IO: cannot open /nonexistent/evtrace: ENOENT (no such file or directory)');
    expect(errorLine(new Error('a bug'))).toBe('ERR_CLI_INTERNAL: a bug');
    expect(errorLine(CliExit.quiet(ExitCode.Failure))).toBe('');
  });

  it('CliExit.around keeps the code and its status, with words before and after the message', async () => {
    const wrapped = CliExit.around(new TracefsError('ERR_TRACEFS_FILTER', 'bad filter'), '--filter: ', ' (see --help)');
    expect(errorLine(wrapped)).toBe('ERR_TRACEFS_FILTER: --filter: bad filter (see --help)');
    expect(exitCodeOf(wrapped)).toBe(ExitCode.Usage);
  });
});
