#!/usr/bin/env python3
"""word_count: the declared tool's command. Reads {"path": ...} on stdin (the project
root is the working directory) and prints the counts, or VS Code result parts."""
import base64
import json
import os
import sys

args = json.load(sys.stdin)
root = os.path.realpath(os.getcwd())
path = os.path.realpath(os.path.join(root, args.get("path", "")))
if os.path.commonpath([root, path]) != root:
    print(f"{args.get('path')!r} is outside the project", file=sys.stderr)
    sys.exit(2)
try:
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
except OSError as e:
    print(f"cannot read {args.get('path')!r}: {e.strerror}", file=sys.stderr)
    sys.exit(1)
counts = {"lines": text.count("\n"), "words": len(text.split()), "chars": len(text)}
# Two parts: a sentence for the model and the same numbers as JSON data.
print(json.dumps({"content": [
    {"type": "text", "value": f"{args['path']}: {counts['lines']} lines, {counts['words']} words, {counts['chars']} characters"},
    {"type": "data", "mimeType": "application/json",
     "data": base64.b64encode(json.dumps(counts).encode()).decode()},
]}))
