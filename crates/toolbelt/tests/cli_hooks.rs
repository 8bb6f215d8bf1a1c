//! Hooks with the real binary: `toolbelt hooks list [--json]` names every hook with its
//! file and whether it runs here; an untrusted folder's hooks are named in the trust
//! warning and do not load; a bad entry stops a session, naming file, event and index,
//! while `hooks list` still shows it.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

/// A cloned folder and a home of their own.
struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cloned");
        let home = dir.path().join("home");
        for d in [
            root.join(".qwen"),
            root.join(".claude"),
            home.join(".qwen"),
            home.join(".claude"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        World {
            root: root.canonicalize().unwrap(),
            home: home.canonicalize().unwrap(),
            _dir: dir,
        }
    }

    fn write(&self, file: &Path, value: Value) {
        std::fs::write(file, value.to_string()).unwrap();
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .args(args)
            .current_dir(&self.root)
            .env("HOME", &self.home)
            .env("TOOLBELT_HOME", self.home.join(".toolbelt"))
            .env(
                "TOOLBELT_SYSTEM_SETTINGS_PATH",
                self.home.join("no-system-settings.json"),
            )
            .env_remove("TOOLBELT_TRUST_WORKSPACE")
            .env_remove("TOOLBELT_LOG")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

fn group(matcher: &str, command: &str) -> Value {
    json!({"matcher": matcher, "hooks": [{"type": "command", "command": command}]})
}

#[test]
fn hooks_list_names_each_hook_its_file_and_whether_it_runs_here() {
    let w = World::new();
    w.write(
        &w.root.join(".qwen/settings.json"),
        json!({"hooks": {"PreToolUse": [group("", "./repo-hook.sh")]}}),
    );
    w.write(
        &w.home.join(".qwen/settings.json"),
        json!({"hooks": {"Stop": [group("", "notify-send done")]}}),
    );
    w.write(
        &w.home.join(".claude/settings.json"),
        json!({"hooks": {"PreToolUse": [group("Bash", "~/.claude/hooks/check.sh")]}, "model": "opus"}),
    );
    let out = w.run(&["hooks", "list", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hooks = listing["hooks"].as_array().unwrap();
    let rows: Vec<(&str, &str, bool, &str)> = hooks
        .iter()
        .map(|h| {
            (
                h["event"].as_str().unwrap(),
                h["command"].as_str().unwrap(),
                h["runs"].as_bool().unwrap(),
                h["source"].as_str().unwrap(),
            )
        })
        .collect();
    let project_file = w.root.join(".qwen/settings.json").display().to_string();
    let user_file = w.home.join(".qwen/settings.json").display().to_string();
    let claude_file = w.home.join(".claude/settings.json").display().to_string();
    assert_eq!(
        rows,
        vec![
            ("PreToolUse", "./repo-hook.sh", false, project_file.as_str()),
            ("Stop", "notify-send done", true, user_file.as_str()),
            (
                "PreToolUse",
                "~/.claude/hooks/check.sh",
                true,
                claude_file.as_str()
            ),
        ]
    );
    assert!(hooks[0]["whyNot"].as_str().unwrap().contains("not trusted"));
    // Trusted for the run, the project's hook runs too.
    let out = w.run(&["--trust-workspace", "hooks", "list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("does not run"), "{text}");
    assert!(
        text.contains("PreToolUse [*] command: ./repo-hook.sh"),
        "{text}"
    );
}

#[test]
fn an_untrusted_folders_hooks_are_named_in_the_trust_warning() {
    let w = World::new();
    w.write(
        &w.root.join(".claude/settings.local.json"),
        json!({"hooks": {"PostToolUse": [group("Edit|Write", "npx prettier --write .")]}}),
    );
    let out = w.run(&["tools", "list"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("this folder is not trusted"), "{stderr}");
    assert!(stderr.contains(".claude/settings.local.json"), "{stderr}");
    assert!(stderr.contains("hooks"), "{stderr}");
}

#[test]
fn a_bad_entry_stops_the_session_and_hooks_list_shows_it() {
    let w = World::new();
    w.write(
        &w.home.join(".qwen/settings.json"),
        json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "true"}, {"type": "command"}]}]}}),
    );
    let out = w.run(&["tools", "list"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let file = w.home.join(".qwen/settings.json").display().to_string();
    assert!(
        stderr.contains(&format!(
            "{file}: hooks.PreToolUse[0].hooks[1]: \"command\" is missing"
        )),
        "{stderr}"
    );
    let out = w.run(&["hooks", "list"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("hooks.PreToolUse[0].hooks[1]: \"command\" is missing"),
        "{text}"
    );
    // disableAllHooks turns them off, and the session opens again.
    w.write(
        &w.home.join(".qwen/settings.json"),
        json!({"disableAllHooks": true, "hooks": {"PreToolUse": [{"hooks": [{"type": "command"}]}]}}),
    );
    assert!(w.run(&["tools", "list"]).status.success());
}

#[test]
fn tools_call_runs_the_tool_hooks_around_its_call() {
    let w = World::new();
    let log = w.home.join("post.log");
    std::fs::write(w.root.join("keep.txt"), "x").unwrap();
    let refuse = r#"jq -e '.tool_input.command | startswith("rm ")' > /dev/null && { echo 'rm is refused by the hook' >&2; exit 2; }; exit 0"#;
    let record = format!(
        "jq -r '[.hook_event_name, .tool_input.command] | join(\" \")' >> {}",
        log.display()
    );
    w.write(
        &w.home.join(".qwen/settings.json"),
        json!({"hooks": {
            "PreToolUse": [group("Bash", refuse)],
            "PostToolUse": [group("run_shell_command", &record)],
        }}),
    );
    let out = w.run(&[
        "tools",
        "call",
        "run_shell_command",
        r#"{"command": "rm keep.txt"}"#,
        "--yes",
    ]);
    assert!(!out.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("rm is refused by the hook"), "{said}");
    assert!(w.root.join("keep.txt").exists());
    assert!(!log.exists(), "PostToolUse ran for a refused call");

    let out = w.run(&[
        "tools",
        "call",
        "run_shell_command",
        r#"{"command": "echo hi"}"#,
        "--yes",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "PostToolUse echo hi\n"
    );
}
