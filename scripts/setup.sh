#!/usr/bin/env bash
# Installs what the test suite needs beyond the Rust toolchain, into .cache/ (git-ignored):
# about 1 GB of downloads from scratch (npm and PyPI), a minute or two. Idempotent: what
# is installed at its pinned version is not fetched again. It says what it installs and
# how large each piece is, and prints every command it runs as root (apt-get, only when
# it runs as root). `bash scripts/setup.sh --list` says what it would do and changes
# nothing. The README's test command runs it before `cargo test`, and so does `.ci/run`.
# A piece that cannot be installed is a warning on a developer's machine (the tests that
# need it say so and skip) and an error when `CI` is set (those tests fail there rather
# than skip).
set -uo pipefail
cd "$(dirname "$0")/.."
LIST=
case "${1:-}" in
--list) LIST=1 ;;
"") ;;
*)
    echo "usage: bash scripts/setup.sh [--list]" >&2
    exit 2
    ;;
esac
say() { echo "setup: $*"; }
missing() {
    echo "setup: $1" >&2
    if [ -n "${CI:-}" ] && [ -z "$LIST" ]; then exit 1; fi
}
# Whether to install `what` into `dir` now: with --list, says what would be and answers no.
installing() {
    local dir=$1 what=$2
    if [ -n "$LIST" ]; then
        say "would install $what into $dir"
        return 1
    fi
    say "installing $what into $dir ..."
}
# The size of what was installed.
installed() {
    say "installed $1 ($(du -sh "$1" 2>/dev/null | cut -f1))"
}
if [ -n "$LIST" ]; then
    say "installs into .cache/ about 1 GB from scratch (npm, PyPI); already installed:"
    du -sh .cache/* 2>/dev/null | sed 's/^/setup:   /'
fi
if [ -z "$LIST" ]; then
    rustup component list --installed 2>/dev/null | grep -q rustfmt || rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi

# The public MCP reference server, for the interoperability test of the MCP client
# (crates/toolbelt/tests/mcp_cli/), installed into a project-local, git-ignored directory.
# The MCP TypeScript SDK and express come with it; the OAuth tests build their protected
# server from those (crates/toolbelt/tests/fixtures/mcp_oauth_server.mjs).
EVERYTHING_DIR=.cache/node
EVERYTHING_VERSION=2026.8.31
if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
    if [ ! -f "$EVERYTHING_DIR/node_modules/@modelcontextprotocol/server-everything/package.json" ] \
        && installing "$EVERYTHING_DIR" "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION (npm)"; then
        mkdir -p "$EVERYTHING_DIR"
        if npm install --prefix "$EVERYTHING_DIR" --no-audit --no-fund --loglevel=error \
            "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >/dev/null 2>&1; then
            installed "$EVERYTHING_DIR"
        else
            missing "could not install @modelcontextprotocol/server-everything (the MCP interop test needs it)"
        fi
    fi
else
    missing "node/npm not found (the MCP interop test needs them)"
fi

# Real MCP clients for the interoperability tests of `toolbelt mcp serve`
# (crates/toolbelt/tests/mcp_serve_interop.rs). Each is installed once and again only when
# its pin changes (a stamp file records what was installed). The two installs run side by
# side (about 25 s each from scratch); under CI a failure in either fails the script.
#
# An official Python SDK, pinned with what it pulls in, in a virtualenv of its own:
# install_python_sdk DIR REQUIREMENTS WHAT.
install_python_sdk() {
    local dir=$1 requirements=$2 what=$3
    cmp -s "$requirements" "$dir/installed-requirements.txt" 2>/dev/null && return 0
    if ! command -v python3 >/dev/null 2>&1; then
        missing "python3 not found (the $what tests need it)"
        return 0
    fi
    installing "$dir" "the $what (PyPI, $requirements) in a virtualenv" || return 0
    rm -rf "$dir"
    if python3 -m venv "$dir" >/dev/null 2>&1 \
        && "$dir/bin/pip" install --quiet --disable-pip-version-check --no-input \
            -r "$requirements" >/dev/null 2>&1; then
        cp "$requirements" "$dir/installed-requirements.txt"
        installed "$dir"
    else
        missing "could not install the $what into $dir (python3 -m venv, pip install -r $requirements)"
    fi
}
# The MCP Inspector CLI, which needs Node 22 (>= 22.19 for 2.x). The npm package `node`
# ships a Node binary as a platform package from the npm registry, so Node 22 comes from
# there too, whatever node is on PATH.
install_inspector() {
    local dir=.cache/node22
    local packages="node@22.23.3 @modelcontextprotocol/inspector@2.12.0"
    [ "$(cat "$dir/installed" 2>/dev/null)" = "$packages" ] && return 0
    if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
        missing "node/npm not found (the MCP Inspector tests need them)"
        return 0
    fi
    installing "$dir" "$packages (npm)" || return 0
    rm -rf "$dir"
    mkdir -p "$dir"
    # shellcheck disable=SC2086 # two package specs
    if npm install --prefix "$dir" --no-audit --no-fund --loglevel=error $packages >/dev/null 2>&1 \
        && "$dir/node_modules/.bin/node" --version >/dev/null 2>&1; then
        echo "$packages" >"$dir/installed"
        installed "$dir"
    else
        missing "could not install $packages into $dir (the MCP Inspector tests need them)"
    fi
}
# An npm install pinned by a stamp file: install_npm DIR "PACKAGES" WHAT [NPM ARGS...].
# Installed again only when the pins change; WHAT names the tests that need it.
install_npm() {
    local dir=$1 packages=$2 what=$3
    shift 3
    [ "$(cat "$dir/installed" 2>/dev/null)" = "$packages" ] && return 0
    if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
        missing "node/npm not found (the $what need them)"
        return 0
    fi
    installing "$dir" "$packages (npm)" || return 0
    rm -rf "$dir"
    mkdir -p "$dir"
    # shellcheck disable=SC2086 # package specs
    if npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$@" $packages >/dev/null 2>&1; then
        echo "$packages" >"$dir/installed"
        installed "$dir"
    else
        missing "could not install $packages into $dir (the $what need it)"
    fi
}
# Qwen Code's TypeScript SDK, which drives toolbelt in the stream-JSON interop tests
# (crates/toolbelt/tests/sdk_interop/; it runs on the Node on PATH), and Qwen Code
# 0.24.4 itself, which bench/sdk_compare.py runs the same scripted session through.
install_qwen_sdk() {
    install_npm .cache/sdk "@qwen-code/sdk@0.1.14 @qwen-code/qwen-code@0.24.4" "SDK interop tests"
}
# The official Agent Client Protocol client library (TypeScript), which drives
# `toolbelt --acp` in crates/toolbelt/tests/acp/ the way an editor does (on the Node on PATH;
# 2.4.0 runs on Node 20).
install_acp_sdk() {
    install_npm .cache/acp "@agentclientprotocol/sdk@2.4.0" "ACP tests"
}
# The Claude Agent SDK, which drives toolbelt in crates/toolbelt/tests/claude_sdk_interop/
# (on the Node on PATH). Its optional dependency is Claude Code's native binary (about
# 380 MB), which the tests never start (`pathToClaudeCodeExecutable` is toolbelt).
install_claude_sdk() {
    install_npm .cache/claude-sdk "@anthropic-ai/claude-agent-sdk@0.3.332" "Claude SDK interop tests" --omit=optional
}
# The language servers the `lsp` tool's tests run against (crates/toolbelt-lsp/tests), pinned.
install_lsp_servers() {
    install_npm .cache/lsp "pyright@1.1.414 typescript-language-server@5.1.3 typescript@5.9.3" "lsp tool tests"
}
install_python_sdk .cache/python crates/toolbelt/tests/fixtures/mcp_clients/requirements.txt "MCP Python SDK" &
python_sdk=$!
# The official Python SDKs of Anthropic, Gemini (google-genai) and OpenAI, one pinned
# set in one virtualenv: the tests in crates/toolbelt-model and
# crates/toolbelt/tests/anthropic_sdk.rs drive the fake model servers with them, so the
# fakes cannot drift from the real wire formats.
install_python_sdk .cache/llm-sdks crates/toolbelt-model/tests/fixtures/sdk/requirements.txt "model SDKs (anthropic, google-genai, openai)" &
model_sdks=$!
install_inspector &
inspector=$!
install_qwen_sdk &
qwen_sdk=$!
install_lsp_servers &
lsp_servers=$!
install_acp_sdk &
acp_sdk=$!
wait "$python_sdk" || exit 1
wait "$model_sdks" || exit 1
wait "$inspector" || exit 1
wait "$qwen_sdk" || exit 1
wait "$lsp_servers" || exit 1
wait "$acp_sdk" || exit 1
# clangd (Debian's package) for the `lsp` tool's C test: installed when this runs as root
# with apt-get (a CI image), else reported.
apt_install() {
    if [ -n "$LIST" ]; then
        say "would run as root: apt-get install -y -q $1"
        return 0
    fi
    # Printed before it runs: nothing runs as root unsaid.
    say "running as root: apt-get install -y -q $1"
    apt-get install -y -q "$1" >/dev/null 2>&1 && return 0
    say "running as root: apt-get update -q && apt-get install -y -q $1"
    apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "$1" >/dev/null 2>&1
}
if ! command -v clangd >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt_install clangd
fi
command -v clangd >/dev/null 2>&1 || missing "clangd not found (apt-get install clangd; the lsp tool's C test needs it)"
# jq (Debian's package): the hooks tests and docs/hooks.md run hook scripts written as
# Claude Code's documentation writes them, reading their input with jq.
if ! command -v jq >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt_install jq
fi
command -v jq >/dev/null 2>&1 || missing "jq not found (apt-get install jq; the hooks tests need it)"
# After the others: npm's cache is shared, and this one is the largest download.
install_claude_sdk || exit 1
# `script` (util-linux) gives the terminal tests a pty.
command -v script >/dev/null 2>&1 || missing "\`script\` (util-linux) not found (the terminal prompt test needs it)"
exit 0
