#!/usr/bin/env bash
# Benchmarks of run_shell_command (see BENCHMARKS.md, section "run_shell_command").
#
# 1. 400 MB of output through the tool: peak RSS and wall time of the whole `toolbelt`
#    process (GNU time), against the same pipeline run by bash into a file (what the tool
#    must do at least: run it and keep the whole stream on disk).
# 2. The overhead of a trivial command: `toolbelt tools call run_shell_command true`
#    against `bash -c true`, with hyperfine (installed from Debian when missing).
#
# Usage: bench/shell.sh            (builds the release binary first)
set -euo pipefail
cd "$(dirname "$0")/.."

need() {
  command -v "$1" >/dev/null 2>&1 && return 0
  echo "installing $2 (Debian) ..." >&2
  apt-get update -qq >/dev/null && apt-get install -y -qq "$2" >/dev/null
}
need hyperfine hyperfine
[ -x /usr/bin/time ] || need /usr/bin/time time

cargo build --release -p toolbelt >/dev/null 2>&1
TB="$PWD/target/release/toolbelt"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/proj" "$work/home"
export HOME="$work/home" TOOLBELT_HOME="$work/home/.toolbelt"
export TOOLBELT_SYSTEM_SETTINGS_PATH="$work/none.json"
cd "$work/proj"

BYTES=400000000
PIPE="yes 'the quick brown fox jumps over the lazy dog 0123456789' | head -c $BYTES"
ARGS=$(printf '{"command": "%s", "timeout": 600000}' "$PIPE")

echo "== 400 MB of output through run_shell_command"
/usr/bin/time -f '%e s wall, %M KiB peak RSS' "$TB" tools call run_shell_command "$ARGS" --yes \
  >"$work/result.txt" 2>"$work/time.txt" || { cat "$work/time.txt"; exit 1; }
echo "toolbelt:        $(tail -1 "$work/time.txt")"
log=$(grep -o '/[^ ;]*run_shell_command-[0-9-]*\.log' "$work/result.txt" | head -1 || true)
if [ -n "$log" ]; then
  echo "                 log file keeps $(stat -c %s "$log") of $BYTES bytes; the model got $(wc -c <"$work/result.txt") bytes"
  rm -f "$log"
fi
/usr/bin/time -f '%e s wall, %M KiB peak RSS' bash -c "$PIPE > $work/direct.log" 2>"$work/time2.txt"
echo "bash -c > file:  $(tail -1 "$work/time2.txt")"
rm -f "$work/direct.log"

echo
echo "== overhead of a trivial command"
hyperfine -N --warmup 5 --runs 200 \
  "bash -c true" \
  "$TB tools call run_shell_command '{\"command\":\"true\"}' --yes" 2>&1 | sed "s#$TB#toolbelt#g"
