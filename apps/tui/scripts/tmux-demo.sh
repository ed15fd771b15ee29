#!/usr/bin/env bash
# evtrace-view in tmux, for a person to watch: the left pane browses a recorded trace, the right pane follows the
# live demo source. Needs tmux (Debian: apt install tmux), Node >= 22.18 as `node` (or $NODE), and a build
# (`npm run demo` or `pnpm turbo run build --filter @evtrace/tui...`).
#
#   apps/tui/scripts/tmux-demo.sh [TRACE]           attach (q quits a viewer; Ctrl-b d detaches)
#   apps/tui/scripts/tmux-demo.sh --check [TRACE]   run detached, type keys, print both panes, fail if a view is missing
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
node="${NODE:-node}"
view="$here/dist/cli.js"
check=false
if [ "${1:-}" = "--check" ]; then check=true; shift; fi
[ -f "$view" ] || { echo "tmux-demo: $view is missing: build first (npm run demo)" >&2; exit 1; }
command -v tmux >/dev/null || { echo "tmux-demo: tmux is not installed (apt install tmux)" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/evtrace-tmux-XXXXXX")"
session="evtrace-view-$$"
trap 'tmux kill-session -t "$session" 2>/dev/null || true; rm -rf "$work"' EXIT
trace="${1:-}"
if [ -z "$trace" ]; then
  # One second of the demo source, through the same pipeline as a recording (raw pages, then trace.dat).
  trace="$work/demo.dat"
  (cd "$here" && "$node" --input-type=module -e "
    import { recordDemo, writeTraceDatFromRawDir } from '@evtrace/tracefs';
    await recordDemo({ events: ['kmem:*', 'sched:*'], dir: '$work/raw', durationMs: 1000 });
    writeTraceDatFromRawDir('$work/raw', '$trace');")
fi

tmux new-session -d -s "$session" -x 200 -y 40 "$node $view $trace"
# The right pane: the local agent's sessions when one runs, else the live demo (--check always shows the demo).
agent_env=""
if $check; then agent_env="EVTRACE_AGENT_SOCKET=$work/no-agent.sock"; fi
tmux split-window -h -t "$session" "$agent_env $node $view"
if ! $check; then
  tmux attach -t "$session"
  exit 0
fi

pane() { tmux capture-pane -p -t "$session.$1"; }
wait_for() { # pane text
  for _ in $(seq 1 100); do pane "$1" | grep -qF -- "$2" && return 0; sleep 0.2; done
  echo "tmux-demo: pane $1 never showed '$2'; it shows:" >&2; pane "$1" >&2; return 1
}
wait_for 0 '[1 Events]'
wait_for 1 'DEMO'
tmux send-keys -t "$session.0" j j j Enter
wait_for 0 'event 4 of'
tmux send-keys -t "$session.1" 2
wait_for 1 '[2 CPUs]'
echo "--- recorded trace ($trace)"; pane 0
echo "--- live demo"; pane 1
tmux send-keys -t "$session.0" q
tmux send-keys -t "$session.1" q
