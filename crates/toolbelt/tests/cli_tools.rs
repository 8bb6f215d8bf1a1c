#![allow(clippy::too_many_lines)]
//! The `toolbelt tools` command as a user meets it: the real binary, run in a temporary
//! workspace with its own HOME, standard input not a terminal.

// Test fixtures outside #[test] functions may panic on a broken test setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

struct Workspace {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

impl Workspace {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let root = root.canonicalize().unwrap();
        Workspace {
            _dir: dir,
            root,
            home,
        }
    }

    fn write(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with_stdin(args, "")
    }

    fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Output {
        use std::io::Write;
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .args(args)
            .current_dir(&self.root)
            .env("HOME", &self.home)
            .env(
                "TOOLBELT_SYSTEM_SETTINGS_PATH",
                self.home.join("no-system-settings.json"),
            )
            .env_remove("TOOLBELT_HOME")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn arg(path: &Path) -> String {
    serde_json::json!({ "absolute_path": path }).to_string()
}

#[test]
fn list_json_is_declarations_with_object_schemas() {
    let ws = Workspace::new();
    let out = ws.run(&["tools", "list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let decls: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!decls.is_empty());
    for d in &decls {
        assert!(d["name"].as_str().is_some_and(|n| !n.is_empty()), "{d}");
        assert!(
            d["description"].as_str().is_some_and(|n| !n.is_empty()),
            "{d}"
        );
        assert_eq!(d["parameters"]["type"], "object", "{d}");
        assert_eq!(
            d.as_object().unwrap().len(),
            3,
            "only name, description, parameters: {d}"
        );
    }
    assert!(decls.iter().any(|d| d["name"] == "read_file"));
}

#[test]
fn list_table_has_a_header_and_a_row_per_tool() {
    let ws = Workspace::new();
    let out = ws.run(&["tools", "list"]);
    let text = stdout(&out);
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    for column in ["NAME", "KIND", "CONFIRM", "DESCRIPTION"] {
        assert!(header.contains(column), "{header}");
    }
    let row = lines.find(|l| l.starts_with("read_file ")).unwrap();
    assert!(row.contains(" read ") && row.contains(" no "), "{row}");
    // The session-only tools are not rows of the table but lines with their condition.
    assert!(
        !text.lines().any(|l| l.starts_with("send_message ")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("send_message ") && l.ends_with("agent sessions")),
        "{text}"
    );
}

/// Every tool a session can register is listed by `tools list` with the condition under
/// which a session offers it: a stream-JSON session (the one that registers the most)
/// opened where every condition holds (a git repository, a skill, a language server, a
/// web search provider) names its tools in `init`, and each has a line in `tools list`
/// run in the same place; `tools list` elsewhere still names each, with its condition.
#[test]
fn tools_list_names_every_tool_a_session_offers() {
    let ws = Workspace::new();
    let plain = stdout(&ws.run(&["tools", "list"]));
    std::fs::create_dir_all(ws.root.join(".git")).unwrap();
    ws.write(
        ".qwen/skills/greet/SKILL.md",
        b"---\nname: greet\ndescription: Say hello.\n---\nSay hello.\n",
    );
    std::fs::create_dir_all(ws.home.join(".qwen")).unwrap();
    std::fs::write(
        ws.home.join(".qwen/settings.json"),
        r#"{"webSearch": {"provider": [{"type": "searxng", "baseUrl": "http://127.0.0.1:9"}]}}"#,
    )
    .unwrap();
    std::fs::write(
        ws.home.join(".qwen/.lsp.json"),
        r#"{"python": {"command": "pyright-langserver", "extensionToLanguage": {".py": "python"}}}"#,
    )
    .unwrap();
    let script = ws.write("script.jsonl", br#"{"text": "hello"}"#);
    let user = serde_json::json!({"type": "user", "session_id": "",
        "message": {"role": "user", "content": "hi"}, "parent_tool_use_id": null});
    let out = ws.run_with_stdin(
        &[
            "--input-format",
            "stream-json",
            "-o",
            "stream-json",
            "--model-replay",
            script.to_str().unwrap(),
        ],
        &format!("{user}\n"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let init: Value = stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|m| m["type"] == "system" && m["subtype"] == "init")
        .unwrap_or_else(|| panic!("no init message: {}", stdout(&out)));
    let offered: Vec<&str> = init["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for tool in [
        "skill",
        "lsp",
        "web_search",
        "enter_worktree",
        "cron_create",
        "monitor",
    ] {
        assert!(offered.contains(&tool), "{tool} not offered: {offered:?}");
    }
    let listed = stdout(&ws.run(&["tools", "list"]));
    for text in [&listed, &plain] {
        for tool in &offered {
            let line = text
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{tool} ")))
                .unwrap_or_else(|| panic!("{tool} has no line in `tools list`:\n{text}"));
            let condition = [
                "always",
                "agent sessions",
                "set",
                "exist",
                "configured",
                "in a git",
                "cron on",
                "serve",
            ];
            assert!(
                condition.iter().any(|c| line.contains(c)),
                "{tool}: no condition in {line:?}"
            );
        }
    }
    // Where a condition does not hold, the line says which it is.
    let line = |name: &str| {
        let prefix = format!("{name} ");
        plain
            .lines()
            .find(|l| l.trim_start().starts_with(&prefix))
            .unwrap_or_else(|| panic!("no {name}: {plain}"))
            .to_string()
    };
    assert!(line("lsp").ends_with("lsp servers configured"), "{plain}");
    assert!(line("cron_create").contains("cron on"), "{plain}");
    assert!(line("monitor").ends_with("agent sessions"), "{plain}");
    assert!(line("tool_search").contains("tools deferred"), "{plain}");
    assert!(line("read_file").contains(" always "), "{plain}");
}

#[test]
fn list_shows_the_web_memory_todo_and_plan_tools_with_kind_and_confirmation() {
    let ws = Workspace::new();
    let out = ws.run(&["tools", "list"]);
    let text = stdout(&out);
    let row = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for {name}: {text}"))
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(row("web_fetch"), "web_fetch fetch yes");
    assert_eq!(row("save_memory"), "save_memory think yes");
    assert_eq!(row("todo_write"), "todo_write think no");
    assert_eq!(row("exit_plan_mode"), "exit_plan_mode think yes");
    assert_eq!(row("ask_user_question"), "ask_user_question think no");
    assert!(
        !text.lines().any(|l| l.starts_with("web_search ")),
        "{text}"
    );
    assert!(
        text.contains("web_search is not registered: no webSearch provider configured"),
        "{text}"
    );

    std::fs::create_dir_all(ws.home.join(".qwen")).unwrap();
    std::fs::write(
        ws.home.join(".qwen/settings.json"),
        r#"{"webSearch": {"provider": [{"type": "searxng", "baseUrl": "http://127.0.0.1:9"}]}}"#,
    )
    .unwrap();
    let out = ws.run(&["tools", "list"]);
    let text = stdout(&out);
    let row = text.lines().find(|l| l.starts_with("web_search ")).unwrap();
    assert_eq!(
        row.split_whitespace().take(3).collect::<Vec<_>>(),
        ["web_search", "search", "yes"]
    );
    assert!(!text.contains("not registered"), "{text}");
}

#[test]
fn call_read_file_prints_the_file() {
    let ws = Workspace::new();
    let file = ws.write("notes.txt", b"hello\nworld\n");
    let out = ws.run(&["tools", "call", "read_file", &arg(&file)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hello\nworld\n");
    assert!(
        stderr(&out).contains("ReadFile: Read notes.txt"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn arguments_can_come_from_stdin() {
    let ws = Workspace::new();
    let file = ws.write("a.txt", b"from stdin\n");
    let out = ws.run_with_stdin(&["tools", "call", "read_file", "-"], &arg(&file));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "from stdin\n");
}

#[test]
fn wrong_type_exits_2_naming_the_parameter() {
    let ws = Workspace::new();
    let out = ws.run(&["tools", "call", "read_file", r#"{"absolute_path": 5}"#]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(r#"absolute_path: 5 is not of type "string""#),
        "{}",
        stderr(&out)
    );
}

#[test]
fn malformed_json_exits_2_with_the_position() {
    let ws = Workspace::new();
    let out = ws.run(&["tools", "call", "read_file", "{not json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("line 1 column 2"), "{}", stderr(&out));
}

#[test]
fn misspelled_tool_suggests_the_right_one() {
    let ws = Workspace::new();
    let out = ws.run(&["tools", "call", "read_fil", "{}"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(r#"Did you mean one of: "read_file""#),
        "{}",
        stderr(&out)
    );
}

#[test]
fn paths_outside_the_workspace_are_refused() {
    let ws = Workspace::new();
    let outside = ws.home.join("secret.txt");
    std::fs::write(&outside, "secret").unwrap();
    std::os::unix::fs::symlink(&outside, ws.root.join("link.txt")).unwrap();
    let relative = r#"{"absolute_path": "notes.txt"}"#.to_string();
    let dotdot = arg(&ws.root.join("../home/secret.txt"));
    for (args, needle) in [
        (relative, "must be absolute"),
        (arg(&outside), "outside the workspace"),
        (arg(&ws.root.join("link.txt")), "symbolic link"),
        (dotdot, "outside the workspace"),
    ] {
        let out = ws.run(&["tools", "call", "read_file", &args]);
        assert_eq!(out.status.code(), Some(2), "{args}");
        assert!(stderr(&out).contains(needle), "{args}: {}", stderr(&out));
        assert!(!stdout(&out).contains("secret"));
    }
}

#[test]
fn include_directories_widen_the_workspace() {
    let ws = Workspace::new();
    let other = ws.home.join("lib");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("x.rs"), "fn x() {}\n").unwrap();
    let args = arg(&other.join("x.rs"));
    assert_eq!(
        ws.run(&["tools", "call", "read_file", &args]).status.code(),
        Some(2)
    );
    let out = ws.run(&[
        "--include-directories",
        other.to_str().unwrap(),
        "tools",
        "call",
        "read_file",
        &args,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "fn x() {}\n");
}

#[test]
fn png_comes_back_as_inline_data_with_json() {
    let ws = Workspace::new();
    let png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01";
    let file = ws.write("logo.png", png);
    let out = ws.run(&["tools", "call", "read_file", &arg(&file), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let part = &result["llm_content"][0];
    assert_eq!(part["type"], "inline_data");
    assert_eq!(part["mime_type"], "image/png");
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD
        .decode(part["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(data, png);
}

#[test]
fn tool_errors_exit_1_with_the_error_type() {
    let ws = Workspace::new();
    let out = ws.run(&[
        "tools",
        "call",
        "read_file",
        &arg(&ws.root.join("missing.txt")),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("Error [file_not_found]"),
        "{}",
        stderr(&out)
    );
    let out = ws.run(&[
        "tools",
        "call",
        "read_file",
        &arg(&ws.root.join("missing.txt")),
        "--json",
    ]);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["error"]["type"], "file_not_found");
}

#[test]
fn settings_exclude_removes_the_tool() {
    let ws = Workspace::new();
    ws.write(
        ".qwen/settings.json",
        br#"{ "tools": { "exclude": ["read_file"] } }"#,
    );
    let file = ws.write("a.txt", b"x");
    let out = ws.run(&["tools", "list", "--json"]);
    let decls: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(decls.iter().all(|d| d["name"] != "read_file"));
    let out = ws.run(&["tools", "call", "read_file", &arg(&file)]);
    // A tool the settings removed is refused (exit 3), not a usage error.
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("tools.exclude"), "{}", stderr(&out));
}

#[test]
fn malformed_settings_file_names_itself() {
    let ws = Workspace::new();
    let settings = ws.write(
        ".qwen/settings.json",
        b"{\n  \"tools\": {\n    \"exclude\": [\"a\" \"b\"]\n  }\n}\n",
    );
    let out = ws.run(&["tools", "list"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(settings.to_str().unwrap()), "{err}");
    assert!(err.contains("line 3 column"), "{err}");
}

#[test]
fn user_settings_apply_and_workspace_settings_override_them() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.home.join(".qwen")).unwrap();
    std::fs::write(
        ws.home.join(".qwen/settings.json"),
        r#"{"tools": {"truncateToolOutputLines": 2}}"#,
    )
    .unwrap();
    let file = ws.write("a.txt", b"1\n2\n3\n4\n");
    let out = ws.run(&["tools", "call", "read_file", &arg(&file)]);
    assert!(
        stdout(&out).starts_with("Showing lines 1-2 of 4 total lines."),
        "{}",
        stdout(&out)
    );
    ws.write(
        ".qwen/settings.json",
        br#"{"tools": {"truncateToolOutputLines": 3}}"#,
    );
    let out = ws.run(&["tools", "call", "read_file", &arg(&file)]);
    assert!(
        stdout(&out).starts_with("Showing lines 1-3 of 4 total lines."),
        "{}",
        stdout(&out)
    );
}

#[test]
fn help_lists_examples_and_exit_codes() {
    let ws = Workspace::new();
    let out = ws.run(&["tools", "call", "--help"]);
    let text = stdout(&out);
    assert!(text.contains("Examples:"), "{text}");
    assert!(text.contains("130"), "{text}");
    let out = ws.run(&["--version"]);
    assert!(stdout(&out).starts_with("toolbelt "), "{}", stdout(&out));
}

#[test]
fn ctrl_c_cancels_the_running_tool_and_exits_130() {
    use std::io::{BufRead, BufReader};
    let ws = Workspace::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args([
            "tools",
            "call",
            "run_shell_command",
            r#"{"command": "sleep 120"}"#,
            "--yes",
        ])
        .current_dir(&ws.root)
        .env("HOME", &ws.home)
        .env("TOOLBELT_SYSTEM_SETTINGS_PATH", ws.home.join("none.json"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    // The description line is printed after the SIGINT handler is installed.
    let mut line = String::new();
    while !line.starts_with("Shell: ") {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no description line"
        );
    }
    let started = std::time::Instant::now();
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert_eq!(out.status.code(), Some(130), "stderr: {rest}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "the sleep was not cancelled"
    );
    assert!(
        rest.contains("interrupted; cancelling the running tool"),
        "{rest}"
    );
}

/// Runs `toolbelt ARGS` under `script`, so its standard input and error are a terminal,
/// typing `answer` at the prompt.
fn run_on_a_terminal(ws: &Workspace, args: &str, answer: &str) -> (Option<i32>, String) {
    use std::io::Write;
    let command = format!("{} {args}", env!("CARGO_BIN_EXE_toolbelt"));
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(&ws.root)
        .env("HOME", &ws.home)
        .env("TOOLBELT_SYSTEM_SETTINGS_PATH", ws.home.join("none.json"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answer.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.code(), stdout(&out))
}

#[test]
fn on_a_terminal_the_person_is_asked_yes_no_or_always() {
    if Command::new("script").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "`script` (util-linux) is missing: CI must make a terminal for this test"
        );
        println!("skipped: `script` (util-linux) is not installed, so no terminal can be made");
        return;
    }
    let ws = Workspace::new();
    let target = ws.root.join("asked.txt");
    let args = format!(
        "tools call write_file '{}'",
        serde_json::json!({"file_path": target, "content": "hello\n"})
    );
    let (code, screen) = run_on_a_terminal(&ws, &args, "n\n");
    assert_eq!(code, Some(3), "{screen}");
    assert!(screen.contains("[y]es / [n]o / [a]lways"), "{screen}");
    assert!(
        screen.contains("+hello"),
        "the question shows the diff: {screen}"
    );
    assert!(!target.exists());
    let (code, screen) = run_on_a_terminal(&ws, &args, "always\n");
    assert_eq!(code, Some(0), "{screen}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hello\n");
}

#[test]
fn when_evaluates_a_clause_against_the_session_and_given_keys() {
    let ws = Workspace::new();
    let out = ws.run(&["tools", "when", "workspaceFolderCount == 1 && !isWindows"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "true\n");
    let out = ws.run(&["tools", "when", "approvalMode == yolo"]);
    assert_eq!(
        (out.status.code(), stdout(&out)),
        (Some(1), "false\n".to_string())
    );
    let out = ws.run(&[
        "tools",
        "when",
        "debugState == 'running' && count > 2 && lang in langs",
        "--context",
        "debugState=running",
        "--context",
        "count=3",
        "--context",
        "lang=rust",
        "--context",
        r#"langs=["go", "rust"]"#,
    ]);
    assert_eq!(stdout(&out), "true\n", "{}", stderr(&out));
    let out = ws.run(&["tools", "when", "a && (b || "]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).is_empty());
    let err = stderr(&out);
    assert!(err.contains("Unexpected end of expression"), "{err}");
    assert!(
        err.ends_with("\n  a && (b || \n             ^\n"),
        "{err:?}"
    );
    let out = ws.run(&["tools", "when", "a == b !"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("at offset 7"), "{}", stderr(&out));
}
