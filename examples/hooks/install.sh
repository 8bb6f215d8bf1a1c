#!/usr/bin/env bash
# Installs the example hook for your own use, in any project: block-rm.sh into
# ~/.qwen/hooks/, and the hooks of settings.json (beside this script) added to
# ~/.qwen/settings.json. Everything already in that file stays as it is; a hook already
# there is not added twice. Needs jq. Prints what it did.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="$HOME/.qwen"
mkdir -p "$dir/hooks"
if [ -e "$dir/hooks/block-rm.sh" ] && ! cmp -s "$here/block-rm.sh" "$dir/hooks/block-rm.sh"; then
    echo "install.sh: $dir/hooks/block-rm.sh exists and differs: left as it is" >&2
else
    cp "$here/block-rm.sh" "$dir/hooks/block-rm.sh"
    echo "install.sh: the hook script is $dir/hooks/block-rm.sh"
fi
settings="$dir/settings.json"
if [ ! -s "$settings" ]; then echo '{}' >"$settings"; fi
# Each event's groups are appended to yours; a group you already have is skipped.
merge='reduce ($add[0].hooks | to_entries[]) as $e (.;
    (.hooks[$e.key] // []) as $have
    | .hooks[$e.key] = $have + [$e.value[] | select(. as $g | $have | index([$g]) | not)])'
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
if ! jq --slurpfile add "$here/settings.json" "$merge" "$settings" >"$tmp"; then
    echo "install.sh: $settings is not plain JSON (jq cannot read it): not changed; add the \"hooks\" of $here/settings.json yourself" >&2
    exit 1
fi
if cmp -s <(jq -S . "$settings") <(jq -S . "$tmp"); then
    echo "install.sh: $settings already has these hooks: not changed"
else
    # Written in place, so the file keeps its owner and mode.
    cat "$tmp" >"$settings"
    echo "install.sh: hooks added to $settings (everything else in it unchanged)"
fi
