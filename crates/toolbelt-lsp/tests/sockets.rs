#![allow(clippy::too_many_lines)]
//! Language servers over a socket (`"transport": "tcp"` or `"socket"`): a real pyright
//! behind a small bridge that listens on a socket and speaks to `pyright-langserver
//! --stdio` for each connection, so the protocol is real and so is the socket. The
//! bridge either already listens (toolbelt connects, and leaves it running) or is started
//! from `command` (toolbelt retries until it listens, and ends it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{Workspace, call, group_alive, ok, pyright, read_pid};
use serde_json::json;

/// `bridge.py STATE tcp|unix PATH SERVER...`: listens on 127.0.0.1 (port PATH, or with
/// `-` any port, printed on stdout) or on the Unix socket PATH; for each connection runs SERVER on pipes and
/// copies bytes both ways; when the connection ends, ends SERVER and prints `ended`.
/// Writes its pid to STATE/bridge.pid and each SERVER's to STATE/server.pid.
const BRIDGE: &str = r#"
import os, socket, subprocess, sys, threading
state, kind, path, server = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
with open(os.path.join(state, "bridge.pid"), "w") as f: f.write(str(os.getpid()))
if kind == "tcp":
    listener = socket.socket(); listener.bind(("127.0.0.1", 0 if path == "-" else int(path)))
else:
    listener = socket.socket(socket.AF_UNIX); listener.bind(path)
listener.listen()
if kind == "tcp": print(listener.getsockname()[1], flush=True)
while True:
    conn, _ = listener.accept()
    p = subprocess.Popen(server, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    with open(os.path.join(state, "server.pid"), "w") as f: f.write(str(p.pid))
    def up():
        while True:
            data = conn.recv(65536)
            if not data: break
            p.stdin.write(data); p.stdin.flush()
        p.kill()
    threading.Thread(target=up, daemon=True).start()
    while True:
        data = p.stdout.read1(65536)
        if not data: break
        conn.sendall(data)
    p.wait(); conn.close()
    print("ended", flush=True)
"#;

const LIB: &str = "def greet(name: str) -> str:\n    return 'hi ' + name\n";
const MAIN: &str = "from lib import greet\n\nprint(greet('a'))\nprint(greet('b'))\n";

fn project(ws: &Workspace) -> std::path::PathBuf {
    ws.write("lib.py", LIB);
    ws.write("main.py", MAIN);
    let state = ws.dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    ws.write("bridge.py", BRIDGE)
}

async fn definition_and_references(ws: &Workspace, tool: &toolbelt_lsp::LspTool) {
    let def = ok(
        ws,
        tool,
        json!({"operation": "goToDefinition", "filePath": "main.py", "line": 3, "character": 7}),
    )
    .await;
    assert!(
        def.contains("lib.py:1:5: def greet(name: str) -> str:"),
        "{def}"
    );
    let refs = ok(
        ws,
        tool,
        json!({"operation": "findReferences", "filePath": "lib.py", "line": 1, "character": 5}),
    )
    .await;
    assert!(
        refs.contains("main.py:3:7: print(greet('a'))")
            && refs.contains("main.py:4:7: print(greet('b'))"),
        "{refs}"
    );
}

/// Lines the bridge prints, read on a thread so a test can wait for one with a limit.
fn lines_of(stdout: std::process::ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_already_listening_on_tcp_is_connected_to_and_left_running() {
    let Some(bin) = pyright() else { return };
    let ws = Workspace::new();
    let bridge = project(&ws);
    let state = ws.dir.path().join("state");
    let mut listening = Command::new("python3")
        .arg(&bridge)
        .arg(&state)
        .args(["tcp", "-"])
        .arg(&bin)
        .arg("--stdio")
        .current_dir(&ws.root)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = lines_of(listening.stdout.take().unwrap());
    let port: u16 = lines
        .recv_timeout(Duration::from_secs(30))
        .unwrap()
        .parse()
        .unwrap();
    // `localhost` is resolved, and every address it has is this machine's.
    let lsp_json = json!({"python": {
        "transport": "tcp", "socket": {"host": "localhost", "port": port},
        "extensionToLanguage": {".py": "python"}, "startupTimeout": 60000
    }});
    let (tool, servers) = ws.tool(&lsp_json.to_string());
    definition_and_references(&ws, &tool).await;
    let server = read_pid(&state.join("server.pid"));

    // Ending the servers closes the connection; the bridge ends its pyright, and the
    // bridge itself (not toolbelt's) keeps listening.
    servers.shutdown().await;
    assert_eq!(
        lines.recv_timeout(Duration::from_secs(30)).as_deref(),
        Ok("ended")
    );
    assert!(!group_alive(server), "pyright behind the bridge ended");
    assert_eq!(listening.try_wait().unwrap(), None, "the bridge still runs");
    listening.kill().unwrap();
    listening.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_started_from_its_command_is_connected_to_once_it_listens_and_ended() {
    let Some(bin) = pyright() else { return };
    // A port nobody uses now (the listener is closed again before the bridge binds it).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for transport in ["socket", "tcp"] {
        let ws = Workspace::new();
        let bridge = project(&ws);
        let state = ws.dir.path().join("state");
        let socket = ws.dir.path().join("pyright.sock");
        let (kind, at, place) = match transport {
            "tcp" => (
                "tcp",
                port.to_string(),
                json!({"host": "127.0.0.1", "port": port}),
            ),
            _ => (
                "unix",
                socket.display().to_string(),
                json!({"path": socket}),
            ),
        };
        let lsp_json = json!({"python": {
            "command": "python3",
            "args": [bridge, state, kind, at, bin, "--stdio"],
            "transport": transport, "socket": place,
            "extensionToLanguage": {".py": "python"}, "startupTimeout": 60000
        }});
        let (tool, servers) = ws.tool(&lsp_json.to_string());
        definition_and_references(&ws, &tool).await;
        let listed = servers.states().await;
        assert_eq!(listed[0].1, toolbelt_lsp::ServerState::Running);
        let bridge_pid = read_pid(&state.join("bridge.pid"));
        let server = read_pid(&state.join("server.pid"));
        assert!(group_alive(bridge_pid));
        servers.shutdown().await;
        assert!(
            !group_alive(bridge_pid),
            "{transport}: the bridge toolbelt started ended"
        );
        let alive = toolbelt_process::procfs::stat(server).is_some_and(|s| s.is_alive());
        assert!(!alive, "{transport}: so did the pyright it ran");
    }
}

fn socket_config(ws: &Workspace, command: &[&str], socket: &Path, startup_ms: u64) -> String {
    json!({"fake": {
        "command": command[0], "args": &command[1..],
        "transport": "socket", "socket": {"path": socket},
        "extensionToLanguage": {".py": "python"}, "startupTimeout": startup_ms
    }})
    .to_string()
    .replace("$ROOT", &ws.root.to_string_lossy())
}

#[tokio::test]
async fn a_server_that_never_listens_fails_within_its_startup_timeout_and_is_ended() {
    let ws = Workspace::new();
    ws.write("main.py", "x = 1\n");
    let script = "echo $$ > $ROOT/server.pid; exec sleep 300";
    let socket = ws.dir.path().join("never.sock");
    let (tool, _servers) = ws.tool(&socket_config(&ws, &["sh", "-c", script], &socket, 3000));
    let started = Instant::now();
    let result = call(
        &tool,
        &ws,
        json!({"operation": "hover", "filePath": "main.py", "line": 1, "character": 1}),
    )
    .await;
    let text = result.llm_text();
    assert!(result.is_error(), "{text}");
    assert!(
        text.contains("cannot connect to the language server `fake` at")
            && text.contains("within its startupTimeout of 3000 ms"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(15));
    let pid = read_pid(&ws.root.join("server.pid"));
    assert!(
        !group_alive(pid),
        "the program that never listened was ended"
    );
}

#[tokio::test]
async fn a_server_that_exits_before_it_listens_says_so_with_its_error_output() {
    let ws = Workspace::new();
    ws.write("main.py", "x = 1\n");
    let socket = ws.dir.path().join("never.sock");
    let script = "echo 'cannot bind: permission denied' >&2; exit 3";
    let (tool, _servers) = ws.tool(&socket_config(&ws, &["sh", "-c", script], &socket, 30_000));
    let started = Instant::now();
    let result = call(
        &tool,
        &ws,
        json!({"operation": "hover", "filePath": "main.py", "line": 1, "character": 1}),
    )
    .await;
    let text = result.llm_text();
    assert!(result.is_error(), "{text}");
    assert!(
        text.contains("`fake` exited (exit status: 3) before it listened")
            && text.contains("cannot bind: permission denied"),
        "{text}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not the startup timeout"
    );
}

#[tokio::test]
async fn nothing_listening_is_a_clear_error_at_once() {
    let ws = Workspace::new();
    ws.write("main.py", "x = 1\n");
    let socket = ws.dir.path().join("nobody.sock");
    let lsp_json = json!({"fake": {
        "transport": "socket", "socket": {"path": socket},
        "extensionToLanguage": {".py": "python"}
    }});
    let (tool, _servers) = ws.tool(&lsp_json.to_string());
    let result = call(
        &tool,
        &ws,
        json!({"operation": "hover", "filePath": "main.py", "line": 1, "character": 1}),
    )
    .await;
    let text = result.llm_text();
    assert!(
        result.is_error() && text.contains("cannot connect to the language server `fake`"),
        "{text}"
    );
}
