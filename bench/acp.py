#!/usr/bin/env python3
"""The seven-call session (bench/seven.jsonl) driven over ACP (`toolbelt --acp`) against
the same session over stream-JSON (`--input-format stream-json`), as an editor and an SDK
would drive them: one process each, from its start to its exit, with the replayed model
(no server). Runs alternate between the two; the medians and their ratio are printed.
Issue 44's goal: ACP within 10% of stream-JSON.

Usage: python3 bench/acp.py [--runs N] [--binary target/release/toolbelt]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(BENCH, "seven.jsonl")
PROMPT = "Run the session."


def workspace(tmp, label):
    ws = os.path.join(tmp, f"ws-{label}")
    subprocess.run(["bash", os.path.join(BENCH, "make_workspace.sh"), ws], check=True)
    home = os.path.join(tmp, f"home-{label}")
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(os.path.join(home, ".qwen"))
    env = {"PATH": os.environ["PATH"], "HOME": home, "TOOLBELT_HOME": os.path.join(home, ".toolbelt"),
           "TOOLBELT_SYSTEM_SETTINGS_PATH": os.path.join(tmp, "none.json")}
    return os.path.realpath(ws), env


def lines_until(proc, done):
    """Reads stdout lines until done(message) is true; the message."""
    for line in proc.stdout:
        message = json.loads(line)
        if done(message):
            return message
    sys.exit("acp bench: the process ended before the session did")


def stream_json(binary, ws, env):
    argv = [binary, "--input-format", "stream-json", "--output-format", "stream-json",
            "--yolo", "--max-session-turns", "30", "--model-replay", SCRIPT]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ws, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    user = {"type": "user", "message": {"role": "user", "content": PROMPT}, "parent_tool_use_id": None}
    proc.stdin.write(json.dumps(user) + "\n")
    proc.stdin.flush()
    result = lines_until(proc, lambda m: m.get("type") == "result")
    proc.stdin.close()
    proc.wait()
    wall = time.perf_counter() - start
    if result.get("is_error"):
        sys.exit(f"acp bench: the stream-JSON session failed: {result}")
    return wall


def acp(binary, ws, env):
    argv = [binary, "--acp", "--yolo", "--max-session-turns", "30", "--model-replay", SCRIPT]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ws, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)

    def call(id_, method, params):
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n")
        proc.stdin.flush()
        return lines_until(proc, lambda m: m.get("id") == id_ and "method" not in m)

    call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    session = call(2, "session/new", {"cwd": ws, "mcpServers": []})["result"]["sessionId"]
    answer = call(3, "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": PROMPT}]})
    proc.stdin.close()
    proc.wait()
    wall = time.perf_counter() - start
    if answer.get("result", {}).get("stopReason") != "end_turn":
        sys.exit(f"acp bench: the ACP session failed: {answer}")
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--binary", default=os.path.join(BENCH, "..", "target", "release", "toolbelt"))
    args = ap.parse_args()
    binary = os.path.realpath(args.binary)
    kinds = (("stream-json", stream_json), ("acp", acp))
    times = {name: [] for name, _ in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            for name, run in (kinds if i % 2 == 0 else kinds[::-1]):
                ws, env = workspace(tmp, name)
                times[name].append(run(binary, ws, env))
                if not os.path.exists(os.path.join(ws, "counts.txt")):
                    sys.exit(f"acp bench: the {name} session did not run its calls (no counts.txt)")
    med = {name: statistics.median(t) * 1000 for name, t in times.items()}
    for name, t in times.items():
        print(f"{name:12} median {med[name]:7.1f} ms  min {min(t) * 1000:7.1f} ms  max {max(t) * 1000:7.1f} ms  ({len(t)} runs)")
    print(f"acp / stream-json: {med['acp'] / med['stream-json']:.2f}x")


if __name__ == "__main__":
    main()
