#!/usr/bin/env python3
"""Time to the first streamed token through toolbelt, against the fake server's own.

Two fake chat-completions servers (`fake_openai`, the same build, each serving N text
answers in 256-byte writes):
  direct    a plain HTTP client on one kept-alive connection posts a streaming request and
            waits for the first `content` delta: the server's own time to first token;
  toolbelt  a long-lived `toolbelt --input-format stream-json --include-partial-messages`
            session is sent a user message and the first `text_delta` stream event is
            awaited on its stdout: the same, through toolbelt (reading the message,
            making the request with the system prompt and every tool, parsing the stream,
            writing the event).
The difference of the medians is what toolbelt adds (issue 43's goal: under 1 ms).

Usage: python3 bench/ttft.py [--turns N]   (release build of toolbelt and the fake first:
  cargo build --release -p toolbelt
  cargo build --release -p toolbelt-model --features fake-server --example fake_openai)
"""

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
TOOLBELT = os.path.join(TARGET, "release/toolbelt")
FAKE = os.path.join(TARGET, "release/examples/fake_openai")
ANSWER = "The first token of a streamed answer, and a few more words after it."


def fake(tmp, turns, name):
    script = os.path.join(tmp, f"{name}.jsonl")
    with open(script, "w") as f:
        for _ in range(turns):
            f.write(json.dumps({"text": ANSWER}) + "\n")
    proc = subprocess.Popen([FAKE, script, "--lenient"], stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def direct(url, turns):
    """Seconds from sending each request to its first content delta."""
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port)
    body = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}],
                       "tools": [{"type": "function", "function": {"name": "noop", "parameters": {"type": "object"}}}]})
    times = []
    for _ in range(turns):
        start = time.perf_counter()
        conn.request("POST", u.path.rstrip("/") + "/chat/completions", body,
                     {"Content-Type": "application/json", "Authorization": "Bearer k"})
        resp = conn.getresponse()
        first = None
        while True:
            line = resp.readline()
            if not line:
                break
            if first is None and line.startswith(b"data: ") and b'"content":"' in line:
                first = time.perf_counter() - start
        times.append(first)
    conn.close()
    return times


def through_toolbelt(url, turns, tmp):
    env = {"PATH": os.environ["PATH"], "HOME": os.path.join(tmp, "home"),
           "TOOLBELT_HOME": os.path.join(tmp, "home", ".toolbelt"),
           "TOOLBELT_SYSTEM_SETTINGS_PATH": os.path.join(tmp, "none.json"),
           "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"}
    os.makedirs(os.path.join(tmp, "home", ".qwen"), exist_ok=True)
    ws = os.path.join(tmp, "ws")
    os.makedirs(ws, exist_ok=True)
    proc = subprocess.Popen([TOOLBELT, "--input-format", "stream-json", "--output-format", "stream-json",
                             "--include-partial-messages"], cwd=ws, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    times = []
    for i in range(turns):
        user = {"type": "user", "message": {"role": "user", "content": f"say something {i}"},
                "parent_tool_use_id": None}
        start = time.perf_counter()
        proc.stdin.write(json.dumps(user) + "\n")
        proc.stdin.flush()
        first = None
        for line in proc.stdout:
            m = json.loads(line)
            if first is None and m.get("type") == "stream_event" \
                    and m["event"].get("delta", {}).get("type") == "text_delta":
                first = time.perf_counter() - start
            if m.get("type") == "result":
                break
        times.append(first)
    proc.stdin.close()
    proc.wait()
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        a, url_a = fake(tmp, args.turns, "direct")
        b, url_b = fake(tmp, args.turns, "toolbelt")
        try:
            d = direct(url_a, args.turns)
            t = through_toolbelt(url_b, args.turns, tmp)
        finally:
            a.kill()
            b.kill()
    if None in d or None in t:
        sys.exit("ttft: a turn streamed no text")
    # The first turn of each warms caches (a connection, a lazily compiled schema).
    d, t = d[1:], t[1:]
    md, mt = statistics.median(d) * 1000, statistics.median(t) * 1000
    print(f"direct    median {md:.3f} ms  min {min(d) * 1000:.3f} ms  ({len(d)} turns)")
    print(f"toolbelt  median {mt:.3f} ms  min {min(t) * 1000:.3f} ms  ({len(t)} turns)")
    print(f"added by toolbelt: {mt - md:.3f} ms (median), {(min(t) - min(d)) * 1000:.3f} ms (min)")


if __name__ == "__main__":
    main()
