#![allow(clippy::too_many_lines)]
//! The binary with MCP servers and discovered tools: `toolbelt mcp list`, `tools list`,
//! `tools call`, `--mcp-config`, `--allowed-mcp-server-names`, the public reference
//! server `@modelcontextprotocol/server-everything` when `scripts/setup.sh` installed it,
//! and `mcp auth`/`mcp logout` against an OAuth-protected server (`oauth`).

// Test helpers outside #[test] functions may unwrap: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod everything_http;
mod oauth;
mod resources;
mod server_asks;
mod slow_start;

fn toolbelt() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_toolbelt"))
}

/// The `mcp_testserver` example of `toolbelt-mcp`, built by `cargo test --workspace`.
fn testserver() -> String {
    let path = toolbelt()
        .parent()
        .unwrap()
        .join("examples")
        .join("mcp_testserver");
    assert!(
        path.exists(),
        "{} is missing: run `cargo test --workspace` (or `cargo build -p toolbelt-mcp --examples`) first",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new(settings: Value) -> Project {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("project/.qwen")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::write(
            dir.path().join("project/.qwen/settings.json"),
            serde_json::to_string_pretty(&settings).unwrap(),
        )
        .unwrap();
        Project { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut command: Command = self.command(args).into_std();
        command.output().unwrap()
    }

    /// The binary in the project with its own HOME and TOOLBELT_HOME, output piped.
    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(toolbelt());
        command
            .args(args)
            .current_dir(self.root())
            .env("HOME", self.dir.path().join("home"))
            .env("TOOLBELT_HOME", self.dir.path().join("home/.toolbelt"))
            // What workspace settings do; `cli_trust.rs` covers an untrusted folder.
            .env("TOOLBELT_TRUST_WORKSPACE", "1")
            .env(
                "TOOLBELT_SYSTEM_SETTINGS_PATH",
                self.dir.path().join("no-system-settings.json"),
            )
            .env_remove("TOOLBELT_LOG")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_MODEL")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        command
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn mcp_list_names_each_failure_and_waits_only_for_the_timeout() {
    let project = Project::new(json!({"mcpServers": {
        "healthy": {"command": testserver()},
        "missing": {"command": "/nonexistent/mcp-server"},
        "hangs": {"command": testserver(), "args": ["silent"], "startupTimeout": 4000},
        "hangs2": {"command": testserver(), "args": ["silent"], "startupTimeout": 4000},
        "hangs3": {"command": testserver(), "args": ["silent"], "startupTimeout": 4000}
    }}));
    let started = Instant::now();
    let out = project.run(&["mcp", "list"]);
    let elapsed = started.elapsed();
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    // Three silent servers with 4 s timeouts: in parallel the wait is one timeout, in
    // sequence 12 s. The upper bound leaves a loaded machine 6 s of slack.
    assert!(elapsed >= Duration::from_secs(4), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    let line = |alias: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{alias} (")))
            .unwrap_or_else(|| panic!("no line for {alias} in:\n{text}"))
            .to_string()
    };
    assert!(line("healthy").ends_with(": connected"), "{text}");
    assert!(
        text.contains("  mcp__healthy__echo  Echoes the message back."),
        "{text}"
    );
    assert!(
        line("missing").contains("failed: cannot start `/nonexistent/mcp-server`"),
        "{text}"
    );
    assert!(
        line("hangs").contains("failed: no answer within 4 s (startupTimeout)"),
        "{text}"
    );
}

/// README's client configuration for Qwen Code (`toolbelt mcp serve` in
/// `~/.qwen/settings.json`) is read by toolbelt too: its own server is left out, with a
/// note, so a session does not offer its tools twice.
#[test]
fn toolbelts_own_mcp_serve_is_left_out_with_a_note() {
    let project = Project::new(json!({"mcpServers": {
        "toolbelt": {"command": "toolbelt", "args": ["mcp", "serve"]},
        "itself": {"command": toolbelt(), "args": ["mcp", "serve"]},
        "t": {"command": testserver(), "includeTools": ["echo"]}
    }}));
    let out = project.run(&["mcp", "list", "--json"]);
    let servers: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<&str> = servers
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["t"], "{servers}");
    let err = stderr(&out);
    for alias in ["toolbelt", "itself"] {
        assert!(
            err.contains(&format!("\"{alias}\" left out: it is toolbelt's own")),
            "{err}"
        );
    }
}

#[test]
fn mcp_list_json_has_status_reason_and_tools() {
    let project = Project::new(json!({"mcpServers": {
        "t": {"command": testserver(), "includeTools": ["echo", "pid"]},
        "bad": {"description": "no transport"}
    }}));
    let out = project.run(&["mcp", "list", "--json"]);
    let servers: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(servers[0]["name"], "bad");
    assert_eq!(servers[0]["status"], "failed");
    assert!(
        servers[0]["reason"]
            .as_str()
            .unwrap()
            .contains("missing httpUrl")
    );
    assert_eq!(servers[1]["status"], "connected");
    let tools: Vec<&str> = servers[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["mcp__t__echo", "mcp__t__pid"]);
}

/// Each server is spoken to in the revision it picks: `server/discover` finds the
/// 2026-07-28 revision, a server of an older one gets `initialize` (issue 46).
#[test]
fn mcp_list_shows_the_revision_each_server_speaks() {
    let project = Project::new(json!({"mcpServers": {
        "new": {"command": testserver()},
        "old": {"command": testserver(), "env": {"TESTSERVER_PROTOCOL": "2025-06-18"}}
    }}));
    let out = project.run(&["mcp", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let servers: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(servers[0]["protocol"], "2026-07-28", "{servers}");
    assert_eq!(servers[1]["protocol"], "2025-06-18", "{servers}");
    let text = stdout(&project.run(&["mcp", "list"]));
    assert!(text.contains("prompts, protocol 2026-07-28\n"), "{text}");
    assert!(text.contains("prompts, protocol 2025-06-18\n"), "{text}");
}

#[test]
fn mcp_and_discovered_tools_are_listed_and_callable() {
    let project = Project::new(json!({}));
    let discover = project.root().join("discover.sh");
    std::fs::write(
        &discover,
        "#!/bin/sh\necho '[{\"name\": \"shout\", \"parameters\": {\"type\": \"object\", \"properties\": {\"word\": {\"type\": \"string\"}}}}]'\n",
    )
    .unwrap();
    let call = project.root().join("call.sh");
    std::fs::write(&call, "#!/bin/sh\ntr a-z A-Z\n").unwrap();
    for script in [&discover, &call] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(
        project.root().join(".qwen/settings.json"),
        json!({
            "tools": {"discoveryCommand": discover, "callCommand": call},
            "mcpServers": {"t": {"command": testserver()}}
        })
        .to_string(),
    )
    .unwrap();

    let list = stdout(&project.run(&["tools", "list"]));
    assert!(list.contains("mcp__t__echo"), "{list}");
    assert!(list.lines().any(|l| l.starts_with("shout ")), "{list}");

    let out = project.run(&[
        "tools",
        "call",
        "mcp__t__echo",
        r#"{"message": "hello"}"#,
        "--yes",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "echo: hello");

    // Without --yes and without a terminal, an untrusted MCP tool is refused.
    let out = project.run(&["tools", "call", "mcp__t__echo", r#"{"message": "x"}"#]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    // A readOnlyHint from a server that is not trusted is only a hint: it still asks.
    let out = project.run(&["tools", "call", "mcp__t__read_status"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));

    let out = project.run(&["tools", "call", "shout", r#"{"word": "hey"}"#, "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), r#"{"WORD":"HEY"}"#);

    let out = project.run(&["tools", "call", "mcp__t__fail", "{}", "--yes"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("Error [mcp_tool_error]"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("disk is full"), "{}", stderr(&out));
}

#[test]
fn mcp_config_flag_adds_servers_and_allowed_names_filter_them() {
    let project = Project::new(json!({"mcpServers": {"fromsettings": {"command": testserver()}}}));
    let inline = json!({"mcpServers": {"inline": {"command": testserver()}}}).to_string();
    let file = project.dir.path().join("servers.json");
    std::fs::write(
        &file,
        json!({"fromfile": {"command": testserver()}}).to_string(),
    )
    .unwrap();
    let file = file.to_string_lossy().into_owned();

    let out = project.run(&[
        "--mcp-config",
        &inline,
        "--mcp-config",
        &file,
        "mcp",
        "list",
    ]);
    let text = stdout(&out);
    for alias in ["fromsettings", "inline", "fromfile"] {
        assert!(
            text.contains(&format!("{alias} (stdio")),
            "{alias} missing in:\n{text}"
        );
    }

    let out = project.run(&[
        "--mcp-config",
        &inline,
        "--allowed-mcp-server-names",
        "inline",
        "tools",
        "list",
    ]);
    let text = stdout(&out);
    assert!(text.contains("mcp__inline__echo"), "{text}");
    assert!(!text.contains("mcp__fromsettings__"), "{text}");

    let out = project.run(&["--mcp-config", "{not json", "mcp", "list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--mcp-config"), "{}", stderr(&out));
}

/// The reference server installed by `scripts/setup.sh`, or why it cannot be used.
fn server_everything() -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script =
        root.join(".cache/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if Command::new("node").arg("--version").output().is_err() {
        return Err("node is not installed".into());
    }
    if !script.exists() {
        return Err(format!(
            "{} is missing (scripts/setup.sh installs it when npm is available)",
            script.display()
        ));
    }
    Ok(script)
}

#[test]
fn server_everything_echo_get_sum_and_get_tiny_image_run_through_tools_call() {
    let Some(script) = resources::everything_or_skip() else {
        return;
    };
    let project = Project::new(json!({"mcpServers": {
        "everything": {"command": "node", "args": [script], "trust": true}
    }}));
    let out = project.run(&[
        "tools",
        "call",
        "mcp__everything__echo",
        r#"{"message": "hi"}"#,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Echo: hi");

    let out = project.run(&[
        "tools",
        "call",
        "mcp__everything__get-sum",
        r#"{"a": 2, "b": 3}"#,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "The sum of 2 and 3 is 5.");

    let out = project.run(&[
        "tools",
        "call",
        "mcp__everything__get-tiny-image",
        "{}",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let result: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let image = result["llm_content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "inline_data")
        .expect("an inline image part");
    assert_eq!(image["mime_type"], "image/png");
    assert!(image["data"].as_str().unwrap().starts_with("iVBORw0KGgo"));
}

/// The agent runs with the tools a server adds during the run: a call to a tool the
/// server has just added is found (its list is read again), and the model is told of
/// it from then on.
#[test]
fn the_agent_uses_a_tool_an_mcp_server_adds_during_the_run() {
    let project =
        Project::new(json!({"mcpServers": {"t": {"command": testserver(), "trust": true}}}));
    let script = project.dir.path().join("script.jsonl");
    let lines = [
        json!({"tool_calls": [{"id": "c1", "name": "mcp__t__add_tool", "arguments": {"name": "fresh"}}]}),
        json!({"tool_calls": [{"id": "c2", "name": "mcp__t__fresh", "arguments": {}}]}),
        json!({"text": "done"}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&script, text.join("\n")).unwrap();
    let out = project.run(&[
        "--model-replay",
        script.to_str().unwrap(),
        "-o",
        "json",
        "add a tool and use it",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let messages: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let v = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["type"] == "result")
        .unwrap();
    let calls = v["toolbelt"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{v}");
    assert_eq!(calls[0]["status"], "success", "{v}");
    assert_eq!(calls[1]["name"], "mcp__t__fresh");
    assert_eq!(calls[1]["status"], "success", "{v}");
}

/// A server asking for its client's roots (`roots/list`) is told the workspace:
/// server-everything offers `get-roots-list` only to a client that declares roots.
#[test]
fn a_server_asking_for_roots_is_told_the_workspace() {
    let Some(script) = resources::everything_or_skip() else {
        return;
    };
    let project = Project::new(json!({"mcpServers": {
        "everything": {"command": "node", "args": [script], "trust": true}
    }}));
    let out = project.run(&["tools", "call", "mcp__everything__get-roots-list", "{}"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let root = project.root().canonicalize().unwrap();
    assert!(text.contains("Current MCP Roots (1 total)"), "{text}");
    assert!(
        text.contains(&format!("URI: file://{}", root.display())),
        "{text}"
    );
}
