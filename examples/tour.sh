#!/usr/bin/env bash
# The toolbelt tour, offline: a scripted model (examples/tour.jsonl) drives every
# built-in tool on a copy of examples/demo. Nothing here touches the network or the
# repository's files. Extra arguments go to toolbelt (try --output-format stream-json).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cargo build --release -q -p toolbelt --manifest-path "$here/../Cargo.toml"
bin="$here/../target/release/toolbelt"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$here/demo/." "$work/"
cd "$work"
# A private home: no user settings or context files leak into the tour.
HOME="$work/.home" "$bin" --model-replay "$here/tour.jsonl" --yolo "Give me a tour of the tools." "$@"
echo "--- files left in the demo workspace ($work):" >&2
find . -path ./.home -prune -o -type f -print | sort >&2
