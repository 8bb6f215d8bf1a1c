#!/usr/bin/env bash
# tool_search (issue 12), release build. Results go to BENCHMARKS.md by hand.
#
# 1. tool_search's BM25 index over 2,000 generated MCP-style tools: the time to build it
#    and 1,000 varied queries (mean and p99 per query; target under 1 ms).
# 2. when-clauses: parse 10,000 varied clauses, then evaluate them against a context.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p toolbelt-agent --example tool_search_bench
cargo build --release -q -p toolbelt-config --example when_bench
echo "== tool_search: ${TOOLS:-2000} tools, ${QUERIES:-1000} queries"
target/release/examples/tool_search_bench "${TOOLS:-2000}" "${QUERIES:-1000}"
echo "== when-clauses: ${CLAUSES:-10000}"
target/release/examples/when_bench "${CLAUSES:-10000}"
