#!/usr/bin/env bash
# Sequential `tools/call` latency of `toolbelt mcp serve` over Streamable HTTP (issue 28),
# beside its stdio latency and the reference server-everything over HTTP. One keep-alive
# connection, each call waiting for its answer. Results go to BENCHMARKS.md by hand.
#
#   bash bench/mcp_http.sh            # N=1000 calls per server, ROUNDS=3
#   N=3000 ROUNDS=5 bash bench/mcp_http.sh
#   PROFILE=debug N=300 bash bench/mcp_http.sh   # the debug build
#
# Clients: crates/toolbelt-mcp/examples/mcp_http_latency.rs (HTTP POST, JSON or SSE
# answers) and examples/mcp_load.rs (stdio lines). toolbelt reads a small file with
# `read_file`; server-everything (installed by scripts/setup.sh into .cache/node) echoes.
# Raw JSON lines go to bench/out/mcp_http.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
N=${N:-1000}
ROUNDS=${ROUNDS:-3}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
OUT=$ROOT/bench/out
mkdir -p "$OUT"
# PROFILE=debug measures the debug build (no release build at hand); say so with the numbers.
PROFILE=${PROFILE:-release}
flag=--release
[ "$PROFILE" = release ] || flag=
cargo build $flag -q -p toolbelt -p toolbelt-mcp --bin toolbelt --example mcp_load \
    --example mcp_http_latency
TB=$TARGET/$PROFILE/toolbelt
LAT=$TARGET/$PROFILE/examples/mcp_http_latency
LOAD=$TARGET/$PROFILE/examples/mcp_load
EVERYTHING=$ROOT/.cache/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js

work=$(mktemp -d)
# Servers are started inside $(...) subshells too, so their PIDs go to a file.
cleanup() {
    while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$work/pids"
    rm -rf "$work"
}
: >"$work/pids"
trap cleanup EXIT
mkdir -p "$work/ws" "$work/home"
FILE=$work/ws/notes.txt
printf 'a short file\nend of notes: 7c1e\n' >"$FILE"
MARKER="end of notes: 7c1e"
export HOME=$work/home TOOLBELT_HOME=$work/home/.toolbelt TOOLBELT_SYSTEM_SETTINGS_PATH=$work/none.json
cd "$work/ws"

# Starts `toolbelt mcp serve --http 127.0.0.1:0 ARGS...`; prints its endpoint URL.
start_toolbelt() {
    local log=$work/serve-$RANDOM.log
    "$TB" mcp serve --http 127.0.0.1:0 "$@" </dev/null >/dev/null 2>"$log" &
    echo $! >>"$work/pids"
    for _ in $(seq 200); do
        url=$(sed -n 's/.*Streamable HTTP.* at \(http[^ ]*\).*/\1/p' "$log")
        [ -n "$url" ] && { echo "$url"; return; }
        sleep 0.05
    done
    echo "toolbelt did not start: $(cat "$log")" >&2
    exit 1
}

results=$OUT/mcp_http.jsonl
: >"$results"
read_args="{\"absolute_path\":\"$FILE\"}"
for round in $(seq "$ROUNDS"); do
    url=$(start_toolbelt)
    "$LAT" --label "toolbelt http (SSE)" --url "$url" -n "$N" --tool read_file \
        --args "$read_args" --expect "$MARKER" >>"$results"
    url=$(start_toolbelt --stateless)
    "$LAT" --label "toolbelt http --stateless (JSON)" --url "$url" -n "$N" --tool read_file \
        --args "$read_args" --expect "$MARKER" >>"$results"
    "$LOAD" --label "toolbelt stdio" -n "$N" --in-flight 1 --tool read_file --args "$read_args" \
        --expect "$MARKER" -- "$TB" mcp serve | grep '"sequential"' >>"$results"
    if [ -f "$EVERYTHING" ]; then
        port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
        PORT=$port node "$EVERYTHING" streamableHttp >/dev/null 2>&1 &
        echo $! >>"$work/pids"
        for _ in $(seq 200); do
            curl -s -o /dev/null "http://127.0.0.1:$port/mcp" && break
            sleep 0.05
        done
        "$LAT" --label "server-everything http" --url "http://127.0.0.1:$port/mcp" -n "$N" \
            --tool echo --args '{"message":"end of notes: 7c1e"}' --expect "$MARKER" >>"$results"
    fi
done

echo
echo "$PROFILE build, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $N sequential calls per server and round, $ROUNDS rounds"
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
labels = list(dict.fromkeys(r["label"] for r in rows))
print("| server | p50 | p99 | calls/s |")
print("|---|---:|---:|---:|")
for label in labels:
    mine = [r for r in rows if r["label"] == label]
    med = lambda k: statistics.median(r[k] for r in mine)
    print(f"| {label} | {med('p50_us') / 1000:.2f} ms | {med('p99_us') / 1000:.2f} ms "
          f"| {med('calls_per_sec'):,.0f} |")
PY
