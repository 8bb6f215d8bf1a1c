//! `session/cancel`: the running turn ends with `cancelled`, its processes with it, and
//! an open question is withdrawn.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::{Editor, call, sdk_dir, start};

/// The processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(marker) {
                found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// The editor cancels once the command has started (it wrote its pid file): the prompt
/// answers `cancelled` at once and the command's process is gone while the agent still
/// runs. Processes are found by their command line (a unique `sleep` duration): the
/// pid in the file may be one of a pid namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_a_long_command_ends_the_turn_and_its_process() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    let pid_file = e.ws().join("sleep.pid");
    // A duration no other process uses, so the check below finds only ours.
    let duration = format!("40.{}", std::process::id());
    let command = format!("sleep {duration} & echo $! > {}; wait", pid_file.display());
    let mut long = call(
        "c_sleep",
        "run_shell_command",
        json!({ "command": command }),
    );
    long["tool_calls"][0]["expect_error"] = json!(true);
    let script = e.script("model.jsonl", &[long]);
    let mut steps = start();
    steps.push(json!({
        "op": "prompt",
        "text": "wait a while",
        "cancelOn": {"toolCall": {"kind": "execute"}, "file": pid_file},
    }));
    // Asked while the agent still runs: the cancel, not the agent's exit, ended it.
    let marker = format!("sleep {duration}");
    steps.push(json!({"op": "waitGone", "marker": marker, "withinMs": 5000}));
    let started = Instant::now();
    let seen = e
        .drive(
            &["--model-replay", &script],
            &["allow_once"],
            json!(steps),
            json!({}),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the cancel did not end the turn: {:?}",
        started.elapsed()
    );
    assert_eq!(
        seen.result(2)["stopReason"],
        "cancelled",
        "{}",
        seen.summary()
    );
    let shell = seen.tool_call("execute");
    let status = shell["status"].as_str().unwrap_or_default();
    assert!(
        status == "failed" || status == "completed",
        "the call is closed, not left running: {shell}"
    );
    assert_eq!(
        seen.result(3)["gone"],
        true,
        "the command outlived the cancelled turn: {}",
        seen.step(3)
    );
    // The agent has exited too (the editor closed its stdin): still gone.
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}

/// Cancelled while its question is open: the editor answers `cancelled` (as the
/// protocol has it), the prompt answers `cancelled`, and the edit did not happen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_asked_withdraws_the_question() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    e.write("code.txt", "let x = 1;\n");
    let mut edit = call(
        "c_edit",
        "edit",
        json!({"file_path": e.path("code.txt"), "old_string": "let x = 1;", "new_string": "let x = 2;"}),
    );
    edit["tool_calls"][0]["expect_error"] = json!(true);
    let script = e.script("model.jsonl", &[edit]);
    let mut steps = start();
    steps.push(json!({"op": "prompt", "text": "make x 2", "cancelOn": {"permission": true}}));
    let seen = e
        .drive(&["--model-replay", &script], &[], json!(steps), json!({}))
        .await;
    assert_eq!(
        seen.result(2)["stopReason"],
        "cancelled",
        "{}",
        seen.summary()
    );
    assert_eq!(seen.permissions().len(), 1);
    assert_eq!(seen.permissions()[0]["answer"], "cancelled");
    assert_eq!(e.read("code.txt"), "let x = 1;\n");
    let edit = seen.tool_call("edit");
    assert_ne!(edit["status"], "completed", "{edit}");
}

/// The editor disappears while a command runs (its end of the pipe closes, no cancel):
/// toolbelt exits and leaves no process of that command behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_disappears_mid_turn_leaves_no_process() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    let pid_file = e.ws().join("sleep.pid");
    let duration = format!("41.{}", std::process::id());
    let command = format!("sleep {duration} & echo $! > {}; wait", pid_file.display());
    let mut long = call(
        "c_sleep",
        "run_shell_command",
        json!({ "command": command }),
    );
    long["tool_calls"][0]["expect_error"] = json!(true);
    let script = e.script("model.jsonl", &[long]);
    let mut steps = start();
    steps.push(json!({
        "op": "prompt",
        "text": "wait a while",
        "leaveOn": {"toolCall": {"kind": "execute"}, "file": pid_file},
    }));
    let started = Instant::now();
    let seen = e
        .drive(
            &["--model-replay", &script],
            &["allow_once"],
            json!(steps),
            json!({}),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "toolbelt outlived its editor: {:?}",
        started.elapsed()
    );
    assert!(seen.raw["exit"].is_object(), "{}", seen.summary());
    let marker = format!("sleep {duration}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_with(&marker).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}
