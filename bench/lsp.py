#!/usr/bin/env python3
"""The `lsp` tool's latency (issue 32): goToDefinition and findReferences on a warm
pyright, sent straight to the server (the floor) and through `toolbelt mcp serve`, in the
same run; cold start to first answer through `toolbelt tools call`; toolbelt's peak RSS.

Usage: bench/lsp.py <toolbelt binary> <pyright-langserver> [N]
"""
import json, os, subprocess, sys, tempfile, time

TOOLBELT, PYRIGHT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
N = int(sys.argv[3]) if len(sys.argv) > 3 else 200

def project():
    d = tempfile.mkdtemp()
    root = os.path.realpath(os.path.join(d, "project"))
    home = os.path.join(d, "home")
    os.makedirs(root); os.makedirs(home)
    for i in range(20):
        with open(f"{root}/m{i}.py", "w") as f:
            f.write(f"from lib import greet\n\ndef f{i}() -> str:\n    return greet('{i}')\n")
    with open(f"{root}/lib.py", "w") as f:
        f.write("def greet(name: str) -> str:\n    return 'hi ' + name\n")
    with open(f"{root}/.lsp.json", "w") as f:
        json.dump({"python": {"command": PYRIGHT, "args": ["--stdio"],
                              "extensionToLanguage": {".py": "python"}, "startupTimeout": 60000}}, f)
    return root, home

def env(home):
    e = dict(os.environ, HOME=home, TOOLBELT_HOME=home + "/.toolbelt", TOOLBELT_TRUST_WORKSPACE="1")
    e.pop("TOOLBELT_LOG", None)
    return e

def stats(xs):
    xs = sorted(xs)
    return f"p50 {xs[len(xs)//2]*1e3:.2f} ms, p90 {xs[int(len(xs)*0.9)]*1e3:.2f} ms"

class Lsp:
    def __init__(self, root):
        self.p = subprocess.Popen([PYRIGHT, "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=root)
        self.id = 0
    def send(self, msg):
        body = json.dumps(msg).encode()
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body); self.p.stdin.flush()
    def read(self):
        n = 0
        while True:
            line = self.p.stdout.readline().strip()
            if not line: break
            if line.lower().startswith(b"content-length"): n = int(line.split(b":")[1])
        return json.loads(self.p.stdout.read(n))
    def request(self, method, params):
        self.id += 1
        self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        while True:
            m = self.read()
            if m.get("id") == self.id and "method" not in m: return m
            if "method" in m and "id" in m:
                self.send({"jsonrpc": "2.0", "id": m["id"], "result": None})

def floor(root):
    s = Lsp(root)
    uri = "file://" + root
    s.request("initialize", {"processId": os.getpid(), "rootUri": uri, "capabilities": {},
                             "workspaceFolders": [{"uri": uri, "name": "p"}]})
    s.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    text = open(root + "/m0.py").read()
    s.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri + "/m0.py", "languageId": "python", "version": 1, "text": text}}})
    pos = {"textDocument": {"uri": uri + "/m0.py"}, "position": {"line": 3, "character": 12}}
    out = {}
    for name, method, extra in [("goToDefinition", "textDocument/definition", {}),
                                ("findReferences", "textDocument/references", {"context": {"includeDeclaration": True}})]:
        s.request(method, dict(pos, **extra))  # warm
        ts = []
        for _ in range(N):
            t = time.perf_counter(); s.request(method, dict(pos, **extra)); ts.append(time.perf_counter() - t)
        out[name] = ts
    s.p.kill(); s.p.wait()
    return out

def serve(root, home):
    p = subprocess.Popen([TOOLBELT, "mcp", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, cwd=root, env=env(home))
    ids = iter(range(1, 10**9))
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
    for name, extra in [("goToDefinition", {}), ("findReferences", {})]:
        args = dict({"operation": name, "filePath": root + "/m0.py", "line": 4, "character": 13}, **extra)
        r = rpc("tools/call", {"name": "lsp", "arguments": args})  # warm (starts the server)
        out[name + "_answer"] = r["result"]["content"][0]["text"].splitlines()[:2]
        ts = []
        for _ in range(N):
            t = time.perf_counter(); rpc("tools/call", {"name": "lsp", "arguments": args}); ts.append(time.perf_counter() - t)
        out[name] = ts
    rss = open(f"/proc/{p.pid}/status").read().split("VmHWM:")[1].split("\n")[0].strip()
    out["toolbelt_peak_rss"] = rss
    p.stdin.close(); p.wait()
    return out

def cold(root, home):
    args = json.dumps({"operation": "goToDefinition", "filePath": root + "/m0.py", "line": 4, "character": 13})
    ts = []
    for _ in range(5):
        t = time.perf_counter()
        r = subprocess.run([TOOLBELT, "tools", "call", "lsp", args], cwd=root, env=env(home), capture_output=True)
        ts.append(time.perf_counter() - t)
        assert r.returncode == 0, r.stderr
    return ts

root, home = project()
f = floor(root)
s = serve(root, home)
c = cold(root, home)
print(f"N={N} warm requests each; pyright {PYRIGHT}")
for op in ["goToDefinition", "findReferences"]:
    print(f"{op}: floor (straight to pyright) {stats(f[op])}; through mcp serve {stats(s[op])}; answer {s[op + '_answer']}")
print(f"cold start to first answer (toolbelt tools call, pyright started each time): {stats(c)} over {len(c)} runs")
print(f"mcp serve: lsp annotations {s['annotations']}; toolbelt peak RSS (VmHWM) {s['toolbelt_peak_rss']}")
