#!/usr/bin/env bash
# The SDK benchmark (issue 16): an application's `query()` through Qwen Code's TypeScript
# SDK (@qwen-code/sdk, .cache/sdk from scripts/setup.sh), one prompt, one tool call
# (read_file), the answer; wall time from query() to the `result` message, measured in
# the application (crates/toolbelt/tests/fixtures/sdk_client/client.mjs, scenario
# `bench`). Agents: toolbelt (release build) as `pathToQwenExecutable`, and the Qwen Code
# CLI bundled with the SDK (no pathToQwenExecutable). Both talk to the loopback fake
# OpenAI server (fake_openai example, --lenient for Qwen Code's side requests), started
# fresh for every run, outside the measurement.
#
# Usage: bash bench/sdk_query.sh [RUNS] [QWEN_RUNS]     (defaults 20 and 5)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-20}
QWEN_RUNS=${2:-5}
ROOT=$PWD
SDK=$ROOT/.cache/sdk
CLIENT=$ROOT/crates/toolbelt/tests/fixtures/sdk_client/client.mjs
[ -f "$SDK/node_modules/@qwen-code/sdk/package.json" ] || { echo "run scripts/setup.sh first" >&2; exit 1; }
cargo build --release -q -p toolbelt
cargo build --release -q -p toolbelt-model --features fake-server --example fake_openai
TOOLBELT=$ROOT/target/release/toolbelt
FAKE=$ROOT/target/release/examples/fake_openai

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/ws" "$WORK/home/.qwen" "$WORK/tbhome"
cp bench/qwen-settings.json "$WORK/home/.qwen/settings.json"
echo "the answer is 42" >"$WORK/ws/notes.txt"
cat >"$WORK/script.jsonl" <<JSONL
{"tool_calls": [{"id": "call_1", "name": "read_file", "arguments": {"file_path": "$WORK/ws/notes.txt"}}]}
{"text": "The notes say 42."}
JSONL

# One measured query; prints its milliseconds.
one() {
    local executable=$1
    "$FAKE" "$WORK/script.jsonl" --lenient --port-file "$WORK/url" >/dev/null &
    local fake=$!
    while [ ! -s "$WORK/url" ]; do sleep 0.01; done
    local url
    url=$(cat "$WORK/url")
    rm -f "$WORK/url"
    local config
    config=$(python3 -c 'import json,sys; print(json.dumps({"scenario": "bench", "sdkDir": sys.argv[1],
        "executable": sys.argv[2] or None, "cwd": sys.argv[3] + "/ws", "model": "fake-model",
        "env": {"HOME": sys.argv[3] + "/home", "TOOLBELT_HOME": sys.argv[3] + "/tbhome",
                "OPENAI_BASE_URL": sys.argv[4], "OPENAI_API_KEY": "bench",
                "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"},
        "args": {"prompt": "what do the notes say?"}}))' "$SDK" "$executable" "$WORK" "$url")
    local out
    out=$(cd "$WORK/ws" && node "$CLIENT" "$config")
    kill "$fake" 2>/dev/null
    wait "$fake" 2>/dev/null || true
    python3 -c 'import json,sys; d=json.loads(sys.argv[1]); r=[m for m in d["messages"] if m["type"]=="result"];
assert r and r[0]["subtype"]=="success", d; print("%.1f" % d["notes"]["ms"])' "$out"
}

median() { python3 -c 'import statistics,sys; print("%.1f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

one "$TOOLBELT" >/dev/null # warm the page cache
tb=()
for _ in $(seq "$RUNS"); do tb+=("$(one "$TOOLBELT")"); done
qw=()
for _ in $(seq "$QWEN_RUNS"); do qw+=("$(one "")"); done
tbm=$(median "${tb[@]}")
qwm=$(median "${qw[@]}")
echo "toolbelt (release) via the SDK:     median ${tbm} ms over $RUNS runs (${tb[*]})"
echo "bundled Qwen Code CLI via the SDK:  median ${qwm} ms over $QWEN_RUNS runs (${qw[*]})"
python3 -c 'import sys; t,q=float(sys.argv[1]),float(sys.argv[2]); print("toolbelt / Qwen Code: %.3f (1/%.0f); target under 1/20: %s" % (t/q, q/t, "met" if t*20<q else "NOT met"))' "$tbm" "$qwm"
