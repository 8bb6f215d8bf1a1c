#!/usr/bin/env bash
# Sub-agents: one parent turn that starts AGENTS sub-agents at once, each making 5
# `read_file` calls (one per model turn) against the loopback fake server
# (crates/toolbelt-model/examples/fake_subagents.rs), versus one sub-agent alone.
# Whole `toolbelt` runs; wall time (median of RUNS) and peak RSS of the toolbelt process
# (GNU time's maximum resident set size, the largest of the runs).
# Usage: bench/subagents.sh [RUNS] [DELAY_MS...]   (builds the release binaries first,
#   unless SKIP_BUILD=1)
#   DELAY_MS: how long the fake model takes per answer (default: 0 and 50).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-7}
shift || true
delays=("${@:-0}")
[ $# -eq 0 ] && delays=(0 50)
if [ -z "${SKIP_BUILD:-}" ]; then
  cargo build --release -q -p toolbelt
  cargo build --release -q -p toolbelt-model --features fake-server --example fake_subagents
fi
bin="$PWD/target/release/toolbelt"
server_bin="$PWD/target/release/examples/fake_subagents"
work=$(mktemp -d)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/project" "$work/home" "$work/tbhome"
cp README.md "$work/project/file.md"
cd "$work/project"
export HOME="$work/home" TOOLBELT_HOME="$work/tbhome" OPENAI_API_KEY=sk-local OPENAI_MODEL=bench
export TOOLBELT_SYSTEM_SETTINGS_PATH="$work/none.json"

# One measurement: prints "wall_ms rss_kib".
measure() {
  local agents=$1 delay=$2
  rm -f "$work/port" "$work/report"
  "$server_bin" "$agents" 5 "$work/project/file.md" --delay-ms "$delay" \
    --port-file "$work/port" --report "$work/report" >/dev/null &
  server_pid=$!
  while [ ! -s "$work/port" ]; do sleep 0.01; done
  export OPENAI_BASE_URL
  OPENAI_BASE_URL=$(cat "$work/port")
  local start end
  start=$(date +%s%N)
  /usr/bin/time -f "%M" -o "$work/rss" "$bin" -p "start the agents" >"$work/out" 2>"$work/err" \
    || { echo "toolbelt failed:" >&2; cat "$work/err" >&2; exit 1; }
  end=$(date +%s%N)
  grep -q "All sub-agents are done." "$work/out" || { echo "unexpected answer" >&2; cat "$work/out" "$work/err" >&2; exit 1; }
  python3 - "$work/report" "$agents" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1])); n = int(sys.argv[2])
want = 2 + n * 6
if r["violations"] or r["requests"] != want:
    sys.exit(f"server saw {r['requests']} requests (want {want}), violations: {r['violations']}")
PY
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=
  echo "$(( (end - start) / 1000000 )) $(cat "$work/rss")"
}

summary() { # agents delay -> "median_ms max_rss_kib"
  local agents=$1 delay=$2 walls=() rss=0
  for _ in $(seq "$runs"); do
    read -r w r < <(measure "$agents" "$delay")
    walls+=("$w"); [ "$r" -gt "$rss" ] && rss=$r
  done
  local median
  median=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
  echo "$median $rss"
}

for delay in "${delays[@]}"; do
  read -r one_ms one_rss < <(summary 1 "$delay")
  read -r eight_ms eight_rss < <(summary 8 "$delay")
  ratio=$(python3 -c "print(f'{$eight_ms/$one_ms:.2f}')")
  printf 'model delay %3s ms: 1 sub-agent %5s ms (peak RSS %5.1f MiB) | 8 sub-agents %5s ms (peak RSS %5.1f MiB) | ratio %sx\n' \
    "$delay" "$one_ms" "$(python3 -c "print($one_rss/1024)")" "$eight_ms" "$(python3 -c "print($eight_rss/1024)")" "$ratio"
done
