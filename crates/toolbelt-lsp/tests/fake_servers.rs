#![allow(clippy::too_many_lines)]
//! Servers that misbehave (never answer, crash on the first request, print garbage on
//! stdout): each gives a clear error within its time limit and leaves no process behind,
//! not even the child it started.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{Workspace, call, group_alive, read_pid};
use serde_json::json;

/// A Python script that writes its pid (its group) and a child's pid, then behaves as
/// `mode` says.
const FAKE: &str = r#"
import json, os, subprocess, sys, threading
mode = sys.argv[1]
lock = threading.Lock()
loaded = threading.Event()
child = subprocess.Popen(["sleep", "300"])
with open("server.pid", "w") as f: f.write(str(os.getpid()))
with open("child.pid", "w") as f: f.write(str(child.pid))
def read():
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line: sys.exit(0)
        line = line.strip()
        if not line: break
        if line.lower().startswith(b"content-length:"): length = int(line.split(b":")[1])
    return json.loads(sys.stdin.buffer.read(length))
def send(msg):
    body = json.dumps(msg).encode()
    with lock:
        sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        sys.stdout.buffer.flush()
def progress(kind):
    send({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": "load", "value": {"kind": kind, "title": "Loading"}}})
def finish_loading():
    loaded.set()
    progress("end")
if mode == "garbage":
    sys.stdout.write("Traceback: this is not LSP\n\n"); sys.stdout.flush()
while True:
    msg = read()
    if mode == "silent": continue
    if msg.get("method") == "textDocument/didOpen" and mode in ("progress", "indexing"):
        # Loading the project takes a while, reported as work in progress ("indexing":
        # after the open file's diagnostics, as clangd's background index does).
        send({"jsonrpc": "2.0", "id": "create", "method": "window/workDoneProgress/create", "params": {"token": "load"}})
        progress("begin")
        if mode == "indexing":
            uri = msg["params"]["textDocument"]["uri"]
            send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {"uri": uri, "diagnostics": []}})
        threading.Timer(0.4, finish_loading).start()
    elif msg.get("method") == "textDocument/didOpen" and mode != "quiet":
        uri = msg["params"]["textDocument"]["uri"]
        send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {"uri": uri, "diagnostics": []}})
    elif msg.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {"definitionProvider": True, "workspaceSymbolProvider": True}}})
    elif msg.get("method") == "initialized" and mode == "never-indexed":
        # Indexing the project, reported as work in progress that never ends.
        progress("begin")
    elif msg.get("method") == "workspace/symbol":
        # "symbols-later": indexing without a word of progress (as pyright), logging as it
        # goes; `workspace/symbol` finds nothing before the third question.
        asked = globals().get("asked", 0) + 1
        globals()["asked"] = asked
        found = []
        if mode == "symbols-later" and asked < 3:
            send({"jsonrpc": "2.0", "method": "window/logMessage", "params": {"type": 3, "message": "indexing"}})
        if mode == "symbols-later" and asked >= 3:
            where = {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 10}}
            uri = "file://" + os.getcwd() + "/main.py"
            found = [{"name": "settle", "kind": 12, "location": {"uri": uri, "range": where}}]
        send({"jsonrpc": "2.0", "id": msg["id"], "result": found})
    elif "id" in msg and mode == "crash":
        sys.stderr.write("fake: segmentation fault\n"); sys.stderr.flush()
        os._exit(139)
    elif "id" in msg and mode == "slow":
        pass
    elif msg.get("method") == "textDocument/definition":
        # Line 2 once the project is loaded, line 1 (what the open file alone says) before.
        line = 1 if loaded.is_set() or mode == "quiet" else 0
        where = {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 1}}
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"uri": msg["params"]["textDocument"]["uri"], "range": where}})
"#;

/// The fake server in `mode`. Its startup timeout is short where a test waits it out
/// (a server that never answers, one that never says it loaded) and long elsewhere, so a
/// loaded machine starting Python slowly fails nothing.
fn config(ws: &Workspace, mode: &str) -> String {
    let script = ws.write("fake_server.py", FAKE);
    let startup = match mode {
        // Long enough for Python to start (and write its pids) on a loaded machine.
        "silent" => 5000,
        "quiet" | "never-indexed" => 4000,
        _ => 30_000,
    };
    json!({"fake": {
        "command": "python3",
        "args": [script, mode],
        "extensionToLanguage": {".py": "python"},
        "startupTimeout": startup,
        "shutdownTimeout": 500
    }})
    .to_string()
}

fn definition_args() -> serde_json::Value {
    json!({"operation": "goToDefinition", "filePath": "main.py", "line": 1, "character": 1})
}

fn assert_nothing_left(ws: &Workspace) {
    let server = read_pid(&ws.root.join("server.pid"));
    let child = read_pid(&ws.root.join("child.pid"));
    assert!(!group_alive(server), "the server's group is gone");
    let alive = toolbelt_process::procfs::stat(child).is_some_and(|s| s.is_alive());
    assert!(!alive, "the server's child {child} was ended too");
}

#[tokio::test]
async fn a_server_that_never_answers_fails_within_its_startup_timeout() {
    let ws = Workspace::new();
    ws.write("main.py", "x = 1\n");
    let (tool, _servers) = ws.tool(&config(&ws, "silent"));
    let started = Instant::now();
    let result = call(&tool, &ws, definition_args()).await;
    let took = started.elapsed();
    let text = result.llm_text();
    assert!(result.is_error(), "{text}");
    assert!(
        text.contains("`fake` did not start")
            && text.contains("did not answer `initialize` within 5000 ms"),
        "{text}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_nothing_left(&ws);
}

#[tokio::test]
async fn a_server_that_crashes_on_the_first_request_is_reported_with_its_stderr() {
    let ws = Workspace::new();
    ws.write("main.py", "x = 1\n");
    let (tool, servers) = ws.tool(&config(&ws, "crash"));
    let result = call(&tool, &ws, definition_args()).await;
    let text = result.llm_text();
    assert!(result.is_error(), "{text}");
    assert!(
        text.contains("`fake` exited") && text.contains("segmentation fault"),
        "{text}"
    );
    // Without restartOnCrash the next call says so instead of starting it again.
    let again = call(&tool, &ws, definition_args()).await.llm_text();
    assert!(again.contains("restartOnCrash"), "{again}");
    servers.shutdown().await;
    assert_nothing_left(&ws);
}

#[tokio::test]
async fn a_crashed_server_is_restarted_up_to_max_restarts() {
    let ws = Workspace::new();
    ws.write("main.py", "x = 1\n");
    let script = ws.write("fake_server.py", FAKE);
    let lsp_json = json!({"fake": {"command": "python3", "args": [script, "crash"],
        "extensionToLanguage": {".py": "python"}, "restartOnCrash": true, "maxRestarts": 1}})
    .to_string();
    let (tool, servers) = ws.tool(&lsp_json);
    let first = call(&tool, &ws, definition_args()).await.llm_text();
    assert!(first.contains("exited"), "{first}");
    let second = call(&tool, &ws, definition_args()).await.llm_text();
    assert!(
        second.contains("exited") && !second.contains("maxRestarts"),
        "restarted once: {second}"
    );
    let third = call(&tool, &ws, definition_args()).await.llm_text();
    assert!(
        third.contains("restarted 1 times already (`maxRestarts`)"),
        "{third}"
    );
    servers.shutdown().await;
    assert_nothing_left(&ws);
}

#[tokio::test]
async fn a_server_that_prints_garbage_on_stdout_is_a_clear_error() {
    let ws = Workspace::new();
    ws.write("main.py", "x = 1\n");
    let (tool, _servers) = ws.tool(&config(&ws, "garbage"));
    let started = Instant::now();
    let result = call(&tool, &ws, definition_args()).await;
    let text = result.llm_text();
    assert!(result.is_error(), "{text}");
    assert!(text.contains("not an LSP message"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "it fails at once, not at the startup timeout (30 s)"
    );
    assert_nothing_left(&ws);
}

#[tokio::test]
async fn a_request_the_server_never_answers_fails_within_request_timeout() {
    let ws = Workspace::new();
    ws.write("main.py", "x = 1\n");
    let script = ws.write("fake_server.py", FAKE);
    let lsp_json = json!({"fake": {"command": "python3", "args": [script, "slow"],
        "extensionToLanguage": {".py": "python"}, "requestTimeout": 700, "shutdownTimeout": 300}})
    .to_string();
    let (tool, servers) = ws.tool(&lsp_json);
    let started = Instant::now();
    let result = call(&tool, &ws, definition_args()).await;
    let text = result.llm_text();
    assert!(result.is_error(), "{text}");
    assert!(
        text.contains("`fake` did not answer `textDocument/definition` within 700 ms"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    servers.shutdown().await;
    assert_nothing_left(&ws);
}

#[tokio::test]
async fn dropping_the_servers_ends_a_running_server_and_its_children() {
    let ws = Workspace::new();
    ws.write("main.py", "x = 1\n");
    let (tool, servers) = ws.tool(&config(&ws, "slow"));
    let config = servers.configs()[0].clone();
    let client = servers.client(&config).await.expect("the server starts");
    let server = read_pid(&ws.root.join("server.pid"));
    assert!(group_alive(server), "the server runs");
    drop(client);
    drop(tool);
    drop(servers);
    assert_nothing_left(&ws);
}

/// A server answers before it loaded the project (typescript-language-server does): the
/// first question waits for the end of the work it reported in progress.
#[tokio::test]
async fn the_first_question_waits_for_the_work_the_server_reported_to_end() {
    let ws = Workspace::new();
    ws.write(
        "main.py",
        "from_this_file_alone = 1\nwith_the_project = 1\n",
    );
    let (tool, servers) = ws.tool(&config(&ws, "progress"));
    let answer = call(&tool, &ws, definition_args()).await;
    let text = answer.llm_text();
    assert!(
        !answer.is_error() && text.contains("main.py:2:1: with_the_project = 1"),
        "{text}"
    );
    servers.shutdown().await;
    assert_nothing_left(&ws);
}

/// A server that neither publishes diagnostics nor reports progress is asked anyway,
/// once its startupTimeout has passed.
#[tokio::test]
async fn a_server_that_says_nothing_of_its_loading_is_asked_after_its_startup_timeout() {
    let ws = Workspace::new();
    ws.write("main.py", "x = 1\ny = 2\n");
    let (tool, servers) = ws.tool(&config(&ws, "quiet"));
    let started = Instant::now();
    let answer = call(&tool, &ws, definition_args()).await;
    let text = answer.llm_text();
    assert!(
        !answer.is_error() && text.contains("main.py:2:1: y = 2"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    // Only the first question waits (4 s): the second is a round trip.
    let again = Instant::now();
    let answer = call(&tool, &ws, definition_args()).await;
    assert!(!answer.is_error(), "{}", answer.llm_text());
    assert!(
        again.elapsed() < Duration::from_millis(3000),
        "{:?}",
        again.elapsed()
    );
    servers.shutdown().await;
    assert_nothing_left(&ws);
}

/// A server still indexing answers `workspace/symbol` with nothing: the first question is
/// asked again until the index is done, and the answer is the symbol.
#[tokio::test]
async fn an_empty_answer_while_the_server_indexes_is_asked_again() {
    let ws = Workspace::new();
    ws.write("main.py", "def settle():\n    pass\n");
    let (tool, servers) = ws.tool(&config(&ws, "symbols-later"));
    let found = call(
        &tool,
        &ws,
        json!({"operation": "workspaceSymbol", "query": "settle"}),
    )
    .await
    .llm_text();
    assert!(found.contains("Function settle — main.py:1:5"), "{found}");
    servers.shutdown().await;
}

/// A server whose indexing never ends within `startupTimeout`: the empty answer is given,
/// saying so, once the startup window is over.
#[tokio::test]
async fn an_empty_answer_from_a_server_still_indexing_says_so() {
    let ws = Workspace::new();
    ws.write("main.py", "def settle():\n    pass\n");
    let (tool, servers) = ws.tool(&config(&ws, "never-indexed"));
    let started = Instant::now();
    let result = call(
        &tool,
        &ws,
        json!({"operation": "workspaceSymbol", "query": "settle"}),
    )
    .await;
    let text = result.llm_text();
    assert!(!result.is_error(), "{text}");
    assert!(
        text.contains("No symbol matches \"settle\".")
            && text.contains("`fake` was still indexing the project"),
        "{text}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "bounded by startupTimeout"
    );
    servers.shutdown().await;
}
