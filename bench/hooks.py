#!/usr/bin/env python3
"""What a PreToolUse hook adds to a call (issue 31): toolbelt against Qwen Code 0.24.4.

One headless session per run: the fake OpenAI server on 127.0.0.1 asks for N shell calls
(`run_shell_command` with `true N`, N the call's number:
Qwen Code halts a run whose model repeats a call word for word), one per model turn, then ends. The same session runs
with no hook, and with one PreToolUse hook on `run_shell_command`:

  true     a command hook that is `true` (a shell string, as settings usually write it)
  logged   a command hook `echo x >> LOG`: it shows the agent runs the settings' hooks in
           this session (`true` leaves no trace), and costs about what `true` costs
  python   a command hook that is a Python script reading its input and answering allow
  http     an http hook on 127.0.0.1 answering allow (a keep-alive server in this script)

The hook's cost per call is (wall with the hook - wall without) / N, each wall the median
of the runs. Both agents read the hooks from the person's ~/.qwen/settings.json, run with
--yolo (so PreToolUse is the only thing between the model's call and the shell), in a
workspace of their own, against the same server and script. Every run's hook writes are
checked: the hook must have been called N times (all but `true`, which leaves no trace), or
the run is reported as a problem.

Usage: python3 bench/hooks.py [--calls N] [--runs R] [--qwen-runs R] [--agents toolbelt,qwen]
                              [--hooks none,logged,true,python,http] [--no-build]
"""

import argparse
import http.server
import json
import os
import statistics
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_session as common  # noqa: E402  (Server, measured, build, paths)

PY_HOOK = """import json, sys
data = json.load(sys.stdin)
with open(sys.argv[1], "a") as log:
    log.write(data.get("tool_name", "?") + "\\n")
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}))
"""


class Counting(http.server.BaseHTTPRequestHandler):
    """An http hook that answers allow and counts its calls (HTTP/1.1, keep-alive)."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without TCP_NODELAY the second waits for the
    # client's delayed ACK (40 ms), which would be measured as the hook's cost.
    disable_nagle_algorithm = True
    calls = 0

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        self.rfile.read(length)
        Counting.calls += 1
        body = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                                  "permissionDecision": "allow"}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def script(path, calls):
    with open(path, "w") as f:
        for i in range(calls):
            f.write(json.dumps({"tool_calls": [{"id": f"call_{i + 1}", "name": "run_shell_command",
                                                "arguments": {"command": f"true {i + 1}"}}]}) + "\n")
        f.write(json.dumps({"text": "Ran them all."}) + "\n")


def settings(kind, tmp, http_url):
    """The person's settings for one hook kind (toolbelt and Qwen Code read the same file)."""
    base = {"tools": {"listDirectory": {"enabled": True}}}
    log = os.path.join(tmp, "hook.log")
    if kind == "none":
        return base, None
    if kind == "true":
        hook = {"type": "command", "command": "true"}
    elif kind == "logged":
        hook = {"type": "command", "command": f"echo x >> {log}"}
    elif kind == "python":
        py = os.path.join(tmp, "allow.py")
        with open(py, "w") as f:
            f.write(PY_HOOK)
        hook = {"type": "command", "command": f"python3 {py} {log}"}
    else:
        hook = {"type": "http", "url": http_url}
    base["hooks"] = {"PreToolUse": [{"matcher": "run_shell_command", "hooks": [hook]}]}
    return base, (None if kind in ("http", "true") else log)


def spawn_floor(env, n=50):
    """Starting `true` and waiting for it, nothing else (posix_spawnp + waitpid, as the
    kernel and libc allow): what any command hook costs at least, measured in the same run."""
    import time
    times = []
    for _ in range(n):
        start = time.perf_counter()
        pid = os.posix_spawnp("true", ["true"], env)
        os.waitpid(pid, 0)
        times.append(time.perf_counter() - start)
    return times


def hook_calls(kind, log):
    if kind == "http":
        return Counting.calls
    try:
        with open(log) as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def argv(agent):
    if agent == "toolbelt":
        return [common.TOOLBELT, "--yolo", "--max-session-turns", "300", "Run the session."]
    return [common.QWEN, "--yolo", "--auth-type", "openai", "-p", "Run the session."]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--qwen-runs", type=int, default=3)
    ap.add_argument("--agents", default="toolbelt,qwen")
    ap.add_argument("--hooks", default="none,logged,true,python,http")
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    if not args.no_build:
        common.build()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    http_url = f"http://127.0.0.1:{server.server_port}/hook"
    tmp = tempfile.mkdtemp(prefix="toolbelt-hooks-bench-")
    session = os.path.join(tmp, "session.jsonl")
    script(session, args.calls)
    walls = {}
    floor = []
    kinds = args.hooks.split(",")
    for agent in args.agents.split(","):
        if agent == "qwen" and not os.path.exists(common.QWEN):
            print(f"# qwen: not installed ({common.QWEN}); skipped", file=sys.stderr)
            continue
        runs = args.qwen_runs if agent == "qwen" else args.runs
        times = {kind: [] for kind in kinds}
        problems = {kind: [] for kind in kinds}
        logs = {}
        for kind in kinds:
            home = os.path.join(tmp, f"home-{agent}-{kind}")
            os.makedirs(os.path.join(home, ".qwen"), exist_ok=True)
            values, logs[kind] = settings(kind, tmp, http_url)
            with open(os.path.join(home, ".qwen/settings.json"), "w") as f:
                json.dump(values, f)
        # Round-robin over the hook kinds, so the machine's drift falls on all of them.
        for i in range(runs):
            for kind in kinds:
                home, log = os.path.join(tmp, f"home-{agent}-{kind}"), logs[kind]
                ws = os.path.realpath(tempfile.mkdtemp(dir=tmp, prefix="ws-"))
                if log and os.path.exists(log):
                    os.unlink(log)
                Counting.calls = 0
                srv = common.Server(session, ws, lenient=agent == "qwen")
                env = {"PATH": os.environ["PATH"], "HOME": home,
                       "TOOLBELT_HOME": os.path.join(home, ".toolbelt"),
                       "TOOLBELT_SYSTEM_SETTINGS_PATH": os.path.join(tmp, "none.json"),
                       "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
                       "OPENAI_BASE_URL": srv.url, "OPENAI_API_KEY": "sk-bench",
                       "OPENAI_MODEL": "qwen3-coder-plus"}
                wall, _rss, code, _out, err = common.measured(argv(agent), ws, env)
                report = srv.result(args.calls + 1)
                srv.stop()
                if code != 0:
                    problems[kind].append(f"run {i}: exit {code}: {err.strip().splitlines()[-1:]}")
                if report.get("requests") != args.calls + 1:
                    problems[kind].append(f"run {i}: {report.get('requests')} requests")
                if kind not in ("none", "true") and hook_calls(kind, log) != args.calls:
                    problems[kind].append(f"run {i}: the hook ran {hook_calls(kind, log)} times")
                times[kind].append(wall)
            floor += spawn_floor({"PATH": os.environ["PATH"]})
        for kind in kinds:
            walls[(agent, kind)] = statistics.median(times[kind])
            print(f"{agent:9} {kind:7} median {walls[(agent, kind)] * 1000:9.1f} ms"
                  f" (min {min(times[kind]) * 1000:.1f}, max {max(times[kind]) * 1000:.1f}), runs {runs}")
            for p in problems[kind][:5]:
                print(f"   problem: {p}")
    print(f"\nadded per call ({args.calls} calls, medians):")
    for kind in args.hooks.split(","):
        if kind == "none":
            continue
        row = []
        for agent in args.agents.split(","):
            if (agent, kind) in walls and (agent, "none") in walls:
                row.append((agent, (walls[(agent, kind)] - walls[(agent, "none")]) / args.calls))
        text = ", ".join(f"{a} {d * 1000:.2f} ms" for a, d in row)
        if len(row) == 2 and row[0][1] > 0:
            text += f"  (ratio {row[1][1] / row[0][1]:.1f}x)"
        print(f"  {kind:7} {text}")
    if floor:
        floor.sort()
        print(f"\nspawn floor (`true` started and waited for, {len(floor)} times through the runs):"
              f" median {statistics.median(floor) * 1000:.2f} ms,"
              f" p10 {floor[len(floor) // 10] * 1000:.2f} ms")
    server.shutdown()


if __name__ == "__main__":
    main()
