import { CONNECTION_FLAGS } from '@evtrace/fleet';
import { FLEET_KEYS } from './fleet/keys.ts';

const FLEET_FLAGS = CONNECTION_FLAGS.map((f) => `  --${`${f.name} <${f.value}>`.padEnd(24)} ${f.description}`).join(
  '\n',
);
const FLEET_KEY_LINES = FLEET_KEYS.map(([k, what]) => `  ${k.padEnd(12)} ${what}`).join('\n');

/** The manual printed by `evtrace-view --help`, in the layout of `evtrace help COMMAND`. */
export const MANUAL = `NAME
  evtrace-view - browse a trace file or a live evtrace session in the terminal

SYNOPSIS
  evtrace-view [options] [TRACE | --session NAME | --agent SOCKET]
  evtrace-view --nats URL [fleet options]

DESCRIPTION
  Opens TRACE (a CTF directory, a trace-cmd trace.dat file or a directory of raw per-CPU pages; the kind is
  detected from the content) or attaches to a live session of the evtrace agent. With no argument it attaches to
  the local agent; when none answers it starts the embedded demo source and says so in the status bar.

  Views (Tab or number keys): Events (every event as evtrace cat prints it, in columns you choose; the selected
  one's fields typed; search, an ftrace filter checked as you type, go to a time, marks with their delta, density
  strips per CPU or per task, a histogram of the event rate), CPUs (per-CPU event rates and lost events; a live
  session's buffer fill and loss per CPU over time, from the kernel or the session's ring buffers; what a file
  tells of each CPU; rates per event type), Sessions (the agent's sessions: create, stop, snapshot, destroy), and
  Branches, Memory, Hardware where the trace has their events. Only the rows on screen are decoded: traces of
  millions of events open at once. The chosen columns are remembered in $XDG_CONFIG_HOME/evtrace/view.json.

  With --nats URL it opens the fleet view instead: the agents that publish to that NATS JetStream (evtrace agent
  --nats URL --host NAME) with their last status (last seen, version, sessions, events lost, records their spool
  dropped), their hardware errors and threshold crossings of the last 24 hours and as they come, and a tail of the
  events of their exported sessions, each line with its host and sequence number. Without a terminal it writes those
  events as JSON lines, as evtrace fleet tail --json does.

  Without a terminal on stdin or stdout it draws nothing and writes the events as JSON lines, as
  evtrace cat --json does: {"ts_ns": "<decimal>", "cpu": N|null, "event": "system:name", "pid": N|null,
  "comm": NAME|null, "flags": {...}|null, "fields": {...}} (@evtrace/trace-format/schemas/event.json). A live
  source is followed until --limit events or an interrupt. Colour is off when NO_COLOR is set or TERM=dumb.

KEYS
  q, Ctrl-C    quit                       ?            help
  Tab, 1-9     switch view                space        pause or resume a live view
  j/k, ↑/↓     move                       g/G          first/last event
  PgUp/PgDn    page                       Enter        details of the selected event
  /            search (text or regex)     n/N          next/previous match
  :            filter (ftrace syntax)     t TIME       go to a time (+S/-S from the selection)
  m            mark A, then B (B-A shown) M            clear the marks
  T            timeline: CPUs, tasks, off i            histogram of the event rate
  c            choose and order columns   < > ← →      scroll the fields
  Esc          back: close details, cancel or clear the filter
  Text boxes:  Ctrl-A/E start/end, Ctrl-U/K cut before/after, Ctrl-W cut a word, ←/→ move
  Sessions:    c create, x stop, s snapshot, d destroy

FLEET VIEW KEYS
${FLEET_KEY_LINES}

ARGUMENTS
  TRACE  CTF trace directory, trace.dat file, or raw-pages directory

OPTIONS
  --session <name>  attach to the agent's session NAME
  --agent <socket>  the agent's control socket (default: the agent's default socket)
  -n, --limit <n>   without a terminal: write only the first N events
  --demo-rate <n>   events per second of the embedded demo source (default 40000)
  --nats <url>      open the fleet view of the agents publishing to NATS at URL (several separated by commas)
  -V, --version     print the version and exit
  -h, --help        show this help

FLEET OPTIONS (with --nats)
${FLEET_FLAGS}

EXIT STATUS
  0  success
  1  the viewer failed (unreadable trace, agent or NATS unreachable); the message says what and where
  2  usage error: unknown option, missing or malformed argument
  Every error is one line on stderr, evtrace-view: CODE: message.

EXAMPLES
  evtrace-view trace.dat                    browse a recording
  evtrace-view                              the local agent's sessions, or the embedded demo
  evtrace-view --session flight             follow the agent's session "flight"
  evtrace-view trace.dat | head -3          JSON lines, no screen
  NO_COLOR=1 evtrace-view ./ctf-trace       no colour
  evtrace-view --nats nats://nats1:4222     the fleet: hosts, hardware errors, events
`;
