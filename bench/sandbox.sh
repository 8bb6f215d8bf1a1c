#!/usr/bin/env bash
# The cost of the read-only sandbox per command (see BENCHMARKS.md, "Sandbox"): `ls`
# through run_shell_command unasked (confined: Landlock + seccomp) and approved
# (unconfined), interleaved in one process, same spawn path.
#
# Usage: bench/sandbox.sh [RUNS]     (default 500; builds the release example first)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-500}"
target="${CARGO_TARGET_DIR:-target}"
# Built with the real HOME: cargo finds its toolchain through it.
cargo build --release -p toolbelt-tools --example sandbox_bench >/dev/null
# The home the commands see. Not under /tmp: the read rules around the hidden paths (the
# store, credentials) list every directory on the way to them, and are kept only while
# none of those changed in the last two seconds; /tmp changes all the time on a busy
# machine, a person's home does not. For the same reason the home is left to settle.
work=$(mktemp -d -p "$target")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/.toolbelt"
sleep 3
HOME="$work" TOOLBELT_HOME="$work/.toolbelt" "$target/release/examples/sandbox_bench" "$runs"
