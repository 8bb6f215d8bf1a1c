#!/usr/bin/env python3
"""Session start to the first model request, with three MCP servers (one of which takes
5 s to start) against the same session with none (issue 46's goal: within 10 ms).

A one-shot `toolbelt -p` run against a minimal chat-completions server in this script,
which notes when the first request arrives; the time is from just before the process is
spawned to that arrival. The servers are the `mcp_testserver` example twice and once
behind `sh -c 'sleep 5; exec mcp_testserver'` ("three"); "asleep" is three servers that
only sleep (`sh -c 'sleep 5'`), which separates toolbelt's own cost from the CPU the two
real servers take while they start beside it. Each configuration runs N times,
alternating; the medians and their differences are printed.

Usage: python3 bench/mcp_slow_start.py [--runs N] [--profile release|debug]
  (cargo build --release -p toolbelt && cargo build --release -p toolbelt-mcp --examples,
   or the same without --release and --profile debug)
"""

import argparse
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))

ANSWER = "".join(
    f"data: {json.dumps(chunk)}\n\n"
    for chunk in [
        {"id": "c", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}}]},
        {"id": "c", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
) + "data: [DONE]\n\n"


class Model(http.server.BaseHTTPRequestHandler):
    """Answers every chat-completions request with "ok"; notes the first arrival."""

    first = None

    def do_POST(self):
        if Model.first is None:
            Model.first = time.perf_counter()
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = ANSWER.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def one_run(toolbelt, url, work, servers):
    config = json.dumps({"mcpServers": servers})
    env = dict(os.environ, HOME=os.path.join(work, "home"),
               TOOLBELT_HOME=os.path.join(work, "tbhome"),
               TOOLBELT_SYSTEM_SETTINGS_PATH=os.path.join(work, "none.json"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "TOOLBELT_LOG"):
        env.pop(name, None)
    Model.first = None
    start = time.perf_counter()
    done = subprocess.run(
        [toolbelt, "-p", "hi", "--openai-base-url", url, "-m", "m", "--mcp-config", config],
        cwd=os.path.join(work, "ws"), env=env, capture_output=True, text=True)
    if done.returncode != 0 or Model.first is None:
        sys.exit(f"toolbelt failed ({done.returncode}): {done.stderr}")
    return (Model.first - start) * 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--profile", default="release")
    args = parser.parse_args()
    toolbelt = os.path.join(TARGET, args.profile, "toolbelt")
    testserver = os.path.join(TARGET, args.profile, "examples", "mcp_testserver")
    for path in (toolbelt, testserver):
        if not os.path.exists(path):
            sys.exit(f"{path} is missing; see the usage at the top of this script")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    three = {
        "a": {"command": testserver},
        "b": {"command": testserver},
        "slow": {"command": "sh", "args": ["-c", f"sleep 5; exec '{testserver}'"]},
    }
    # Three servers that only sleep: toolbelt's own cost of starting them, without the
    # CPU two real servers take while they start beside it.
    sleeping = {name: {"command": "sh", "args": ["-c", "sleep 5"]} for name in "abc"}
    with tempfile.TemporaryDirectory() as work:
        os.makedirs(os.path.join(work, "ws"))
        os.makedirs(os.path.join(work, "home"))
        one_run(toolbelt, url, work, {})  # warm the file cache
        times = {"none": [], "three": [], "asleep": []}
        for _ in range(args.runs):
            times["none"].append(one_run(toolbelt, url, work, {}))
            times["three"].append(one_run(toolbelt, url, work, three))
            times["asleep"].append(one_run(toolbelt, url, work, sleeping))
    none = statistics.median(times["none"])
    print(f"{args.profile} build, {args.runs} runs each, start to first model request (ms):")
    for name, values in times.items():
        print(f"  {name:6} median {statistics.median(values):7.1f}  "
              f"min {min(values):7.1f}  max {max(values):7.1f}")
    for name in ("three", "asleep"):
        print(f"  {name} - none (medians): {statistics.median(times[name]) - none:+.1f} ms")


if __name__ == "__main__":
    main()
