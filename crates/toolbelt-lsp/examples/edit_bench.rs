#![allow(clippy::unwrap_used, clippy::expect_used, clippy::too_many_lines)]
//! What diagnostics after edits cost an edit (issue 47), for BENCHMARKS.md: on a project
//! of 21 small Python files with pyright (from `.cache/lsp`, `scripts/setup.sh`), in one
//! process and one run, each measure `RUNS` times, every edit a new content:
//!
//! - bare: `write_file` alone;
//! - checked: `write_file` wrapped by `CheckedEdits` with a warm server;
//! - server: the server's own time for the same change, through the same client: the
//!   file written, `didChange`, and its diagnostics published.
//!
//! What the check adds beyond the server's own time is checked − bare − server. pyright
//! takes a few hundred ms per change and varies by tens, more than the check costs; so
//! `instant` runs the same against a server (a Python script) that publishes empty
//! diagnostics as soon as a document opens or changes, whose own time is a fraction of a
//! millisecond: there checked − bare is what the check adds.
//!
//! Usage: `edit_bench [RUNS] [instant]` (default 100 runs, pyright).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolbelt_config::settings::Settings;
use toolbelt_core::{ExecContext, Tool, ToolEnvironment, WorkspaceRoots};
use toolbelt_lsp::{CheckedEdits, Servers};

fn p50(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

/// A server that answers `initialize` and publishes empty diagnostics at once for every
/// opened or changed document.
const INSTANT: &str = r#"
import json, sys
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
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()
while True:
    msg = read()
    method = msg.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {"textDocumentSync": 1}}})
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
    elif method == "exit":
        sys.exit(0)
    elif method in ("textDocument/didOpen", "textDocument/didChange"):
        uri = msg["params"]["textDocument"]["uri"]
        send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {"uri": uri, "diagnostics": []}})
"#;

fn content(i: usize) -> String {
    format!("from lib import greet\n\ndef f0() -> str:\n    return greet('{i}')\n\nX{i} = {i}\n")
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .map_or(100, |a| a.parse().expect("RUNS is a number"));
    let instant = std::env::args().nth(2).as_deref() == Some("instant");
    let dir = tempfile::tempdir().unwrap();
    let (bin, args) = if instant {
        let script = dir.path().join("instant.py");
        std::fs::write(&script, INSTANT).unwrap();
        (PathBuf::from("python3"), vec![script.display().to_string()])
    } else {
        let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../.cache/lsp/node_modules/.bin/pyright-langserver");
        assert!(
            bin.is_file(),
            "run scripts/setup.sh: {} is missing",
            bin.display()
        );
        (bin, vec!["--stdio".to_string()])
    };
    let root = dir.path().join("project");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    std::fs::write(
        root.join("lib.py"),
        "def greet(name: str) -> str:\n    return 'hi ' + name\n",
    )
    .unwrap();
    for i in 1..21 {
        std::fs::write(
            root.join(format!("m{i}.py")),
            format!("from lib import greet\n\ndef f{i}() -> str:\n    return greet('{i}')\n"),
        )
        .unwrap();
    }
    let file = root.join("m0.py");
    std::fs::write(&file, content(0)).unwrap();
    let lsp_json = json!({"python": {"command": bin, "args": args,
        "extensionToLanguage": {".py": "python"}, "startupTimeout": 60000}})
    .to_string();
    let configs = toolbelt_lsp::parse_lsp_json(&lsp_json, &root.join(".lsp.json"), &root).unwrap();
    let servers = Arc::new(Servers::new(configs.clone(), root.clone()));
    let roots = WorkspaceRoots::new([&root]).unwrap();
    let env = Arc::new(ToolEnvironment::new(
        roots,
        Arc::new(Settings::default()),
        dir.path().join("session"),
    ));
    let bare: Arc<dyn Tool> = Arc::new(toolbelt_tools::WriteFile::new(env.clone()));
    let checked = CheckedEdits::new(
        bare.clone(),
        env.clone(),
        servers.clone(),
        Duration::from_secs(20),
    );
    let mut n = 1;
    let mut edit = |tool: &dyn Tool| {
        n += 1;
        let args = json!({"file_path": file, "content": content(n)});
        let call = tool.build(args).unwrap();
        let env = env.clone();
        async move {
            let t = Instant::now();
            let result = call.execute(ExecContext::new(env)).await;
            assert!(!result.is_error(), "{}", result.llm_text());
            t.elapsed()
        }
    };
    // The first checked edit starts the server; a few more warm it.
    let cold = edit(&checked).await;
    for _ in 0..5 {
        edit(&checked).await;
    }
    let client = servers.client(&configs[0]).await.unwrap();
    let (mut b, mut c, mut s) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..runs {
        b.push(edit(bare.as_ref()).await);
        c.push(edit(&checked).await);
        let text = content(1_000_000 + i);
        let t = Instant::now();
        std::fs::write(&file, &text).unwrap();
        let uri = client.sync_document(&file, "python", &text).await.unwrap();
        client
            .diagnostics_for(&uri, Duration::from_secs(20))
            .await
            .unwrap();
        s.push(t.elapsed());
    }
    let (b, c, s) = (p50(b), p50(c), p50(s));
    let server = if instant {
        "the instant server"
    } else {
        "pyright"
    };
    println!(
        "first checked edit (starts {server}): {:.1} ms",
        cold.as_secs_f64() * 1000.0
    );
    println!("{runs} edits each, p50: bare {b:.2} ms, checked {c:.2} ms, server {s:.2} ms");
    println!("added beyond the server's own time: {:.2} ms", c - b - s);
    servers.shutdown().await;
}
