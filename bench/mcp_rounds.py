#!/usr/bin/env python3
"""`mcp serve` read_file calls/s of several builds at once, in alternating rounds (the
`mcp_rounds` of bench/ab.py, which compares two): for telling which commit of a series
moved the rate. The C echo server (bench/echo_server.c) runs in each round too.

Usage: python3 bench/mcp_rounds.py ROUNDS LABEL=BINARY [LABEL=BINARY ...]
  (cargo build --release -p toolbelt-mcp --example mcp_load; cc -O2 -o /var/tmp/echo_server
   bench/echo_server.c; ECHO=... and LOAD=... override where they are)
"""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ab  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    args = argparse.Namespace(
        ref="",
        load=os.environ.get("LOAD", os.path.join(TARGET, "release/examples/mcp_load")),
        echo=os.environ.get("ECHO", "/var/tmp/echo_server"),
        mcp_calls=2000,
        mcp_rounds=int(sys.argv[1]),
    )
    builds = [tuple(b.split("=", 1)) for b in sys.argv[2:]]
    tmp = tempfile.mkdtemp(prefix="mcp-rounds-")
    for label, v in ab.mcp_rounds(args, tmp, builds).items():
        print(f"{label:12s} sequential {v['seq']:8.0f} calls/s, 64 in flight {v['inflight']:8.0f}, p50 {v['p50']:.1f} us")


if __name__ == "__main__":
    main()
