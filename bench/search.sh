#!/usr/bin/env bash
# Search and edit benchmarks of the file tools against ripgrep and plain reads, whole
# process against whole process, measured in the same hyperfine run.
#
#   bench/search.sh            # the 15,000-file tree, edit of a 50 MB file
#   bench/search.sh large      # also the 100,000-file / 1 GB tree and peak RSS
#   bench/search.sh edit       # only the edit of a 50 MB file
#
# Results (JSON and a Markdown table) go to bench/out/. Corpora are generated once
# under bench/corpus/ (git-ignored) by bench/gen_corpus.py.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
mkdir -p "$OUT" "$ROOT/bench/corpus"

need() {
    command -v "$1" >/dev/null && return
    echo "installing $2 (needs root and Debian)" >&2
    apt-get install -y -qq "$2" >/dev/null || { apt-get update -qq && apt-get install -y -qq "$2" >/dev/null; }
}
need rg ripgrep
need hyperfine hyperfine
[ -x /usr/bin/time ] || need /usr/bin/time time

cargo build --release -p toolbelt -q
TB=$ROOT/target/release/toolbelt
RUNS=${RUNS:-10}

corpus() { # name files megabytes
    local dir=$ROOT/bench/corpus/$1
    if [ ! -d "$dir/.git" ]; then
        echo "generating $dir ($2 files, $3 MB)" >&2
        python3 "$ROOT/bench/gen_corpus.py" "$dir" "$2" "$3"
    fi
    echo "$dir"
}

# Every hyperfine run is in the corpus directory, which is the tool's workspace.
compare() { # name dir command reference
    (cd "$2" && hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$OUT/$1.json" \
        -n toolbelt "$3" -n reference "$4" >/dev/null)
    python3 - "$OUT/$1.json" "$1" "$3" "$4" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
t, ref = r["toolbelt"], r["reference"]
ms = lambda x: f'{x["mean"]*1000:.1f} ± {x["stddev"]*1000:.1f} ms'
print(f'| {sys.argv[2]} | `{sys.argv[3]}` | {ms(t)} | `{sys.argv[4]}` | {ms(ref)} | {t["mean"]/ref["mean"]:.2f}× |')
PY
}

if [ "${1:-}" != edit ]; then
echo "| benchmark | toolbelt command | toolbelt | reference command | reference | ratio |"
echo "|---|---|---|---|---|---|"
GREP='{"pattern":"xylophonequartz"}'
GLOB='{"pattern":"**/*.rs"}'
small=$(corpus small 15000 60)
compare grep-15k "$small" "$TB tools call grep_search '$GREP' --yes" "rg -i xylophonequartz"
compare glob-15k "$small" "$TB tools call glob '$GLOB' --yes" "rg --files -g '*.rs'"

if [ "${1:-}" = large ]; then
    large=$(corpus large 100000 1024)
    compare grep-100k "$large" "$TB tools call grep_search '$GREP' --yes" "rg -i xylophonequartz"
    compare glob-100k "$large" "$TB tools call glob '$GLOB' --yes" "rg --files -g '*.rs'"
    rss=$(cd "$large" && /usr/bin/time -v "$TB" tools call grep_search "$GREP" --yes 2>&1 >/dev/null \
        | awk '/Maximum resident/ {print $6}')
    rg_rss=$(cd "$large" && /usr/bin/time -v rg -i xylophonequartz 2>&1 >/dev/null \
        | awk '/Maximum resident/ {print $6}')
    echo
    echo "Peak RSS of grep_search over the 100,000-file tree: $((rss / 1024)) MiB (rg -i: $((rg_rss / 1024)) MiB)"
fi
fi

# edit of one line in the middle of a 50 MB file, against reading the file once: on
# disk (the edit's fsync goes to the device) and on tmpfs (fsync is free, what is left
# is the edit's own work).
edit_bench() { # label dir
    local label=$1 big=$2
    mkdir -p "$big"
    if [ ! -f "$big/big.orig" ]; then
        python3 - "$big/big.orig" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    n = 0
    while f.tell() < 50 * 1024 * 1024:
        f.write(f"line {n}: the quick brown fox jumps over the lazy dog, again and again\n")
        n += 1
        if n == 350_000:
            f.write("    let needle = unique_marker_in_the_middle();\n")
PY
    fi
    cp "$big/big.orig" "$big/big.txt"
    local lines
    lines=$(wc -l < "$big/big.orig")
    local edit="{\"file_path\":\"$big/big.txt\",\"old_string\":\"unique_marker_in_the_middle()\",\"new_string\":\"replaced_marker()\"}"
    local read="{\"absolute_path\":\"$big/big.txt\",\"offset\":$((lines - 1)),\"limit\":1}"
    (cd "$big" && hyperfine -N --warmup 2 --runs "$RUNS" --export-json "$OUT/edit-50mb-$label.json" \
        --prepare "cp $big/big.orig $big/big.txt" \
        -n edit "$TB tools call edit '$edit' --yes" \
        -n read_file "$TB tools call read_file '$read'" \
        -n cat "cat $big/big.txt" >/dev/null)
    python3 - "$OUT/edit-50mb-$label.json" "$label" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
ms = lambda x: f'{x["mean"]*1000:.1f} ± {x["stddev"]*1000:.1f} ms'
e = r["edit"]["mean"]
print(f'| edit 50 MB ({sys.argv[2]}) | {ms(r["edit"])} | {ms(r["read_file"])} | {ms(r["cat"])} | {e / r["read_file"]["mean"]:.2f}× | {e / r["cat"]["mean"]:.2f}× |')
PY
}
echo
echo "| benchmark | edit | read_file (whole file) | cat | edit / read_file | edit / cat |"
echo "|---|---|---|---|---|---|"
edit_bench disk "$ROOT/bench/corpus/edit"
edit_bench tmpfs /dev/shm/toolbelt-bench-edit
