#!/usr/bin/env bash
# What a person's first day costs in builds (issue 48), on a fresh clone of HEAD with a
# target directory of its own (cargo's registry cache is the machine's, as after a first
# `cargo fetch`):
#   1. the tour's cold release build (`cargo build --locked --release -p toolbelt`,
#      with --timings: the report names the slowest units and the final step),
#   2. README's install step after it (`cargo install --locked --path crates/toolbelt
#      --target-dir target`, into a temporary root),
#   3. the test command's build and run (`cargo test --workspace`, cold; the setup it
#      needs is taken from this checkout's .cache/, so it is not downloaded again).
# Each prints wall and CPU seconds. Run it on an idle machine: the goals are wall-clock
# (8 min, 2 min, 10 min on 2 cores).
#
# Usage: bench/build_times.sh [release|install|tests]...   (default: all three, in order)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
work=$(mktemp -d "${BUILD_TIMES_DIR:-/tmp}/build-times.XXXXXX")
trap 'rm -rf "$work"' EXIT
git clone -q "$here" "$work/src"
cd "$work/src"
unset CARGO_TARGET_DIR
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(release install tests)

timed() {
    local label=$1
    shift
    local start=$SECONDS
    /usr/bin/time -f "%U %S" -o "$work/cpu" "$@" >"$work/$label.log" 2>&1 || {
        tail -20 "$work/$label.log" >&2
        echo "build_times: $label failed" >&2
        exit 1
    }
    read -r user sys <"$work/cpu"
    printf '%-8s wall %5d s   cpu %7.1f s   (load average now: %s)\n' "$label" \
        $((SECONDS - start)) "$(echo "$user + $sys" | bc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
}

for step in "${steps[@]}"; do
    case $step in
    release)
        timed release cargo build --locked --release -p toolbelt --timings
        cp target/cargo-timings/cargo-timing.html "$here/target/build-times-release.html" 2>/dev/null || true
        ;;
    install)
        [ -x target/release/toolbelt ] || { echo "build_times: install needs the release step first" >&2; exit 1; }
        timed install cargo install --locked --path crates/toolbelt --target-dir target --root "$work/root"
        ;;
    tests)
        if [ -d "$here/.cache" ]; then cp -a "$here/.cache" .cache; fi
        bash scripts/setup.sh >"$work/setup.log" 2>&1
        timed tests cargo test --workspace --no-fail-fast
        grep -E "^test result: " "$work/tests.log" | awk '{p += $4; f += $6} END {print "tests:   " p " passed, " f " failed"}'
        ;;
    *)
        echo "usage: bench/build_times.sh [release|install|tests]..." >&2
        exit 2
        ;;
    esac
done
