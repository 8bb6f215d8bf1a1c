#![allow(clippy::too_many_lines)]
//! The `lsp` tool through the binary: a project's `.lsp.json` starts nothing until the
//! folder is trusted; `lsp list` says why; once trusted, `tools call lsp` answers from
//! pyright (installed by scripts/setup.sh) and the server is gone when toolbelt exits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn pyright() -> Option<PathBuf> {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.cache/lsp/node_modules/.bin/pyright-langserver");
    if bin.is_file() {
        return Some(bin);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "pyright is missing: run scripts/setup.sh"
    );
    eprintln!("skipped: pyright is not installed (run scripts/setup.sh)");
    None
}

fn run(root: &Path, home: &Path, trusted: bool, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolbelt"));
    command
        .args(args)
        .current_dir(root)
        .env("HOME", home)
        .env("TOOLBELT_HOME", home.join(".toolbelt"))
        .env(
            "TOOLBELT_SYSTEM_SETTINGS_PATH",
            home.join("no-system-settings.json"),
        )
        .env_remove("TOOLBELT_LOG")
        .stdin(Stdio::null());
    if trusted {
        command.env("TOOLBELT_TRUST_WORKSPACE", "1");
    } else {
        command.env_remove("TOOLBELT_TRUST_WORKSPACE");
    }
    command.output().unwrap()
}

/// The project's `.lsp.json` runs `bin` (pyright) for `.py` files through a wrapper that
/// records the server's pid (to check it is gone afterwards); returns that pid's file.
fn project_pyright(root: &Path, bin: &Path, startup_ms: u64) -> PathBuf {
    let pid_file = root.join("server.pid");
    let wrapper = root.join("pyright.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho $$ > '{}'\nexec '{}' --stdio\n",
            pid_file.display(),
            bin.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let lsp_json = json!({"python": {"command": wrapper, "extensionToLanguage": {".py": "python"}, "startupTimeout": startup_ms}});
    std::fs::write(root.join(".lsp.json"), lsp_json.to_string()).unwrap();
    pid_file
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_project_lsp_json_runs_only_when_trusted_and_answers_through_tools_call() {
    let Some(bin) = pyright() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let root = root.canonicalize().unwrap();
    std::fs::write(
        root.join("lib.py"),
        "def greet(name: str) -> str:\n    return name\n",
    )
    .unwrap();
    std::fs::write(
        root.join("main.py"),
        "from lib import greet\n\ngreet(\"x\")\n",
    )
    .unwrap();
    let pid_file = project_pyright(&root, &bin, 30000);
    let args = json!({"operation": "goToDefinition", "filePath": root.join("main.py"), "line": 3, "character": 1}).to_string();

    // Untrusted: no server, no tool, and `lsp list` says why.
    let list = run(&root, &home, false, &["lsp", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(listed["servers"], json!([]), "{listed}");
    assert!(
        listed["problems"][0]
            .as_str()
            .unwrap()
            .contains("not trusted"),
        "{listed}"
    );
    let call = run(&root, &home, false, &["tools", "call", "lsp", &args]);
    assert_ne!(call.status.code(), Some(0));
    assert!(!pid_file.exists(), "no server was started");

    // Trusted: listed, then asked.
    let list = run(&root, &home, true, &["lsp", "list"]);
    let shown = text(&list.stdout);
    assert!(
        shown.contains("python (.py)") && shown.contains("not started (starts on first use)"),
        "{shown}"
    );
    let call = run(&root, &home, true, &["tools", "call", "lsp", &args]);
    let out = text(&call.stdout);
    assert_eq!(call.status.code(), Some(0), "{out}{}", text(&call.stderr));
    assert!(
        out.contains("lib.py:1:5: def greet(name: str) -> str:"),
        "{out}"
    );
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        toolbelt_process::live_members(pid).is_empty(),
        "the server's group ended with toolbelt"
    );
}

#[test]
fn mcp_serve_offers_lsp_as_read_only() {
    // No server needs to start for the listing: the configuration alone registers the
    // tool, and a command that does not exist is enough.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let lsp_json = json!({"python": {"command": "pyright-langserver", "args": ["--stdio"], "extensionToLanguage": {".py": "python"}}});
    std::fs::write(root.join(".lsp.json"), lsp_json.to_string()).unwrap();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ];
    let input: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(["mcp", "serve"])
        .current_dir(&root)
        .env("HOME", &home)
        .env("TOOLBELT_HOME", home.join(".toolbelt"))
        .env("TOOLBELT_SYSTEM_SETTINGS_PATH", home.join("none.json"))
        .env("TOOLBELT_TRUST_WORKSPACE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let listing = text(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|m| m["id"] == 2)
        .unwrap_or_else(|| {
            panic!(
                "no tools/list answer: {}{}",
                text(&out.stdout),
                text(&out.stderr)
            )
        });
    let lsp = listing["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "lsp")
        .unwrap_or_else(|| panic!("lsp not offered: {listing}"));
    assert_eq!(lsp["annotations"]["readOnlyHint"], true, "{lsp}");
}

/// `lsp.servers` in the settings: the person's file defines servers (even one on another
/// machine); an untrusted workspace file defines none, and a trusted one only servers on
/// this machine. `lsp list` names the file of each server and of each problem.
#[test]
fn servers_in_the_settings_follow_the_trust_rules_of_lsp_json() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    let home = dir.path().join("home");
    std::fs::create_dir_all(root.join(".qwen")).unwrap();
    std::fs::create_dir_all(home.join(".qwen")).unwrap();
    let root = root.canonicalize().unwrap();
    let user_file = home.join(".qwen/settings.json");
    std::fs::write(
        &user_file,
        json!({"lsp": {"servers": {
            "remote": {"transport": "tcp", "socket": {"host": "10.0.0.7", "port": 2087},
                       "extensionToLanguage": {".r": "r"}}
        }}})
        .to_string(),
    )
    .unwrap();
    let workspace_file = root.join(".qwen/settings.json");
    std::fs::write(
        &workspace_file,
        json!({"lsp": {"servers": {
            "python": {"command": "pyright-langserver", "args": ["--stdio"],
                       "extensionToLanguage": {".py": "python"}},
            "far": {"transport": "tcp", "socket": {"host": "10.0.0.8", "port": 2087},
                    "extensionToLanguage": {".f": "f"}}
        }}})
        .to_string(),
    )
    .unwrap();

    let untrusted = run(&root, &home, false, &["lsp", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&untrusted.stdout).unwrap();
    let names: Vec<&str> = listed["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["remote"], "{listed}");
    assert_eq!(listed["servers"][0]["file"], json!(user_file), "{listed}");
    assert_eq!(
        listed["servers"][0]["runs"], "connects to 10.0.0.7:2087",
        "{listed}"
    );
    let warned = text(&untrusted.stderr);
    assert!(warned.contains("lsp.servers"), "{warned}");

    let trusted = run(&root, &home, true, &["lsp", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&trusted.stdout).unwrap();
    let names: Vec<&str> = listed["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["python", "remote"], "{listed}");
    assert_eq!(listed["servers"][0]["file"], json!(workspace_file));
    let problem = listed["problems"][0].as_str().unwrap();
    assert!(
        problem.contains(&format!(
            "{}: `lsp.servers.far.socket.host` is 10.0.0.8: a project's file may only name this machine",
            workspace_file.display()
        )),
        "{listed}"
    );
}

/// A fresh `tools call write_file` that breaks a type: the edit starts the project's
/// server (trusted folder) and its result names the error. In an untrusted folder the
/// same edit starts nothing. (`--json`: the note is for the model, in `llmContent`.)
#[test]
fn an_edit_in_a_fresh_tools_call_starts_the_server_and_reports_the_error() {
    let Some(bin) = pyright() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(home.join(".qwen")).unwrap();
    let root = root.canonicalize().unwrap();
    // Waiting long enough for a cold pyright on a loaded machine.
    std::fs::write(
        home.join(".qwen/settings.json"),
        json!({"lsp": {"diagnosticsWaitMs": 60000}}).to_string(),
    )
    .unwrap();
    let pid_file = project_pyright(&root, &bin, 60000);
    let edit = json!({"file_path": root.join("lib.py"), "content": "def half(n: int) -> int:\n    return n / 2\n"}).to_string();

    let untrusted = run(
        &root,
        &home,
        false,
        &["tools", "call", "write_file", &edit, "--yes", "--json"],
    );
    let out = text(&untrusted.stdout);
    assert_eq!(
        untrusted.status.code(),
        Some(0),
        "{out}{}",
        text(&untrusted.stderr)
    );
    assert!(!out.contains("language server"), "{out}");
    assert!(!pid_file.exists(), "no server was started");

    let trusted = run(
        &root,
        &home,
        true,
        &["tools", "call", "write_file", &edit, "--yes", "--json"],
    );
    let out = text(&trusted.stdout);
    assert_eq!(
        trusted.status.code(),
        Some(0),
        "{out}{}",
        text(&trusted.stderr)
    );
    assert!(
        out.contains("The language server `python` reports 1 new error(s) after this change:"),
        "{out}"
    );
    assert!(out.contains("lib.py:2:12: return n / 2"), "{out}");
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        toolbelt_process::live_members(pid).is_empty(),
        "the server's group ended with toolbelt"
    );
}

/// A session whose first call is an edit that breaks a type: the model reads the error
/// in that call's result, though nothing asked the server before.
#[test]
fn a_session_s_first_edit_reports_the_error_it_introduced() {
    let Some(bin) = pyright() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(home.join(".qwen")).unwrap();
    let root = root.canonicalize().unwrap();
    std::fs::write(
        home.join(".qwen/settings.json"),
        json!({"lsp": {"diagnosticsWaitMs": 60000}}).to_string(),
    )
    .unwrap();
    let lsp_json = json!({"python": {"command": bin, "args": ["--stdio"], "extensionToLanguage": {".py": "python"}, "startupTimeout": 60000}});
    std::fs::write(root.join(".lsp.json"), lsp_json.to_string()).unwrap();
    let edit = json!({"file_path": root.join("lib.py"), "content": "def half(n: int) -> int:\n    return n / 2\n"});
    let script = dir.path().join("script.jsonl");
    std::fs::write(
        &script,
        format!(
            "{}\n{}\n",
            json!({"tool_calls": [{"id": "w", "name": "write_file", "arguments": edit}]}),
            json!({"text": "done"})
        ),
    )
    .unwrap();
    let args = [
        "--model-replay",
        script.to_str().unwrap(),
        "--allowed-tools",
        "write_file",
        "-o",
        "stream-json",
        "write",
    ];
    let session = run(&root, &home, true, &args);
    let out = text(&session.stdout);
    assert_eq!(
        session.status.code(),
        Some(0),
        "{out}{}",
        text(&session.stderr)
    );
    assert!(
        out.contains("The language server `python` reports 1 new error(s) after this change:")
            && out.contains("lib.py:2:12: return n / 2"),
        "{out}"
    );
}
