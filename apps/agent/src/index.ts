export { EXIT_STATUS_HELP, ExitCode } from './exit-codes.ts';
export { CliExit, type CliIO, createProgram, runCli } from './program.ts';
