#!/usr/bin/env bash
# MCP client benchmarks (issue 6), release build. Results go to BENCHMARKS.md by hand.
#
# 1. Start-up with five stdio servers of which one never answers `initialize`
#    (startupTimeout 2 s): `toolbelt mcp list` must take about the timeout, not the sum.
#    Reference: one healthy server alone; connecting one after another would cost the
#    sum (4 start-ups + 2 s). Also the three-server check of the issue (healthy,
#    missing command, never answers with a 2 s timeout).
# 2. Calls per second through the client to a local stdio server (sequential `echo`
#    calls), toolbelt's client (examples/mcp_bench.rs) against the official TypeScript
#    SDK client (bench/mcp_ref_client.mjs), both against the same servers: our rmcp test
#    server and @modelcontextprotocol/server-everything.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p toolbelt -p toolbelt-mcp --bins --examples
TB=$PWD/target/release/toolbelt
TS=$PWD/target/release/examples/mcp_testserver
BENCH=$PWD/target/release/examples/mcp_bench
EVERYTHING=$PWD/.cache/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js
N=${N:-2000}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/project/.qwen" "$work/home"
cat > "$work/project/.qwen/settings.json" <<JSON
{"mcpServers": {
  "s1": {"command": "$TS"}, "s2": {"command": "$TS"}, "s3": {"command": "$TS"},
  "s4": {"command": "$TS"},
  "hangs": {"command": "$TS", "args": ["silent"], "startupTimeout": 2000}
}}
JSON
three=$(printf '{"mcpServers": {"healthy": {"command": "%s"}, "missing": {"command": "/nonexistent/mcp-server"}, "hangs": {"command": "%s", "args": ["silent"], "startupTimeout": 2000}}}' "$TS" "$TS")
export HOME=$work/home TOOLBELT_HOME=$work/home/.toolbelt TOOLBELT_SYSTEM_SETTINGS_PATH=$work/none.json
cd "$work/project"

echo "== start-up: five servers, one hangs (timeout 2 s); one healthy server alone; three servers (healthy, missing, hangs)"
hyperfine -N --warmup 1 --runs 5 --export-markdown "$work/startup.md" \
    "$TB mcp list" \
    "$TB --allowed-mcp-server-names s1 mcp list" \
    "$TB --allowed-mcp-server-names healthy,missing,hangs --mcp-config '$three' mcp list" >/dev/null
cat "$work/startup.md"

echo "== calls per second, $N sequential echo calls"
echo "-- toolbelt client -> rmcp test server"
"$BENCH" "$N" echo '{"message":"hi"}' -- "$TS"
echo "-- TypeScript SDK client -> rmcp test server"
node "$OLDPWD/bench/mcp_ref_client.mjs" "$N" echo '{"message":"hi"}' -- "$TS"
if [ -f "$EVERYTHING" ]; then
    echo "-- toolbelt client -> server-everything (node)"
    "$BENCH" "$N" echo '{"message":"hi"}' -- node "$EVERYTHING"
    echo "-- TypeScript SDK client -> server-everything (node)"
    node "$OLDPWD/bench/mcp_ref_client.mjs" "$N" echo '{"message":"hi"}' -- node "$EVERYTHING"
fi
