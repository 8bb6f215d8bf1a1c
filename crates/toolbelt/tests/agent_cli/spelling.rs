//! Deny rules by spelling through the agent (issue 27): a denied program does not run
//! however the model writes it, even in yolo mode, and the refusal says why the rule
//! applies; a rule that does not parse stops the run instead of being dropped.

use serde_json::json;

use crate::support::Workspace;

fn shell_call(id: &str, command: &str) -> serde_json::Value {
    json!({"tool_calls": [{"id": id, "name": "run_shell_command", "arguments": {"command": command}}]})
}

fn deny_rm(w: &Workspace) {
    let settings = w.dir.path().join("home/.qwen/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"permissions": {"deny": ["run_shell_command(rm)"]}}"#,
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_program_does_not_run_under_another_spelling_in_yolo_mode() {
    let w = Workspace::new();
    w.write("victim.txt", "keep me\n");
    deny_rm(&w);
    let script = w.script(&[
        shell_call("c1", "x=rm; $x victim.txt"),
        shell_call("c2", "env -S 'rm victim.txt'"),
        shell_call("c3", "$'\\x72m' victim.txt"),
        shell_call("c4", "/usr/bin/[r]m victim.txt"),
        shell_call("c5", "sh -c 'rm victim.txt'"),
        json!({"text": "done"}),
    ]);
    let run = w
        .run(
            &[
                "--yolo",
                "--model-replay",
                script.to_str().unwrap(),
                "-o",
                "stream-json",
                "go",
            ],
            &[],
            None,
        )
        .await;
    assert!(w.ws().join("victim.txt").exists(), "{}", run.stdout);
    assert!(
        run.stdout.contains("run_shell_command(rm)") && run.stdout.contains("`$x`"),
        "the refusal names the rule and the reason: {}",
        run.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_tools_rule_that_does_not_parse_stops_the_run() {
    let w = Workspace::new();
    let script = w.script(&[json!({"text": "done"})]);
    let run = w
        .run(
            &[
                "--allowed-tools",
                "Bash(ls",
                "--model-replay",
                script.to_str().unwrap(),
                "go",
            ],
            &[],
            None,
        )
        .await;
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("`Bash(ls`"), "{}", run.stderr);
}
