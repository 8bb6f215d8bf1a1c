#!/usr/bin/env bash
# Installs what the test suite needs beyond the Rust toolchain. Idempotent and quiet;
# every step is optional: tests that need a missing piece say so and skip.
set -uo pipefail
cd "$(dirname "$0")/.."
rustup component list --installed 2>/dev/null | grep -q rustfmt || rustup component add rustfmt clippy >/dev/null 2>&1 || true
