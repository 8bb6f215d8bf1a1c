#!/usr/bin/env bash
# Installs what the test suite needs beyond the Rust toolchain. Idempotent and quiet;
# every step is optional: tests that need a missing piece say so and skip.
set -uo pipefail
cd "$(dirname "$0")/.."
rustup component list --installed 2>/dev/null | grep -q rustfmt || rustup component add rustfmt clippy >/dev/null 2>&1 || true

# The public MCP reference server, for the interoperability test of the MCP client
# (crates/toolbelt/tests/mcp_cli.rs). Installed into a project-local, git-ignored
# directory; the test skips with a message when Node or the package is missing.
EVERYTHING_DIR=.cache/node
EVERYTHING_VERSION=2026.8.31
if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
    if [ ! -f "$EVERYTHING_DIR/node_modules/@modelcontextprotocol/server-everything/package.json" ]; then
        mkdir -p "$EVERYTHING_DIR"
        npm install --prefix "$EVERYTHING_DIR" --no-audit --no-fund --loglevel=error \
            "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >/dev/null 2>&1 \
            || echo "setup: could not install @modelcontextprotocol/server-everything (the MCP interop test will skip)" >&2
    fi
else
    echo "setup: node/npm not found; the MCP interop test will skip" >&2
fi
