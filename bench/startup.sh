#!/usr/bin/env bash
# Start-up cost: `toolbelt tools list` (settings load, registry build, table print) and a
# whole `tools call read_file`, as whole processes, with hyperfine. Prints the median.
# Usage: bench/startup.sh   (builds the release binary first)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { apt-get update -qq && apt-get install -y -qq hyperfine; }
cargo build --release -q -p toolbelt
bin="$PWD/target/release/toolbelt"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/project/.qwen" "$work/home"
printf '{ "tools": { "exclude": [] } }\n' > "$work/project/.qwen/settings.json"
# A file of fixed size (930 lines, 44 KB, what README.md was until it moved to docs/), so
# the read measures the same work whatever the README becomes.
python3 -c 'import sys; sys.stdout.write("".join(f"line {i}: " + "x" * 38 + "\n" for i in range(930)))' > "$work/project/README.md"
cd "$work/project"
export HOME="$work/home"
hyperfine -N --warmup 20 --runs 200 --export-json "$work/out.json" \
  -n "tools list" "$bin tools list" \
  -n "tools list --json" "$bin tools list --json" \
  -n "tools call read_file (README.md)" "$bin tools call read_file '{\"absolute_path\":\"$work/project/README.md\"}'" >&2
python3 - "$work/out.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"{r['command']:34s} median {r['median']*1000:6.2f} ms  mean {r['mean']*1000:6.2f} ms  max {r['max']*1000:6.2f} ms")
PY
