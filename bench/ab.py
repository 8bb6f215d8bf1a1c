#!/usr/bin/env python3
"""Measures two toolbelt builds side by side, alternating A, B, A, B in one run (issue 49).

Called by bench/ab.sh, which builds the binaries; see there for the usage. Every run of
either build gets its own HOME and TOOLBELT_HOME (temp dirs). Wall time is the whole
process (fork to wait4), peak RSS is wait4's ru_maxrss of the toolbelt process.

Measures:
  seven          the seven-call session (bench/seven.jsonl) against the fake OpenAI server
                 on loopback, a fresh workspace (bench/make_workspace.sh) each run; the
                 server starts before the clock, per run, as in bench/agent_session.py
  seven replay   the same session with --model-replay (no server at all)
  seven, configured  the loopback session with a hook (on a tool no call uses), an LSP
                 server (for an extension no file has) and an MCP server (`toolbelt mcp
                 serve` of the same build) configured: what unused features cost
  tools list     `toolbelt tools list`, whole process
  mcp serve      sequential and 64-in-flight read_file calls/s over stdio with
                 crates/toolbelt-mcp/examples/mcp_load.rs, in rounds alternating
                 server-filesystem (when installed), A, B and bench/echo_server.c
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
MARKER = "end of records.rs: checksum 5f3a9c"


def run_measured(argv, cwd, env):
    """(wall seconds, peak RSS KiB, exit code, stderr tail) of one whole process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss, proc.returncode, err.decode(errors="replace")[-300:]


class FakeServer:
    def __init__(self, fake, script, workspace):
        self.report = tempfile.mktemp(suffix=".json")
        self.proc = subprocess.Popen([fake, script, "--workspace", workspace, "--report", self.report],
                                     stdout=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        if os.path.exists(self.report):
            os.unlink(self.report)


def configure(home, ws, binary):
    """The user's settings: a hook, an LSP server and an MCP server, none of them used by
    the seven calls except the MCP server, which starts with the session."""
    settings = {
        "hooks": {"PreToolUse": [{"matcher": "NoSuchTool",
                                  "hooks": [{"type": "command", "command": "true"}]}]},
        "lsp": {"servers": {"zzz": {"command": "true", "extensionToLanguage": {".zzz": "zzz"}}}},
        "mcpServers": {"self": {"command": binary, "args": ["mcp", "serve"]}},
    }
    with open(os.path.join(home, ".qwen", "settings.json"), "w") as f:
        json.dump(settings, f)


def session_env(tmp, label, configured, binary, ws):
    home = os.path.join(tmp, f"home-{label}-{'cfg' if configured else 'plain'}")
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(os.path.join(home, ".qwen"))
    if configured:
        configure(home, ws, binary)
    return {"PATH": os.environ["PATH"], "HOME": home, "TOOLBELT_HOME": os.path.join(home, ".toolbelt"),
            "TOOLBELT_SYSTEM_SETTINGS_PATH": os.path.join(tmp, "none.json")}


def seven_once(args, tmp, label, binary, mode):
    """One seven-call session; mode is 'loopback', 'replay' or 'configured'."""
    script = os.path.join(BENCH, "seven.jsonl")
    ws = os.path.join(tmp, f"ws-{label}")
    subprocess.run(["bash", os.path.join(BENCH, "make_workspace.sh"), ws], check=True)
    ws = os.path.realpath(ws)
    env = session_env(tmp, label, mode == "configured", binary, ws)
    server = None
    argv = [binary, "--yolo", "--max-session-turns", "30"]
    if mode == "replay":
        argv += ["--model-replay", script]
    else:
        server = FakeServer(args.fake, script, ws)
        env.update({"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-bench",
                    "OPENAI_MODEL": "qwen3-coder-plus"})
    try:
        wall, rss, code, err = run_measured(argv + ["Run the session."], ws, env)
    finally:
        if server:
            server.stop()
    if code != 0:
        sys.exit(f"ab: {label} seven ({mode}) exited {code}: {err}")
    if not os.path.exists(os.path.join(ws, "counts.txt")):
        sys.exit(f"ab: {label} seven ({mode}) left no counts.txt: the session did not run its calls")
    return wall, rss


def tools_list_once(tmp, label, binary):
    ws = os.path.join(tmp, "tl")
    os.makedirs(ws, exist_ok=True)
    env = session_env(tmp, label, False, binary, ws)
    wall, rss, code, err = run_measured([binary, "tools", "list"], ws, env)
    if code != 0:
        sys.exit(f"ab: {label} tools list exited {code}: {err}")
    return wall, rss


def alternate(n, builds, once):
    """{label: [results]} from n rounds of once(label, binary), A then B then A..."""
    out = {label: [] for label, _ in builds}
    for i in range(n):
        order = builds if i % 2 == 0 else builds[::-1]
        for label, binary in order:
            out[label].append(once(label, binary))
    return out


def records_file(path):
    """The ~4 KB source file of bench/mcp_serve.sh, the same bytes."""
    out = ["//! Fixed-width record parsing for the ledger import.", "",
           "use std::collections::BTreeMap;", "use std::fmt;", ""]
    for i in range(9):
        out += [
            f"/// Parses field group {i} of a ledger record; `None` when a field is malformed.",
            f"pub fn parse_record_{i:02}(line: &str, totals: &mut BTreeMap<String, i64>) -> Option<i64> {{",
            f"    let account = line.get({i * 4}..{i * 4 + 12})?.trim();",
            f"    let amount: i64 = line.get({i * 4 + 12}..{i * 4 + 24})?.trim().parse().ok()?;",
            "    *totals.entry(account.to_string()).or_insert(0) += amount;",
            f"    Some(amount * {i + 1})",
            "}",
            "",
        ]
    out += ["#[derive(Debug, Clone, PartialEq)]", "pub struct Summary {",
            "    pub accounts: usize,", "    pub total: i64,", "}", "",
            "impl fmt::Display for Summary {",
            "    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {",
            '        write!(f, "{} accounts, total {}", self.accounts, self.total)',
            "    }", "}", "", "// end of records.rs: checksum 5f3a9c", ""]
    with open(path, "w") as f:
        f.write("\n".join(out))


def mcp_rounds(args, tmp, builds):
    ws = os.path.join(tmp, "mcpws")
    os.makedirs(os.path.join(ws, "src"), exist_ok=True)
    path = os.path.join(ws, "src", "records.rs")
    records_file(path)
    servers = []
    if args.ref:
        servers.append(("server-filesystem", "read_text_file", {"path": path}, ["node", args.ref, ws]))
    for label, binary in builds:
        servers.append((label, "read_file", {"absolute_path": path}, [binary, "mcp", "serve"]))
    servers.append(("C echo", "read_file", {}, [args.echo, path]))
    rows = []
    for r in range(args.mcp_rounds):
        order = servers if r % 2 == 0 else servers[::-1]
        for label, tool, targs, cmd in order:
            env = session_env(tmp, "mcp", False, "", ws)
            proc = subprocess.run([args.load, "--label", label, "-n", str(args.mcp_calls), "--in-flight", "64",
                                   "--tool", tool, "--args", json.dumps(targs), "--expect", MARKER, "--"] + cmd,
                                  cwd=ws, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"ab: mcp_load {label}: {proc.stderr.strip()[-400:]}")
            rows += [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    def med(label, phase, key):
        v = [x[key] for x in rows if x["label"] == label and x["phase"] == phase]
        return statistics.median(v) if v else None
    return {label: {"seq": med(label, "sequential", "calls_per_sec"),
                    "inflight": med(label, "in_flight", "calls_per_sec"),
                    "p50": med(label, "sequential", "p50_us"),
                    "hwm": med(label, "memory", "vm_hwm_kib")} for label, *_ in servers}


def ms(v):
    return f"{v * 1000:.1f} ms"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="LABEL=BINARY of the build under test (HEAD)")
    ap.add_argument("--b", required=True, help="LABEL=BINARY of the base")
    ap.add_argument("--fake", required=True)
    ap.add_argument("--load", required=True)
    ap.add_argument("--echo", required=True)
    ap.add_argument("--ref", default="", help="server-filesystem's dist/index.js, if installed")
    ap.add_argument("--runs", type=int, default=20, help="seven-call sessions per build and kind")
    ap.add_argument("--list-runs", type=int, default=60)
    ap.add_argument("--mcp-calls", type=int, default=2000)
    ap.add_argument("--mcp-rounds", type=int, default=3)
    args = ap.parse_args()
    builds = [(label, os.path.abspath(path)) for label, path in (b.split("=", 1) for b in (args.a, args.b))]
    for tool in ("fake", "load", "echo"):
        setattr(args, tool, os.path.abspath(getattr(args, tool)))
    (la, _), (lb, _) = builds
    tmp = tempfile.mkdtemp(prefix="toolbelt-ab-")
    rows = []
    try:
        for mode, name in (("loopback", "seven-call session, loopback"), ("replay", "seven-call session, --model-replay"),
                           ("configured", "seven-call session, loopback, hooks + LSP + MCP configured")):
            res = alternate(args.runs, builds, lambda l, b: seven_once(args, tmp, l, b, mode))
            wall = {l: statistics.median(w for w, _ in v) for l, v in res.items()}
            low = {l: min(w for w, _ in v) for l, v in res.items()}
            rss = {l: statistics.median(r for _, r in v) for l, v in res.items()}
            rows.append((f"{name}: median wall (min)", f"{ms(wall[la])} ({ms(low[la])})",
                         f"{ms(wall[lb])} ({ms(low[lb])})", wall[la] / wall[lb]))
            rows.append((f"{name}: peak RSS", f"{rss[la] / 1024:.1f} MiB", f"{rss[lb] / 1024:.1f} MiB", rss[la] / rss[lb]))
            if mode == "loopback":
                plain = wall
            if mode == "configured":
                for l in (la, lb):
                    print(f"# {l}: configured / plain loopback wall {wall[l] / plain[l]:.2f}", file=sys.stderr)
            print(f"# {name} done", file=sys.stderr)
        res = alternate(args.list_runs, builds, lambda l, b: tools_list_once(tmp, l, b))
        wall = {l: statistics.median(w for w, _ in v) for l, v in res.items()}
        rows.append(("`tools list`: median wall", ms(wall[la]), ms(wall[lb]), wall[la] / wall[lb]))
        m = mcp_rounds(args, tmp, builds)
        rows.append(("mcp serve read_file, sequential calls/s", f"{m[la]['seq']:,.0f}", f"{m[lb]['seq']:,.0f}",
                     m[la]["seq"] / m[lb]["seq"]))
        rows.append(("mcp serve read_file, 64 in flight calls/s", f"{m[la]['inflight']:,.0f}",
                     f"{m[lb]['inflight']:,.0f}", m[la]["inflight"] / m[lb]["inflight"]))
        rows.append(("mcp serve peak RSS", f"{m[la]['hwm'] / 1024:.1f} MiB", f"{m[lb]['hwm'] / 1024:.1f} MiB",
                     m[la]["hwm"] / m[lb]["hwm"]))
        if "server-filesystem" in m:
            ref = m["server-filesystem"]["seq"]
            rows.append((f"  sequential / server-filesystem ({ref:,.0f}/s)", f"{m[la]['seq'] / ref:.2f}×",
                         f"{m[lb]['seq'] / ref:.2f}×", None))
        echo = m["C echo"]["seq"]
        rows.append((f"  sequential / C echo ({echo:,.0f}/s)", f"{m[la]['seq'] / echo:.0%}",
                     f"{m[lb]['seq'] / echo:.0%}", None))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{os.cpu_count()} cores, load average {open('/proc/loadavg').read().split()[:3]}; "
          f"{args.runs} sessions, {args.list_runs} `tools list`, {args.mcp_rounds} mcp rounds of "
          f"{args.mcp_calls} calls per build, alternating")
    print(f"\n| measure | A: {la} | B: {lb} | A/B |\n|---|---:|---:|---:|")
    for name, a, b, ratio in rows:
        print(f"| {name} | {a} | {b} | {'' if ratio is None else f'{ratio:.2f}'} |")


if __name__ == "__main__":
    main()
