#!/usr/bin/env bash
# MCP server benchmark (issue 13): `toolbelt mcp serve` (stdio) against the reference
# filesystem server @modelcontextprotocol/server-filesystem, on the same file, in the
# same run. Results go to BENCHMARKS.md by hand.
#
#   bash bench/mcp_serve.sh                 # N=2000 calls per phase, K=64, ROUNDS=3
#   N=5000 ROUNDS=5 bash bench/mcp_serve.sh
#   PIN=1 bash bench/mcp_serve.sh           # diagnostic: client on CPU 0, server on CPU 1
#   TB_ARGS="--busy-poll-us 0" bash bench/mcp_serve.sh   # extra `mcp serve` arguments
#
# Client: crates/toolbelt-mcp/examples/mcp_load.rs, plain JSON-RPC lines over the
# server's stdin/stdout (no SDK). Per server and round: initialize, 50 warm-up calls,
# N sequential `tools/call` reads of a ~4 KB source file (each waits for its answer),
# then N more with K in flight; every answer must be a result, not an error, and
# contain the file's last line (so a wrong or cut answer fails the run). Then the
# server's peak RSS (VmHWM) and CPU time (user + system, per call) are read from /proc. Rounds alternate reference, toolbelt;
# the table gives the median of the rounds and the ratios toolbelt / reference.
#
# The reference server is installed with npm into .cache/node-bench/ (git-ignored).
# Raw JSON lines go to bench/out/mcp_serve.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REF_VERSION=2026.8.31 # `npm view @modelcontextprotocol/server-filesystem version`, 2026-11-23
N=${N:-2000}
K=${K:-64}
ROUNDS=${ROUNDS:-3}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
OUT=$ROOT/bench/out
mkdir -p "$OUT"

cargo build --release -q -p toolbelt -p toolbelt-mcp --bin toolbelt --example mcp_load
TB=$TARGET/release/toolbelt
LOAD=$TARGET/release/examples/mcp_load

REF_DIR=$ROOT/.cache/node-bench
REF_PKG=$REF_DIR/node_modules/@modelcontextprotocol/server-filesystem
REF=$REF_PKG/dist/index.js
installed=$(node -p "require('$REF_PKG/package.json').version" 2>/dev/null || true)
if [ "$installed" != "$REF_VERSION" ]; then
    echo "installing @modelcontextprotocol/server-filesystem@$REF_VERSION into $REF_DIR" >&2
    mkdir -p "$REF_DIR"
    npm install --prefix "$REF_DIR" --no-audit --no-fund --silent \
        "@modelcontextprotocol/server-filesystem@$REF_VERSION" >&2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ws/src" "$work/home"
# A realistic source file of about 4 KB, the same bytes every run.
python3 - "$work/ws/src/records.rs" <<'PY'
import sys
out = ["//! Fixed-width record parsing for the ledger import.", "",
       "use std::collections::BTreeMap;", "use std::fmt;", ""]
for i in range(9):
    out += [
        f"/// Parses field group {i} of a ledger record; `None` when a field is malformed.",
        f"pub fn parse_record_{i:02}(line: &str, totals: &mut BTreeMap<String, i64>) -> Option<i64> {{",
        f"    let account = line.get({i * 4}..{i * 4 + 12})?.trim();",
        f"    let amount: i64 = line.get({i * 4 + 12}..{i * 4 + 24})?.trim().parse().ok()?;",
        "    *totals.entry(account.to_string()).or_insert(0) += amount;",
        f"    Some(amount * {i + 1})",
        "}",
        "",
    ]
out += ["#[derive(Debug, Clone, PartialEq)]", "pub struct Summary {",
        "    pub accounts: usize,", "    pub total: i64,", "}", "",
        "impl fmt::Display for Summary {",
        "    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {",
        '        write!(f, "{} accounts, total {}", self.accounts, self.total)',
        "    }", "}", "", "// end of records.rs: checksum 5f3a9c", ""]
open(sys.argv[1], "w").write("\n".join(out))
PY
FILE=$work/ws/src/records.rs
MARKER="end of records.rs: checksum 5f3a9c"
echo "file: $(wc -c <"$FILE") bytes, $(wc -l <"$FILE") lines; N=$N per phase, K=$K in flight, $ROUNDS rounds" >&2
export HOME=$work/home TOOLBELT_HOME=$work/home/.toolbelt TOOLBELT_SYSTEM_SETTINGS_PATH=$work/none.json
cd "$work/ws"

have_serve=1
"$TB" mcp serve --help >/dev/null 2>&1 || have_serve=0
[ "$have_serve" = 1 ] || echo "this toolbelt has no \`mcp serve\`: reference server only" >&2

client=() server=()
if [ "${PIN:-0}" = 1 ]; then
    client=(taskset -c 0) server=(taskset -c 1)
    echo "pinned: client on CPU 0, each server (all its threads) on CPU 1" >&2
fi
results=$OUT/mcp_serve.jsonl
: >"$results"
for round in $(seq "$ROUNDS"); do
    "${client[@]}" "$LOAD" --label server-filesystem -n "$N" --in-flight "$K" --tool read_text_file \
        --args "{\"path\":\"$FILE\"}" --expect "$MARKER" -- "${server[@]}" node "$REF" "$work/ws" >>"$results"
    if [ "$have_serve" = 1 ]; then
        "${client[@]}" "$LOAD" --label toolbelt -n "$N" --in-flight "$K" --tool read_file \
            --args "{\"absolute_path\":\"$FILE\"}" --expect "$MARKER" -- "${server[@]}" "$TB" mcp serve ${TB_ARGS:-} >>"$results"
    fi
done

echo
echo "node $(node --version), server-filesystem $REF_VERSION, toolbelt mcp serve ${TB_ARGS:-(defaults)}, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)${server[*]:+, server under ${server[*]}}"
python3 - "$results" "$N" "$K" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
n, k = sys.argv[2], sys.argv[3]
def values(label, phase, key):
    return [r[key] for r in rows if r["label"] == label and r["phase"] == phase]
def med(label, phase, key):
    v = values(label, phase, key)
    return statistics.median(v) if v else None
labels = ["server-filesystem", "toolbelt"]
def cell(label, phase, key, scale=1.0, fmt="{:,.0f}", unit=""):
    v = values(label, phase, key)
    if not v:
        return "pending"
    m = statistics.median(v) * scale
    return f"{fmt.format(m)}{unit} ({fmt.format(min(v) * scale)}–{fmt.format(max(v) * scale)})"
print(f"| server | sequential calls/s | {k} in flight calls/s | sequential p50 / p99 "
      f"| server CPU per call, sequential / {k} in flight | peak RSS (VmHWM) | RSS at end |")
print("|---|---:|---:|---:|---:|---:|---:|")
for label in labels:
    p50, p99 = med(label, "sequential", "p50_us"), med(label, "sequential", "p99_us")
    lat = f"{p50:.0f} / {p99:.0f} µs" if p50 is not None else "pending"
    c1, c2 = (med(label, ph, "server_cpu_us_per_call") for ph in ("sequential", "in_flight"))
    cpu = f"{c1:.0f} / {c2:.0f} µs" if c1 is not None and c2 is not None else "pending"
    print(f"| {label} | {cell(label, 'sequential', 'calls_per_sec')} "
          f"| {cell(label, 'in_flight', 'calls_per_sec')} | {lat} | {cpu} "
          f"| {cell(label, 'memory', 'vm_hwm_kib', 1 / 1024, '{:.1f}', ' MiB')} "
          f"| {cell(label, 'memory', 'vm_rss_kib', 1 / 1024, '{:.1f}', ' MiB')} |")
def ratio(phase, key):
    t, r = med("toolbelt", phase, key), med("server-filesystem", phase, key)
    return f"{t / r:.2f}x" if t and r else "pending"
def per_round(phase, key):
    t, r = values("toolbelt", phase, key), values("server-filesystem", phase, key)
    return " ".join(f"{a / b:.2f}x" for a, b in zip(t, r)) or "pending"
print()
print(f"medians of the rounds, {n} calls per phase (min–max in brackets)")
print(f"per-round ratios, sequential: {per_round('sequential', 'calls_per_sec')}; "
      f"{k} in flight: {per_round('in_flight', 'calls_per_sec')}")
print(f"ratio toolbelt / server-filesystem: sequential {ratio('sequential', 'calls_per_sec')} "
      f"(target >= 5x), {k} in flight {ratio('in_flight', 'calls_per_sec')}, "
      f"peak RSS {ratio('memory', 'vm_hwm_kib')} (toolbelt target < 32 MiB)")
PY
