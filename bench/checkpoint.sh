#!/usr/bin/env bash
# The cost of a file checkpoint (see BENCHMARKS.md, "Checkpoints"): a generated
# 15,000-file workspace, one checkpoint after one file changed and one after nothing
# changed (inotify, and a walk), the store's size after 100 edits of a 1 MiB file, and
# Qwen Code's shadow git repository (`git add -A && git commit`) on the same trees.
#
# Usage: bench/checkpoint.sh [FILES] [RUNS]     (default 15000 30; builds the release example)
set -euo pipefail
cd "$(dirname "$0")/.."
# Built with the person's HOME (cargo and rustup live there), its errors shown; only the
# run gets a home of its own.
cargo build --release -q -p toolbelt-history --example checkpoint_bench
bench_bin="${CARGO_TARGET_DIR:-$PWD/target}/release/examples/checkpoint_bench"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME="$work" TOOLBELT_HOME="$work/.toolbelt" TMPDIR="$work"
"$bench_bin" "${1:-15000}" "${2:-30}"
