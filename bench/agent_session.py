#!/usr/bin/env python3
"""The headless agent benchmark: whole-process wall time and peak RSS of scripted sessions.

Sessions:
  seven      the seven-call session (bench/seven.jsonl: list, read, write, edit, glob, grep,
             shell; one call per model turn), on a fresh copy of the workspace of
             bench/make_workspace.sh each run;
  calls200   200 read_file calls, one per model turn (cost per call and per turn).

Agents:
  toolbelt-replay    toolbelt --model-replay SCRIPT --yolo (no server at all)
  toolbelt-loopback  toolbelt --yolo against the fake OpenAI server on 127.0.0.1
  toolbelt-anthropic the same over Anthropic Messages (the fake server's --anthropic)
  toolbelt-gemini    the same over the Gemini API (--gemini)
  toolbelt-responses the same over OpenAI Responses (--responses, --provider openai-responses)
  qwen-loopback      Qwen Code 0.24.4 (bench/qwen, `npm install` there) --yolo against the
                     same server, when installed

Each run forks the agent, waits for it, and reads its peak RSS from wait4(). The server
is started once per session and agent (outside the measurement), and its request checks
are reported. After the runs, the files left in the workspace of the last run of each
agent are compared (`diff -r`, ignoring agent state directories).

Usage: python3 bench/agent_session.py [--runs N] [--sessions seven,calls200]
                                      [--agents toolbelt-replay,toolbelt-loopback,qwen-loopback]
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
TOOLBELT = os.path.join(TARGET, "release/toolbelt")
FAKE = os.path.join(TARGET, "release/examples/fake_openai")
QWEN = os.path.join(BENCH, "qwen/node_modules/.bin/qwen")
IGNORED = {".home", ".qwen", ".toolbelt"}


def build():
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "toolbelt"], cwd=ROOT, check=True)
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "toolbelt-model", "--features", "fake-server",
         "--example", "fake_openai"], cwd=ROOT, check=True)


def make_workspace(path):
    subprocess.run(["bash", os.path.join(BENCH, "make_workspace.sh"), path], check=True)


def script_for(session, tmp):
    if session == "seven":
        return os.path.join(BENCH, "seven.jsonl")
    path = os.path.join(tmp, "calls200.jsonl")
    with open(path, "w") as f:
        for i in range(200):
            target = "src/app.py" if i % 2 else "README.md"
            f.write(json.dumps({"tool_calls": [{"id": f"call_{i + 1}", "name": "read_file",
                                                "arguments": {"absolute_path": "${WORKSPACE}/" + target}}]}) + "\n")
        f.write(json.dumps({"text": "Read 200 times."}) + "\n")
    return path


class Server:
    def __init__(self, script, workspace, lenient, dialect=None):
        self.report = tempfile.mktemp(suffix=".json")
        args = [FAKE, script, "--workspace", workspace, "--report", self.report]
        if lenient:
            args.append("--lenient")
        if dialect:
            args.append(f"--{dialect}")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()

    def reset(self, script, workspace, lenient):
        self.stop()
        self.__init__(script, workspace, lenient)

    def result(self, expected):
        """The report once it covers `expected` requests (the server rewrites it every 20 ms)."""
        report = {"requests": 0, "violations": ["no report"]}
        for _ in range(100):
            try:
                with open(self.report) as f:
                    report = json.load(f)
                if report.get("requests", 0) >= expected:
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        return report

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def measured(argv, cwd, env):
    """Runs argv under /usr/bin/time to get the peak RSS of the process tree's largest member."""
    stats = tempfile.mktemp()
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", stats] + argv, cwd=cwd, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True)
    wall = time.perf_counter() - start
    with open(stats) as f:
        lines = [l for l in f.read().split() if l.isdigit()]
    os.unlink(stats)
    rss_kib = int(lines[-1]) if lines else 0
    return wall, rss_kib, proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")


def agent_argv(agent, script):
    turns = ["--max-session-turns", "300"]
    if agent == "toolbelt-replay":
        return [TOOLBELT, "--model-replay", script, "--yolo"] + turns + ["Run the session."]
    if agent in ("toolbelt-loopback", "toolbelt-anthropic", "toolbelt-gemini"):
        return [TOOLBELT, "--yolo"] + turns + ["Run the session."]
    if agent == "toolbelt-responses":
        return [TOOLBELT, "--provider", "openai-responses", "--yolo"] + turns + ["Run the session."]
    return [QWEN, "--yolo", "--auth-type", "openai", "-p", "Run the session."]


def snapshot(path):
    files = {}
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = [d for d in dirnames if d not in IGNORED]
        for name in filenames:
            full = os.path.join(dirpath, name)
            with open(full, "rb") as f:
                files[os.path.relpath(full, path)] = f.read()
    return files


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--qwen-runs", type=int, default=5)
    ap.add_argument("--sessions", default="seven,calls200")
    ap.add_argument("--agents", default="toolbelt-replay,toolbelt-loopback,qwen-loopback")
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    if not args.no_build:
        build()
    tmp = tempfile.mkdtemp(prefix="toolbelt-bench-")
    results = {}
    snapshots = {}
    for session in args.sessions.split(","):
        script = script_for(session, tmp)
        for agent in args.agents.split(","):
            if agent == "qwen-loopback" and not os.path.exists(QWEN):
                print(f"# {agent}: not installed ({QWEN}); skipped", file=sys.stderr)
                continue
            if agent == "qwen-loopback" and session == "calls200":
                continue
            ws = os.path.join(tmp, f"{session}-{agent}")
            home = os.path.join(tmp, f"home-{agent}")
            os.makedirs(os.path.join(home, ".qwen"), exist_ok=True)
            if agent.startswith("qwen"):
                # Qwen Code 0.24.4 disables list_directory unless settings enable it.
                shutil.copy(os.path.join(BENCH, "qwen-settings.json"), os.path.join(home, ".qwen/settings.json"))
            walls, rsss, problems = [], [], []
            runs = args.qwen_runs if agent.startswith("qwen") else args.runs
            for i in range(runs):
                make_workspace(ws)
                ws_real = os.path.realpath(ws)
                env = {"PATH": os.environ["PATH"], "HOME": home, "TOOLBELT_HOME": os.path.join(home, ".toolbelt"),
                       "TOOLBELT_SYSTEM_SETTINGS_PATH": os.path.join(tmp, "none.json"),
                       "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"}
                server = None
                if agent.endswith("loopback"):
                    server = Server(script, ws_real, lenient=agent.startswith("qwen"))
                    env.update({"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-bench",
                                "OPENAI_MODEL": "qwen3-coder-plus"})
                elif agent == "toolbelt-anthropic":
                    server = Server(script, ws_real, lenient=False, dialect="anthropic")
                    env.update({"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-bench",
                                "ANTHROPIC_MODEL": "claude-bench"})
                elif agent == "toolbelt-gemini":
                    server = Server(script, ws_real, lenient=False, dialect="gemini")
                    env.update({"GOOGLE_GEMINI_BASE_URL": server.url, "GEMINI_API_KEY": "gm-bench",
                                "GEMINI_MODEL": "gemini-bench"})
                elif agent == "toolbelt-responses":
                    server = Server(script, ws_real, lenient=False, dialect="responses")
                    env.update({"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-bench",
                                "OPENAI_MODEL": "gpt-bench"})
                argv = agent_argv(agent, script)
                wall, rss, code, out, err = measured(argv, ws_real, env)
                if code != 0:
                    problems.append(f"run {i}: exit {code}: {err.strip().splitlines()[-1:]}")
                if server:
                    report = server.result(8 if session == "seven" else 201)
                    server.stop()
                    if report.get("violations"):
                        problems.append(f"run {i}: server: {report['violations'][:3]}")
                    if i == 0:
                        print(f"# {session}/{agent}: {report.get('requests')} requests", file=sys.stderr)
                walls.append(wall)
                rsss.append(rss)
            snapshots[(session, agent)] = snapshot(ws)
            results[(session, agent)] = (statistics.median(walls), statistics.median(rsss), min(walls), max(walls))
            med, rss, lo, hi = results[(session, agent)]
            print(f"{session:9} {agent:18} median {med * 1000:8.1f} ms (min {lo * 1000:.1f}, max {hi * 1000:.1f})"
                  f"  peak RSS {rss / 1024:6.1f} MiB  runs {runs}")
            for p in problems[:5]:
                print(f"   problem: {p}")
    # Files left behind, compared with the first agent of each session.
    for session in args.sessions.split(","):
        agents = [a for (s, a) in snapshots if s == session]
        if len(agents) < 2:
            continue
        base = snapshots[(session, agents[0])]
        for other in agents[1:]:
            theirs = snapshots[(session, other)]
            same = base == theirs
            print(f"{session}: files left by {other} {'==' if same else '!='} {agents[0]}")
            if not same:
                for name in sorted(set(base) | set(theirs)):
                    if base.get(name) != theirs.get(name):
                        print(f"   differs: {name}")
    if ("seven", "qwen-loopback") in results and ("seven", "toolbelt-loopback") in results:
        q, t = results[("seven", "qwen-loopback")], results[("seven", "toolbelt-loopback")]
        print(f"seven: qwen/toolbelt wall ratio {q[0] / t[0]:.1f}x, RSS ratio {q[1] / t[1]:.1f}x")
    for session in args.sessions.split(","):
        for agent, name in (("toolbelt-anthropic", "Anthropic Messages"), ("toolbelt-gemini", "Gemini"),
                            ("toolbelt-responses", "OpenAI Responses")):
            if (session, agent) in results and (session, "toolbelt-loopback") in results:
                a, c = results[(session, agent)][0], results[(session, "toolbelt-loopback")][0]
                print(f"{session}: {name} / chat completions wall {a / c:.3f}")
    if ("calls200", "toolbelt-replay") in results and ("seven", "toolbelt-replay") in results:
        a, b = results[("calls200", "toolbelt-replay")][0], results[("seven", "toolbelt-replay")][0]
        print(f"cost per extra call (replay, 1 call per turn): {(a - b) / 193 * 1e6:.0f} us")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
