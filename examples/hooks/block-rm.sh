#!/bin/bash
# A PreToolUse hook as Claude Code's documentation writes one: it reads the call from
# standard input with jq and refuses a recursive delete, with the reason on stderr
# (exit code 2). Any other command goes on to the usual rules (exit 0, no output).
command=$(jq -r '.tool_input.command // empty')
if printf '%s' "$command" | grep -Eq '(^|[;&| ])rm +-[a-zA-Z]*r'; then
  echo "Blocked by block-rm.sh: \`$command\` deletes recursively. Move the files instead, or ask the user." >&2
  exit 2
fi
exit 0
