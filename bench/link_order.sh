#!/usr/bin/env bash
# Makes crates/toolbelt/link-order.txt anew: the functions the usual runs of the release
# binary touch, in the order first run, for the linker to lay out together (see
# crates/toolbelt/build.rs; issue 49).
#
#   bash bench/link_order.sh
#
# How: every page of the binary's code is made inaccessible before `main` by a preloaded
# library (bench/link_order/trap.c); the first instruction run in each page faults, the
# library notes the page and gives the page back. The runs: `--help`, `tools list`, the
# seven-call session replayed and over the fake OpenAI server on loopback, the same with
# a hook, an LSP server and an MCP server (`mcp serve` of the same binary, noted too)
# configured, and `mcp serve` answering read_file calls (crates/toolbelt-mcp's mcp_load).
# bench/link_order/order.py then names every function that overlaps a noted page. Run
# it again when the list has gone stale (after a Rust or dependency update, most names
# change): BENCHMARKS.md's A/B shows it as a larger peak RSS.
#
# Each pass links the binary with the list of the pass before, so the code it touches is
# already together and fewer unrun neighbours share its pages: PASSES=2 by default (from
# 13.7 MB of listed code to 12.3, peak RSS of the replayed session 19.5 -> 17.8 MB).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
for pass in $(seq "${PASSES:-2}"); do
echo "link_order: pass $pass" >&2
cargo build --release -q -p toolbelt --bin toolbelt
cargo build --release -q -p toolbelt-mcp --example mcp_load
cargo build --release -q -p toolbelt-model --features fake-server --example fake_openai
REL=$CARGO_TARGET_DIR/release
WORK=$CARGO_TARGET_DIR/link_order
rm -rf "$WORK" && mkdir -p "$WORK"
B=$WORK/toolbelt
cp "$REL/toolbelt" "$B"
cc -O2 -shared -fPIC -o "$WORK/trap.so" bench/link_order/trap.c -ldl
OUT=$WORK/pages
T=$WORK/run
mkdir -p "$T/home/.qwen"
run() { env -i PATH="$PATH" HOME="$T/home" TOOLBELT_HOME="$T/home/.toolbelt" \
    TRAP_OUT="$OUT" TRAP_EXE="$B" LD_PRELOAD="$WORK/trap.so" "$@"; }
fresh() { bash "$ROOT/bench/make_workspace.sh" "$T/ws"; cd "$T/ws"; }

fresh
run "$B" --help >/dev/null
run "$B" tools list >/dev/null
run "$B" --yolo --max-session-turns 30 --model-replay "$ROOT/bench/seven.jsonl" "Run the session." >/dev/null 2>&1

fresh
"$REL/examples/fake_openai" "$ROOT/bench/seven.jsonl" --workspace "$T/ws" --report "$WORK/report.json" >"$WORK/url" &
FAKE=$!
trap 'kill $FAKE 2>/dev/null || true' EXIT
while [ ! -s "$WORK/url" ]; do sleep 0.05; done
run OPENAI_BASE_URL="$(head -1 "$WORK/url")" OPENAI_API_KEY=sk-order OPENAI_MODEL=qwen3-coder-plus \
    "$B" --yolo --max-session-turns 30 "Run the session." >/dev/null 2>&1
kill $FAKE

fresh
cat >"$T/home/.qwen/settings.json" <<JSON
{"hooks": {"PreToolUse": [{"matcher": "NoSuchTool", "hooks": [{"type": "command", "command": "true"}]}]},
 "lsp": {"servers": {"zzz": {"command": "true", "extensionToLanguage": {".zzz": "zzz"}}}},
 "mcpServers": {"self": {"command": "$B", "args": ["mcp", "serve"],
   "env": {"LD_PRELOAD": "$WORK/trap.so", "TRAP_OUT": "$OUT", "TRAP_EXE": "$B"}}}}
JSON
run "$B" --yolo --max-session-turns 30 --model-replay "$ROOT/bench/seven.jsonl" "Run the session." >/dev/null 2>&1
rm "$T/home/.qwen/settings.json"

mkdir -p "$T/m/src"
python3 -c "import sys; sys.path.insert(0, '$ROOT/bench'); import ab; ab.records_file('$T/m/src/records.rs')"
cd "$T/m"
"$REL/examples/mcp_load" --label order -n 300 --in-flight 64 --tool read_file \
    --args "{\"absolute_path\": \"$T/m/src/records.rs\"}" --expect "checksum 5f3a9c" \
    -- env LD_PRELOAD="$WORK/trap.so" TRAP_OUT="$OUT" TRAP_EXE="$B" "$B" mcp serve >/dev/null
cd "$ROOT"

python3 bench/link_order/order.py "$OUT" "$B" crates/toolbelt/link-order.txt
trap - EXIT
done
cargo build --release -q -p toolbelt --bin toolbelt
