#!/usr/bin/env python3
"""The `lsp` tool's latency and toolbelt's memory (issue 32), for pyright,
typescript-language-server and clangd, each in one run against its own floor:

- floor: goToDefinition and findReferences sent by this script straight to a warm server
  (the same server, the same file open, the same position);
- mcp serve: the same through `toolbelt mcp serve` (stdio, one connection) on a warm server;
- tools call: the same through `toolbelt tools call lsp`: every call is a new toolbelt and
  a new server, so each one is a cold start, measured as is;
- cold floor: this script starting the server, `initialize`, `didOpen`, waiting for what
  toolbelt's first answer waits for (diagnostics published, no reported work going on)
  and one definition: the cold start without toolbelt;
- toolbelt's peak RSS (VmHWM, toolbelt alone: the server is another process) of `mcp
  serve` after all its calls, and of one `tools call` (sampled every 2 ms).

Usage: bench/lsp.py <toolbelt binary> [N warm requests, default 200] [K cold runs, default 5] [server ...]
The servers come from .cache/lsp (scripts/setup.sh) and clangd from PATH; a missing one is
skipped.
"""
import json, os, shutil, subprocess, sys, tempfile, time

TOOLBELT = os.path.abspath(sys.argv[1])
N = int(sys.argv[2]) if len(sys.argv) > 2 else 200
K = int(sys.argv[3]) if len(sys.argv) > 3 else 5
ONLY = sys.argv[4:]
BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".cache", "lsp", "node_modules", ".bin")
FILES = 20


def py_project(root):
    write(root, "lib.py", "def greet(name: str) -> str:\n    return 'hi ' + name\n")
    for i in range(FILES):
        write(root, f"m{i}.py", f"from lib import greet\n\ndef f{i}() -> str:\n    return greet('{i}')\n")


def ts_project(root):
    write(root, "tsconfig.json", '{"compilerOptions": {"strict": true, "target": "es2020"}}')
    write(root, "lib.ts", "export function greet(name: string): string {\n  return 'hi ' + name;\n}\n")
    for i in range(FILES):
        write(root, f"m{i}.ts", f"import {{ greet }} from './lib';\n\nexport function f{i}(): string {{\n  return greet('{i}');\n}}\n")


def c_project(root):
    write(root, "lib.h", "const char *greet(const char *name);\n")
    write(root, "lib.c", '#include "lib.h"\nconst char *greet(const char *name) { return name; }\n')
    for i in range(FILES):
        write(root, f"m{i}.c", f'#include "lib.h"\n\nconst char *f{i}(void) {{\n    return greet("{i}");\n}}\n')
    # A compilation database names every file, so the background index covers them all.
    files = ["lib.c"] + [f"m{i}.c" for i in range(FILES)]
    write(root, "compile_commands.json", json.dumps([
        {"directory": root, "file": f, "arguments": ["cc", "-std=c11", "-c", f]} for f in files]))


# name: (command, project, file, language, 0-based line and character of `greet` in it).
# clangd indexes the project in the background (its cross-file references need the
# index); the warm runs wait until its indexing work has ended.
SERVERS = {
    "pyright": ([os.path.join(BIN, "pyright-langserver"), "--stdio"], py_project, "m0.py", "python", (3, 12)),
    "typescript-language-server": ([os.path.join(BIN, "typescript-language-server"), "--stdio"], ts_project, "m0.ts", "typescript", (3, 10)),
    "clangd": ([shutil.which("clangd") or "clangd", "--log=error", "--background-index"], c_project, "m0.c", "c", (3, 12)),
}


def write(root, name, text):
    with open(os.path.join(root, name), "w") as f:
        f.write(text)


def project(name):
    command, make, file, language, _ = SERVERS[name]
    d = tempfile.mkdtemp(prefix="lsp-bench-")
    root = os.path.realpath(os.path.join(d, "project"))
    home = os.path.join(d, "home")
    os.makedirs(root); os.makedirs(home)
    make(root)
    ext = os.path.splitext(file)[1]
    write(root, ".lsp.json", json.dumps({language: {"command": command[0], "args": command[1:],
                                                    "extensionToLanguage": {ext: language}, "startupTimeout": 120000}}))
    return root, home


def env(home):
    e = dict(os.environ, HOME=home, TOOLBELT_HOME=home + "/.toolbelt", TOOLBELT_TRUST_WORKSPACE="1",
             TOOLBELT_SYSTEM_SETTINGS_PATH=home + "/none.json")
    e.pop("TOOLBELT_LOG", None)
    return e


def stats(xs):
    xs = sorted(xs)
    return f"p50 {xs[len(xs) // 2] * 1e3:.2f} ms, p90 {xs[int(len(xs) * 0.9)] * 1e3:.2f} ms"


def cold_stats(xs):
    xs = sorted(xs)
    return f"p50 {xs[len(xs) // 2]:.2f} s (min {xs[0]:.2f}, max {xs[-1]:.2f})"


class Lsp:
    """A minimal client on the server's pipes: what toolbelt does, without toolbelt."""

    def __init__(self, command, root):
        self.p = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, cwd=root)
        self.id = 0
        self.published = set()
        self.progress = set()
        self.progress_began = False

    def send(self, msg):
        body = json.dumps(msg).encode()
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body); self.p.stdin.flush()

    def read(self):
        n = 0
        while True:
            line = self.p.stdout.readline()
            if not line: raise EOFError("the server ended")
            line = line.strip()
            if not line: break
            if line.lower().startswith(b"content-length"): n = int(line.split(b":")[1])
        m = json.loads(self.p.stdout.read(n))
        if m.get("method") == "textDocument/publishDiagnostics":
            self.published.add(m["params"]["uri"])
        elif m.get("method") == "$/progress":
            kind = m["params"]["value"].get("kind")
            if kind == "begin":
                self.progress_began = True
                self.progress.add(str(m["params"]["token"]))
            elif kind == "end":
                self.progress.discard(str(m["params"]["token"]))
        elif "method" in m and "id" in m:
            result = [None] * len(m["params"].get("items", [])) if m["method"] == "workspace/configuration" else None
            self.send({"jsonrpc": "2.0", "id": m["id"], "result": result})
        return m

    def request(self, method, params):
        self.id += 1
        self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        while True:
            m = self.read()
            if m.get("id") == self.id and "method" not in m: return m

    def start(self, root, file, language):
        uri = "file://" + root
        caps = {"general": {"positionEncodings": ["utf-16"]}, "window": {"workDoneProgress": True},
                "textDocument": {"definition": {"linkSupport": True}, "references": {}, "publishDiagnostics": {}}}
        self.request("initialize", {"processId": os.getpid(), "rootUri": uri, "capabilities": caps,
                                    "workspaceFolders": [{"uri": uri, "name": "project"}]})
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        doc = f"{uri}/{file}"
        self.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": doc, "languageId": language, "version": 1, "text": open(os.path.join(root, file)).read()}}})
        # What toolbelt's first answer waits for: diagnostics published (or work reported)
        # and no reported work still going on.
        while not ((self.published or self.progress_began) and not self.progress):
            self.read()
        return doc

    def settle(self, limit=300):
        """Waits until the work the server reported (an index) has ended."""
        deadline = time.time() + limit
        while (not self.progress_began or self.progress) and time.time() < deadline:
            self.read()

    def end(self):
        self.p.kill(); self.p.wait()


OPS = [("goToDefinition", "textDocument/definition", {}),
       ("findReferences", "textDocument/references", {"context": {"includeDeclaration": True}})]


def count(result):
    r = result.get("result")
    return 0 if r is None else (len(r) if isinstance(r, list) else 1)


def floor(name, root):
    command, _, file, language, (line, character) = SERVERS[name]
    s = Lsp(command, root)
    doc = s.start(root, file, language)
    if "--background-index" in command:
        s.settle()
    pos = {"textDocument": {"uri": doc}, "position": {"line": line, "character": character}}
    out = {}
    for op, method, extra in OPS:
        out[op + "_results"] = count(s.request(method, dict(pos, **extra)))  # warm
        ts = []
        for _ in range(N):
            t = time.perf_counter(); s.request(method, dict(pos, **extra)); ts.append(time.perf_counter() - t)
        out[op] = ts
    s.end()
    return out


def cold_floor(name, root):
    command, _, file, language, (line, character) = SERVERS[name]
    ts = []
    for _ in range(K):
        t = time.perf_counter()
        s = Lsp(command, root)
        doc = s.start(root, file, language)
        s.request("textDocument/definition", {"textDocument": {"uri": doc}, "position": {"line": line, "character": character}})
        ts.append(time.perf_counter() - t)
        s.end()
    return ts


def tool_args(name, root, op):
    _, _, file, _, (line, character) = SERVERS[name]
    return {"operation": op, "filePath": os.path.join(root, file), "line": line + 1, "character": character + 1}


def serve(name, root, home, expected):
    p = subprocess.Popen([TOOLBELT, "mcp", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, cwd=root, env=env(home))
    ids = iter(range(1, 10 ** 9))

    def rpc(method, params):
        i = next(ids)
        p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode()); p.stdin.flush()
        while True:
            m = json.loads(p.stdout.readline())
            if m.get("id") == i and "method" not in m: return m

    rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}})
    p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'); p.stdin.flush()
    tools = rpc("tools/list", {})["result"]["tools"]
    lsp = [t for t in tools if t["name"] == "lsp"][0]
    out = {"annotations": lsp.get("annotations")}
    for op, _, _ in OPS:
        call = {"name": "lsp", "arguments": tool_args(name, root, op)}
        # Warm: the first call starts the server; an indexing server is asked until it
        # answers what the floor got.
        deadline = time.time() + 300
        while True:
            r = rpc("tools/call", call)
            out[op + "_answer"] = r["result"]["content"][0]["text"].splitlines()[0]
            if out[op + "_answer"].startswith(f"{expected[op]} ") or time.time() > deadline:
                break
        ts = []
        for _ in range(N):
            t = time.perf_counter(); rpc("tools/call", call); ts.append(time.perf_counter() - t)
        out[op] = ts
    out["peak_rss"] = vm_hwm(p.pid)
    p.stdin.close(); p.wait()
    return out


def vm_hwm(pid):
    try:
        status = open(f"/proc/{pid}/status").read()
    except OSError:
        return None
    if "VmHWM:" not in status:  # a zombie: its memory is gone
        return None
    return int(status.split("VmHWM:")[1].split()[0])  # KiB


def tools_call(name, root, home):
    out = {}
    for op, _, _ in OPS:
        args = json.dumps(tool_args(name, root, op))
        ts = []
        for _ in range(K):
            t = time.perf_counter()
            r = subprocess.run([TOOLBELT, "tools", "call", "lsp", args], cwd=root, env=env(home), capture_output=True)
            ts.append(time.perf_counter() - t)
            assert r.returncode == 0, r.stdout + r.stderr
        out[op] = ts
        out[op + "_answer"] = r.stdout.decode().splitlines()[0]
    # One more call, its memory sampled while it runs.
    p = subprocess.Popen([TOOLBELT, "tools", "call", "lsp", json.dumps(tool_args(name, root, "findReferences"))],
                         cwd=root, env=env(home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while p.poll() is None:
        peak = max(peak, vm_hwm(p.pid) or 0)
        time.sleep(0.002)
    out["peak_rss"] = peak
    return out


def main():
    print(f"toolbelt {TOOLBELT}; N={N} warm requests per operation, K={K} cold runs; {FILES + 1} source files per project")
    for name, (command, *_rest) in SERVERS.items():
        if ONLY and name not in ONLY:
            continue
        if not os.path.isfile(command[0]):
            print(f"\n{name}: skipped ({command[0]} not found)")
            continue
        root, home = project(name)
        f = floor(name, root)
        s = serve(name, root, home, {op: f[op + "_results"] for op, _, _ in OPS})
        c = tools_call(name, root, home)
        cf = cold_floor(name, root)
        print(f"\n{name} ({command[0]})")
        for op, _, _ in OPS:
            print(f"  {op}: floor {stats(f[op])} ({f[op + '_results']} results); "
                  f"mcp serve {stats(s[op])} ({s[op + '_answer']!r})")
            print(f"  {op}: tools call (new toolbelt and new server each time) {cold_stats(c[op])} ({c[op + '_answer']!r})")
        print(f"  cold start to first answer: floor {cold_stats(cf)}; toolbelt tools call goToDefinition {cold_stats(c['goToDefinition'])}")
        print(f"  toolbelt peak RSS (VmHWM): mcp serve after {2 * (N + 1)} calls {s['peak_rss'] / 1024:.1f} MiB; "
              f"one tools call {c['peak_rss'] / 1024:.1f} MiB")
        print(f"  mcp serve lsp annotations: {s['annotations']}")


main()
