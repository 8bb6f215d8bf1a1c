#!/usr/bin/env bash
# The toolbelt tour, offline: a scripted model (examples/tour.jsonl) drives eleven of the
# built-in tools on a copy of examples/demo (README.md names the others and why).
# Nothing here touches the network or the repository's files. Extra arguments go to
# toolbelt (try --output-format stream-json). KEEP=1 keeps the copy.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$here/../target/release/toolbelt"
if [ ! -x "$bin" ]; then
    echo "Building toolbelt (release; the first build takes several minutes)..." >&2
fi
cargo build --locked --release -p toolbelt --manifest-path "$here/../Cargo.toml"
work="$(mktemp -d)"
if [ -z "${KEEP:-}" ]; then trap 'rm -rf "$work"' EXIT; fi
cp -r "$here/demo/." "$work/"
cd "$work"
# A private home: no user settings or context files leak into the tour.
HOME="$work/.home" "$bin" --model-replay "$here/tour.jsonl" --yolo "Give me a tour of the tools." "$@"
echo "--- files in the demo workspace after the tour:" >&2
find . -path ./.home -prune -o -type f -print | sort >&2
if [ -n "${KEEP:-}" ]; then
    echo "--- kept in $work" >&2
else
    echo "--- (a temporary copy, now removed; KEEP=1 keeps it)" >&2
fi
