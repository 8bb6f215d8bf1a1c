#!/usr/bin/env bash
# Creates the seven-call session's workspace in directory $1 (emptied first).
set -euo pipefail
dir="$1"
rm -rf "$dir" && mkdir -p "$dir/src"
cat > "$dir/src/app.py" <<'PY'
"""The seven-call session's little app."""


def compute(values):
    return sum(values)


def main():
    print(compute([1, 2, 3]))
PY
cat > "$dir/src/helpers.py" <<'PY'
def double(x):
    return 2 * x
PY
printf '# Bench app\n\nUsed by the seven-call session.\n' > "$dir/README.md"
