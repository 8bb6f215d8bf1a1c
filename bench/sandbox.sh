#!/usr/bin/env bash
# The cost of the read-only sandbox per command (see BENCHMARKS.md, "Sandbox"): `ls`
# through run_shell_command unasked (confined: Landlock + seccomp) and approved
# (unconfined), interleaved in one process, same spawn path.
#
# Usage: bench/sandbox.sh [RUNS]     (default 500; builds the release example first)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-500}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME="$work" TOOLBELT_HOME="$work/.toolbelt"
cargo build --release -p toolbelt-tools --example sandbox_bench >/dev/null 2>&1
"${CARGO_TARGET_DIR:-target}/release/examples/sandbox_bench" "$runs"
