#!/bin/sh
# cargo's runner for this workspace (.cargo/config.toml): every binary cargo runs comes
# through here, with its arguments. Test and bench binaries (under target/*/deps/) get a
# HOME and TOOLBELT_HOME under target/, so a test that forgets to give toolbelt a home of
# its own still cannot write to the person's `~/.qwen` or `~/.toolbelt`. Anything else,
# `cargo run -p toolbelt -- ...` above all, runs as it is: with the person's real home.
case "$1" in
*/deps/*)
    root=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd) || exit 1
    HOME="$root/target/test-home"
    TOOLBELT_HOME="$HOME/.toolbelt"
    export HOME TOOLBELT_HOME
    mkdir -p "$HOME"
    ;;
esac
exec "$@"
