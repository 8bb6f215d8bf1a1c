#!/usr/bin/env bash
# Benchmarks of web_fetch (see BENCHMARKS.md, section "web_fetch").
#
# 1. A 5 MB HTML page from a loopback server: wall time (hyperfine) and peak RSS (GNU
#    time) of `toolbelt tools call web_fetch`, against `curl -s URL > /dev/null` plus the
#    Markdown conversion measured alone (the `html_to_markdown` example, same code).
# 2. A 100 MB body with the default 10 MiB cap: peak RSS, wall time, and how many bytes
#    the server managed to write before toolbelt dropped the connection.
#
# The loopback host is opened in the user settings (tools.webFetch.allowHosts), as a
# person would for a local docs server; the guard stays on for everything else.
#
# Usage: bench/web_fetch.sh            (builds the release binary first)
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
cargo build --release -p toolbelt-tools --example html_to_markdown >/dev/null 2>&1
TB="$PWD/target/release/toolbelt"
CONVERT="$PWD/target/release/examples/html_to_markdown"
BENCH="$PWD/bench"

work=$(mktemp -d)
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/proj" "$work/home/.qwen"
export HOME="$work/home" TOOLBELT_HOME="$work/home/.toolbelt"
export TOOLBELT_SYSTEM_SETTINGS_PATH="$work/none.json"
echo '{"tools": {"webFetch": {"allowHosts": ["127.0.0.1"]}}}' >"$HOME/.qwen/settings.json"
cd "$work/proj"

python3 "$BENCH/gen_html.py" "$work/page.html" 5000000
python3 "$BENCH/web_server.py" "$work/page.html" 100000000 >"$work/port" &
server=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
PORT=$(cat "$work/port")
URL="http://127.0.0.1:$PORT/page.html"
ARGS=$(printf '{"url": "%s", "prompt": "What is section 7 about?"}' "$URL")
echo "page: $(stat -c %s "$work/page.html") bytes of HTML; $("$CONVERT" "$work/page.html")"

echo "== 5 MB HTML page: wall time"
hyperfine -N --warmup 2 --runs 15 --export-json "$work/h.json" \
  "curl -s $URL -o /dev/null" \
  "$CONVERT $work/page.html" \
  "$TB tools call web_fetch '$ARGS' --yes" >/dev/null
python3 - "$work/h.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
curl, conv, tb = (x["median"] * 1000 for x in r)
print(f"curl -s URL > /dev/null    {curl:8.1f} ms (median)")
print(f"conversion alone           {conv:8.1f} ms")
print(f"curl + conversion          {curl + conv:8.1f} ms")
print(f"toolbelt web_fetch         {tb:8.1f} ms")
print(f"ratio toolbelt / (curl + conversion) = {tb / (curl + conv):.2f} (target <= 2)")
PY

echo "== 5 MB HTML page: peak RSS"
/usr/bin/time -f '%e s wall, %M KiB peak RSS' "$TB" tools call web_fetch "$ARGS" --yes \
  >"$work/out.txt" 2>"$work/time.txt" || { cat "$work/time.txt"; exit 1; }
echo "toolbelt web_fetch: $(tail -1 "$work/time.txt") (target < 65536 KiB)"
/usr/bin/time -f '%e s wall, %M KiB peak RSS' "$CONVERT" "$work/page.html" \
  >/dev/null 2>"$work/time.txt"
echo "conversion alone:   $(tail -1 "$work/time.txt")"

echo "== 100 MB body, 10 MiB cap"
HUGE=$(printf '{"url": "http://127.0.0.1:%s/huge", "prompt": "first lines"}' "$PORT")
/usr/bin/time -f '%e s wall, %M KiB peak RSS' "$TB" tools call web_fetch "$HUGE" --yes \
  >"$work/out.txt" 2>"$work/time.txt" || { cat "$work/time.txt"; exit 1; }
echo "toolbelt web_fetch: $(tail -1 "$work/time.txt")"
# The bytes toolbelt took from its sockets: every recvfrom/recvmsg, counted by strace.
need strace strace
strace -f -qq -e trace=recvfrom,recvmsg,read -e signal=none -o "$work/strace.txt" \
  "$TB" tools call web_fetch "$HUGE" --yes >/dev/null 2>&1 || true
python3 - "$work/strace.txt" <<'PY'
import re, sys
total = 0
for line in open(sys.argv[1], errors="replace"):
    if re.search(r"\brecv(from|msg)\(", line):
        m = re.search(r"= (\d+)$", line.strip())
        if m:
            total += int(m.group(1))
cap = 10 * 1024 * 1024
print(f"bytes toolbelt received from sockets: {total}; cap {cap}; beyond the cap: {total - cap}")
PY
grep -o 'cut at [^;]*' "$work/out.txt" | head -1 || true
stats=$(curl -s "http://127.0.0.1:$PORT/stats")
python3 - "$stats" <<'PY'
import json, sys
s = json.loads(sys.argv[1])
cap = 10 * 1024 * 1024
sent = s["huge_sent"]
print(f"server wrote {sent} bytes of 100000000 before the connection was dropped "
      f"(complete: {s['huge_complete']}); cap {cap}; beyond the cap: {sent - cap} bytes "
      f"(kernel socket buffers and the last 64 KiB write)")
PY
