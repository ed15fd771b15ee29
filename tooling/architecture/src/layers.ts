/**
 * The layers of the workspace, as LAYOUT.md draws them, and which layer may import which. A package not listed here
 * fails the check until it is given its place.
 */

/** Where a package sits; imports point down: app → domain → shared → core. */
export type Layer = 'core' | 'shared' | 'domain' | 'app' | 'tooling';

export const LAYERS: Readonly<Record<string, Layer>> = {
  '@evtrace/errors': 'core',
  '@evtrace/ringbuf': 'core',
  '@evtrace/trace-format': 'core',
  '@evtrace/filters': 'core',
  '@evtrace/tracefs': 'shared',
  '@evtrace/agent-protocol': 'shared',
  '@evtrace/hw-bts': 'domain',
  '@evtrace/hw-mce': 'domain',
  '@evtrace/kmemtrace': 'domain',
  '@evtrace/persistent-events': 'domain',
  '@evtrace/agent': 'app',
  '@evtrace/tui': 'app',
  '@evtrace/architecture': 'tooling',
  '@evtrace/bench': 'tooling',
  '@evtrace/build': 'tooling',
  '@evtrace/release': 'tooling',
  '@evtrace/tsconfig': 'tooling',
};

/**
 * Why a package of layer `from` may not import one of layer `to` (another package), or undefined when it may. Core
 * packages import each other (without a loop, which the package graph checks); tooling (benchmark helpers, release
 * tests) is outside the layers.
 */
export function forbidden(from: Layer, to: Layer): string | undefined {
  if (from === 'tooling' || to === 'tooling') return undefined;
  if (to === 'app') return from === 'app' ? 'apps never import each other' : 'packages never import apps';
  switch (from) {
    case 'app':
      return undefined;
    case 'domain':
      return to === 'domain' ? 'domain packages never import each other' : undefined;
    default:
      return to === 'core' ? undefined : `${from} packages import only core packages`;
  }
}
