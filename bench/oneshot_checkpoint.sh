#!/usr/bin/env bash
# What a one-shot `toolbelt tools call` pays for its checkpoints (see BENCHMARKS.md,
# "Checkpoints in one-shot calls"): a generated 15,000-file workspace, a fresh history on
# the project's store for each call (seeded from the last checkpoint, no inotify), its
# checkpoint before the call and after one file changed, and `git status --porcelain`
# on the same tree (a real repository) in the same run.
#
# Usage: bench/oneshot_checkpoint.sh [FILES] [RUNS]     (default 15000 30; builds the release example)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p toolbelt-history --example checkpoint_bench >/dev/null 2>&1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# After the build: cargo finds its toolchain through the real HOME.
export HOME="$work" TOOLBELT_HOME="$work/.toolbelt" TMPDIR="$work"
"${CARGO_TARGET_DIR:-target}/release/examples/checkpoint_bench" "${1:-15000}" "${2:-30}" oneshot
