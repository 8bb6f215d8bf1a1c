#!/usr/bin/env bash
# The cost of making a worktree (see BENCHMARKS.md, "Worktrees"): toolbelt's
# `worktree::create` + `populate` against `git worktree add -b` alone, on a generated
# 15,000-file repository, in the same run.
#
# Usage: bench/worktree.sh [FILES] [ROUNDS]     (default 15000 20; builds the release example)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release -p toolbelt-tools --example worktree_bench >/dev/null 2>&1
# git reads no configuration of the machine's or the person's.
export HOME="$work" TMPDIR="$work" GIT_CONFIG_NOSYSTEM=1
"${CARGO_TARGET_DIR:-target}/release/examples/worktree_bench" "${1:-15000}" "${2:-20}"
