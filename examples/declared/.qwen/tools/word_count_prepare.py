#!/usr/bin/env python3
"""word_count's prepare command: side-effect free, prints the messages for this call.
Anything it gets wrong (a crash, bad JSON, too slow) falls back to the manifest's
static templates."""
import json
import os
import sys

args = json.load(sys.stdin)
path = str(args.get("path", ""))
try:
    size = f"{os.path.getsize(path)} bytes"
except OSError:
    size = "not found"
print(json.dumps({
    "invocationMessage": f"Counting the words of {path} ({size})",
    "confirmationMessages": {
        "title": f"Count the words of {path}?",
        "message": f"Runs `word_count.py` on `{path}` ({size}).",
    },
}))
