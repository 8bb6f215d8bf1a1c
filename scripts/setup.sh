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

# Real MCP clients for the interoperability tests of `toolbelt mcp serve`
# (crates/toolbelt/tests/mcp_serve_interop.rs). Each is installed once and again only when
# its pin changes (a stamp file records what was installed).
#
# The official Python SDK, pinned with what it pulls in, in a virtualenv.
PY_DIR=.cache/python
PY_REQUIREMENTS=crates/toolbelt/tests/fixtures/mcp_clients/requirements.txt
if ! cmp -s "$PY_REQUIREMENTS" "$PY_DIR/installed-requirements.txt" 2>/dev/null; then
    if command -v python3 >/dev/null 2>&1; then
        rm -rf "$PY_DIR"
        if python3 -m venv "$PY_DIR" >/dev/null 2>&1 \
            && "$PY_DIR/bin/pip" install --quiet --disable-pip-version-check --no-input \
                -r "$PY_REQUIREMENTS" >/dev/null 2>&1; then
            cp "$PY_REQUIREMENTS" "$PY_DIR/installed-requirements.txt"
        else
            missing "could not install the MCP Python SDK into $PY_DIR (python3 -m venv, pip install -r $PY_REQUIREMENTS)"
        fi
    else
        missing "python3 not found (the MCP Python client test needs it)"
    fi
fi
# The MCP Inspector CLI, which needs Node 22 (>= 22.19 for 2.x). The npm package `node`
# ships a Node binary as a platform package from the npm registry, so Node 22 comes from
# there too, whatever node is on PATH.
NODE22_DIR=.cache/node22
NODE22_PACKAGES="node@22.23.3 @modelcontextprotocol/inspector@2.12.0"
if [ "$(cat "$NODE22_DIR/installed" 2>/dev/null)" != "$NODE22_PACKAGES" ]; then
    if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
        rm -rf "$NODE22_DIR"
        mkdir -p "$NODE22_DIR"
        # shellcheck disable=SC2086 # two package specs
        if npm install --prefix "$NODE22_DIR" --no-audit --no-fund --loglevel=error \
            $NODE22_PACKAGES >/dev/null 2>&1 \
            && "$NODE22_DIR/node_modules/.bin/node" --version >/dev/null 2>&1; then
            echo "$NODE22_PACKAGES" >"$NODE22_DIR/installed"
        else
            missing "could not install $NODE22_PACKAGES into $NODE22_DIR (the MCP Inspector test needs them)"
        fi
    else
        missing "node/npm not found (the MCP Inspector test needs them)"
    fi
fi
# `script` (util-linux) gives the terminal tests a pty.
command -v script >/dev/null 2>&1 || missing "\`script\` (util-linux) not found (the terminal prompt test needs it)"
exit 0
