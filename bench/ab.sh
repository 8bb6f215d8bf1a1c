#!/usr/bin/env bash
# A/B of two commits in one run (issue 49): the checkout's HEAD (A) against BASE (B).
#
#   bash bench/ab.sh 4520486              # a few minutes once both are built
#   RUNS=40 MCP_ROUNDS=5 bash bench/ab.sh 4520486
#   A=<commit> bash bench/ab.sh BASE      # another commit than HEAD as A
#
# Each commit is checked out with `git worktree add --detach` under .cache/ab/<sha>/src
# (git-ignored) and built in release mode into its own .cache/ab/<sha>/target; a commit
# already built is reused (cargo rebuilds nothing). The measuring tools come from A's
# checkout, the same for both: the fake OpenAI server (toolbelt-model's fake_openai),
# the MCP load client (toolbelt-mcp's mcp_load) and the C echo server bench/echo_server.c
# (built with cc). The reference MCP server (@modelcontextprotocol/server-filesystem,
# the version of bench/mcp_serve.sh) is used when installed in .cache/node-bench/ (run
# bench/mcp_serve.sh once, or set REF to its dist/index.js).
#
# bench/ab.py then runs A, B, A, B... and prints one table: A, B and A/B (below 1: A is
# faster or smaller). See ab.py for what each row measures.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BASE=${1:?usage: bench/ab.sh BASE (a commit)}
A_SHA=$(git rev-parse "${A:-HEAD}^{commit}")
B_SHA=$(git rev-parse "$BASE^{commit}")
CACHE=$ROOT/.cache/ab

# Builds commit $1 (packages and examples in the rest) in its own checkout and target.
# A new target starts from a copy of the dependencies another commit built here (cargo
# reuses what matches, so only the workspace's crates and changed dependencies build).
build() {
    local sha=$1
    shift
    local dir=$CACHE/$sha
    if [ ! -e "$dir/src/.git" ]; then
        mkdir -p "$dir"
        git worktree add -q --detach "$dir/src" "$sha"
    fi
    if [ ! -d "$dir/target/release" ]; then
        local seed
        seed=$(ls -td "$CACHE"/*/target/release/.fingerprint 2>/dev/null | head -1 || true)
        if [ -n "$seed" ]; then
            mkdir -p "$dir/target/release"
            cp -a --reflink=auto "${seed%/.fingerprint}"/{deps,build,.fingerprint} "$dir/target/release/"
        fi
    fi
    (cd "$dir/src" && CARGO_TARGET_DIR=$dir/target cargo build --release -q "$@")
}

echo "ab: building A ${A_SHA:0:10} and B ${B_SHA:0:10} into $CACHE/<sha>/target" >&2
build "$A_SHA" -p toolbelt --bin toolbelt
build "$A_SHA" -p toolbelt-mcp --example mcp_load
build "$A_SHA" -p toolbelt-model --features fake-server --example fake_openai
build "$B_SHA" -p toolbelt --bin toolbelt
TOOLS=$CACHE/$A_SHA/target/release
cc -O2 -o "$CACHE/echo_server" bench/echo_server.c

REF=${REF:-$ROOT/.cache/node-bench/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js}
[ -f "$REF" ] || { echo "ab: no server-filesystem at $REF: its ratio is left out" >&2; REF=; }

python3 bench/ab.py \
    --a "${A_SHA:0:7}=$CACHE/$A_SHA/target/release/toolbelt" \
    --b "${B_SHA:0:7}=$CACHE/$B_SHA/target/release/toolbelt" \
    --fake "$TOOLS/examples/fake_openai" --load "$TOOLS/examples/mcp_load" \
    --echo "$CACHE/echo_server" --ref "$REF" \
    --runs "${RUNS:-20}" --list-runs "${LIST_RUNS:-60}" \
    --mcp-calls "${MCP_CALLS:-2000}" --mcp-rounds "${MCP_ROUNDS:-3}"
