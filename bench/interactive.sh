#!/usr/bin/env bash
# The interactive terminal (issue 14): first frame, keystroke echo, streaming at 5,000
# tokens/s while typing, peak RSS of a 200-call session, idle CPU. Drives the release
# binary in a pseudo-terminal (crates/toolbelt/examples/interactive_bench.rs).
# Usage: bash bench/interactive.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p toolbelt
cargo build --release -q -p toolbelt --example interactive_bench
target/release/examples/interactive_bench
