#!/usr/bin/env bash
# Start-up with declared tools: `toolbelt tools list` in a project whose .qwen/tools holds
# 20 manifests with 25 declared tools each (500 tools, when clauses, tool sets), against
# the same project without manifests, with hyperfine. Prints the medians and the ratio.
# Usage: bench/declared.sh   (builds the release binary first)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { apt-get update -qq && apt-get install -y -qq hyperfine; }
cargo build --release -q -p toolbelt
bin="$PWD/target/release/toolbelt"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bare/.qwen" "$work/declared/.qwen" "$work/home"
python3 bench/gen_manifests.py "$work/declared/.qwen/tools" 20 25
export HOME="$work/home" TOOLBELT_TRUST_WORKSPACE=1
count=$(cd "$work/declared" && "$bin" tools list --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
echo "declared project offers $count tools" >&2
hyperfine -N --warmup 10 --runs 100 --export-json "$work/out.json" \
  -n "tools list (built-ins only)" "env -C $work/bare $bin tools list" \
  -n "tools list (500 declared tools, 20 manifests)" "env -C $work/declared $bin tools list" >&2
python3 - "$work/out.json" <<'PY'
import json, sys
rs = json.load(open(sys.argv[1]))["results"]
for r in rs:
    print(f"{r['command']:48s} median {r['median']*1000:6.2f} ms  mean {r['mean']*1000:6.2f} ms  max {r['max']*1000:6.2f} ms")
print(f"ratio (declared / bare): {rs[1]['median']/rs[0]['median']:.2f}x")
PY
