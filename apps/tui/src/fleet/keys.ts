/** The fleet view's keys, for its `?` help and `evtrace-view --help`. */
export const FLEET_KEYS: readonly (readonly [string, string])[] = [
  ['q, Ctrl-C', 'quit'],
  ['?', 'this help (any key closes it)'],
  ['space', 'pause or resume the event tail'],
  ['Tab, h', 'next host: show only its errors and events (then all again)'],
  ['H', 'all hosts'],
];
