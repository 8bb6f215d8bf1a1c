#!/usr/bin/env bash
# Installs what the test suite needs beyond the Rust toolchain. Idempotent and quiet.
# The README's test command runs it before `cargo test`, and so does `.ci/run`. A piece
# that cannot be installed is a warning on a developer's machine (the tests that need it
# say so and skip) and an error when `CI` is set (those tests fail there rather than skip).
set -uo pipefail
cd "$(dirname "$0")/.."
missing() {
    echo "setup: $1" >&2
    if [ -n "${CI:-}" ]; then exit 1; fi
}
rustup component list --installed 2>/dev/null | grep -q rustfmt || rustup component add rustfmt clippy >/dev/null 2>&1 || true

# The public MCP reference server, for the interoperability test of the MCP client
# (crates/toolbelt/tests/mcp_cli.rs), installed into a project-local, git-ignored directory.
EVERYTHING_DIR=.cache/node
EVERYTHING_VERSION=2026.8.31
if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
    if [ ! -f "$EVERYTHING_DIR/node_modules/@modelcontextprotocol/server-everything/package.json" ]; then
        mkdir -p "$EVERYTHING_DIR"
        npm install --prefix "$EVERYTHING_DIR" --no-audit --no-fund --loglevel=error \
            "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >/dev/null 2>&1 \
            || missing "could not install @modelcontextprotocol/server-everything (the MCP interop test needs it)"
    fi
else
    missing "node/npm not found (the MCP interop test needs them)"
fi
# `script` (util-linux) gives the terminal tests a pty.
command -v script >/dev/null 2>&1 || missing "\`script\` (util-linux) not found (the terminal prompt test needs it)"
exit 0
