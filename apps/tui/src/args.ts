import { parseArgs } from 'node:util';
import { CONNECTION_FLAGS, type ConnectionFlagValues } from '@evtrace/fleet';
import { ViewerError } from './errors.ts';

/** What the command line asks for. */
export interface ViewerArgs {
  readonly trace?: string;
  readonly session?: string;
  readonly agent?: string;
  readonly limit?: number;
  readonly demoRate?: number;
  /** `--nats URL` and the connection flags: the fleet view. */
  readonly fleet?: ConnectionFlagValues;
  readonly help: boolean;
  readonly version: boolean;
}

/**
 * Parses evtrace-view's arguments.
 * @throws ViewerError `ERR_VIEW_USAGE` naming the wrong argument.
 */
export function parseViewerArgs(argv: readonly string[]): ViewerArgs {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    throw new ViewerError('ERR_VIEW_USAGE', (error as Error).message);
  }
  const { values, positionals } = parsed;
  if (positionals.length > 1) {
    throw new ViewerError('ERR_VIEW_USAGE', `one TRACE at most, got ${positionals.length}: ${positionals.join(' ')}`);
  }
  const trace = positionals[0];
  if (trace !== undefined && (values.session !== undefined || values.agent !== undefined)) {
    throw new ViewerError('ERR_VIEW_USAGE', 'TRACE and --session/--agent exclude each other');
  }
  const count = (name: string, v: string | undefined) => {
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v))
      throw new ViewerError('ERR_VIEW_USAGE', `--${name} must be a non-negative integer, not '${v}'`);
    return Number(v);
  };
  const fleet = fleetArgs(values as Record<string, unknown>, trace !== undefined);
  const limit = count('limit', values.limit);
  const demoRate = count('demo-rate', values['demo-rate']);
  return {
    ...(trace !== undefined ? { trace } : {}),
    ...(values.session !== undefined ? { session: values.session } : {}),
    ...(values.agent !== undefined ? { agent: values.agent } : {}),
    ...(limit !== undefined ? { limit } : {}),
    ...(demoRate !== undefined ? { demoRate } : {}),
    ...(fleet !== undefined ? { fleet } : {}),
    help: values.help === true,
    version: values.version === true,
  };
}

/** The fleet view's flags, or undefined without `--nats`. */
function fleetArgs(values: Record<string, unknown>, trace: boolean): ConnectionFlagValues | undefined {
  const given = CONNECTION_FLAGS.filter((f) => values[f.name] !== undefined);
  if (values.nats === undefined) {
    if (given.length > 0) throw new ViewerError('ERR_VIEW_USAGE', `--${given[0]!.name} goes with --nats URL`);
    return undefined;
  }
  if (trace || values.session !== undefined || values.agent !== undefined)
    throw new ViewerError('ERR_VIEW_USAGE', '--nats and TRACE/--session/--agent exclude each other');
  const out: ConnectionFlagValues = { nats: values.nats as string };
  for (const f of given) out[f.key] = values[f.name] as string;
  return out;
}

const NATS_OPTIONS = Object.fromEntries([
  ['nats', { type: 'string' as const }],
  ...CONNECTION_FLAGS.map((f) => [f.name, { type: 'string' as const }]),
]) as Record<string, { type: 'string' }>;

function parse(argv: readonly string[]) {
  return parseArgs({
    args: argv as string[],
    allowPositionals: true,
    strict: true,
    options: {
      session: { type: 'string' },
      agent: { type: 'string' },
      limit: { type: 'string', short: 'n' },
      'demo-rate': { type: 'string' },
      ...NATS_OPTIONS,
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'V' },
    },
  });
}
