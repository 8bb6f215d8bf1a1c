//! The Claude Agent SDK's `hooks` option: each callback is registered in `initialize`
//! (`hookCallbackIds`) and called with a `hook_callback` control request; its answer is
//! read as a command hook's output. The callbacks see toolbelt's tool names in
//! `tool_name`, and Claude's names work as matchers (`Bash`, `Write`, `Read`).

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};

use crate::{Sandbox, bypass, call, clean, sdk_dir};

/// Every text the model server saw in its last request (the tool results included).
fn last_request(server: &FakeOpenAi) -> String {
    server.last_request().unwrap().body["messages"].to_string()
}

/// A PreToolUse callback that denies `Bash`: the command does not run, the model reads
/// the reason, and the callback saw the call (input and id).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_pre_tool_use_callback_denies_with_a_reason_the_model_reads() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        call("c1", "run_shell_command", json!({"command": "touch ran"})),
        Reply::text("Refused."),
    ])
    .await
    .unwrap();
    let deny = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny", "permissionDecisionReason": "the SDK keeps the shell shut"}});
    let c = s
        .client(
            &sdk,
            &server,
            json!({
                "prompts": ["touch it"],
                "options": bypass(),
                "hooks": {"PreToolUse": [{"matcher": "Bash", "answer": deny}]},
            }),
        )
        .await
        .ok();
    assert!(s.read("ran").is_none(), "the denied command ran");
    let hooks = c.notes["hooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    assert_eq!(hooks[0]["toolUseID"], "c1");
    let input = &hooks[0]["input"];
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "run_shell_command");
    assert_eq!(input["tool_input"]["command"], "touch ran");
    assert_eq!(input["session_id"], c.init()["session_id"]);
    let refused = c.tool_results()[0];
    assert_eq!(refused["is_error"], true);
    assert!(
        refused["content"]
            .to_string()
            .contains("the SDK keeps the shell shut"),
        "{refused}"
    );
    assert!(last_request(&server).contains("the SDK keeps the shell shut"));
    clean(&server);
}

/// A PreToolUse callback's `updatedInput` is what runs: the write goes to the file the
/// callback named, and its `allow` spares the question (default mode, no `canUseTool`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_pre_tool_use_callback_rewrites_the_input() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        call(
            "c1",
            "write_file",
            json!({"file_path": s.path("asked.txt"), "content": "from the model\n"}),
        ),
        Reply::text("Written."),
    ])
    .await
    .unwrap();
    let rewrite = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "updatedInput": {"file_path": s.path("rewritten.txt"), "content": "from the hook\n"}}});
    let c = s
        .client(
            &sdk,
            &server,
            json!({
                "prompts": ["write it"],
                "options": {"permissionMode": "default"},
                "hooks": {"PreToolUse": [{"matcher": "Edit|Write", "answer": rewrite}]},
            }),
        )
        .await
        .ok();
    assert!(s.read("asked.txt").is_none());
    assert_eq!(s.read("rewritten.txt").unwrap(), "from the hook\n");
    assert_eq!(c.tool_results()[0]["is_error"], false);
    assert_eq!(c.results()[0]["subtype"], "success");
    clean(&server);
}

/// A PostToolUse callback's `additionalContext` and a UserPromptSubmit callback's reach
/// the model's requests, marked as the hooks'.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_post_tool_use_and_user_prompt_submit_callbacks_add_context() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    s.write("notes.txt", "the answer is 42\n");
    let server = FakeOpenAi::start(vec![
        call(
            "c1",
            "read_file",
            json!({"absolute_path": s.path("notes.txt")}),
        ),
        Reply::text("42."),
    ])
    .await
    .unwrap();
    let post = json!({"hookSpecificOutput": {"hookEventName": "PostToolUse",
        "additionalContext": "post-tool note from the SDK"}});
    let prompt = json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
        "additionalContext": "prompt note from the SDK"}});
    let c = s
        .client(
            &sdk,
            &server,
            json!({
                "prompts": ["what do the notes say?"],
                "hooks": {
                    "PostToolUse": [{"matcher": "Read", "answer": post}],
                    "UserPromptSubmit": [{"answer": prompt}],
                },
            }),
        )
        .await
        .ok();
    let events: Vec<&str> = c.notes["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["UserPromptSubmit", "PostToolUse"]);
    assert_eq!(
        c.notes["hooks"][0]["input"]["prompt"],
        "what do the notes say?"
    );
    let response = c.notes["hooks"][1]["input"]["tool_response"].to_string();
    assert!(response.contains("the answer is 42"), "{response}");
    let first = server.requests()[0].body["messages"].to_string();
    assert!(first.contains("prompt note from the SDK"), "{first}");
    assert!(!first.contains("post-tool note"), "{first}");
    assert!(last_request(&server).contains("post-tool note from the SDK"));
    clean(&server);
}

/// A callback that throws is a failure: by default the call goes ahead (Claude's
/// `onFailure: "continue"`), with `onFailure: "block"` it is refused with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_a_failing_callback_continues_unless_set_to_block() {
    let Some(sdk) = sdk_dir() else { return };
    for (on_failure, runs) in [("continue", true), ("block", false)] {
        let s = Sandbox::new();
        let server = FakeOpenAi::start(vec![
            call("c1", "run_shell_command", json!({"command": "touch ran"})),
            Reply::text("Done."),
        ])
        .await
        .unwrap();
        let c = s
            .client(
                &sdk,
                &server,
                json!({
                    "prompts": ["touch it"],
                    "options": bypass(),
                    "hooks": {"PreToolUse": [{"matcher": "Bash", "onFailure": on_failure,
                                              "throw": "the policy server is down"}]},
                }),
            )
            .await
            .ok();
        assert_eq!(s.read("ran").is_some(), runs, "{on_failure}");
        let result: &Value = c.tool_results()[0];
        if !runs {
            let text = result["content"].to_string();
            assert!(text.contains("the policy server is down"), "{text}");
            assert!(text.contains("set to block on failure"), "{text}");
        }
        clean(&server);
    }
}

/// `interrupt()` while a PreToolUse callback runs: the turn ends at once (not at the
/// callback's time limit), the SDK's callback is aborted (its request withdrawn), the
/// call does not run, and the next prompt runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_interrupt_cancels_a_waiting_callback() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        call("c1", "run_shell_command", json!({"command": "touch ran"})),
        Reply::text("After the interruption."),
    ])
    .await
    .unwrap();
    let started = std::time::Instant::now();
    let c = s
        .client(
            &sdk,
            &server,
            json!({
                "prompts": ["touch it", "go on"],
                "options": bypass(),
                "hooks": {"PreToolUse": [{"matcher": "Bash", "timeout": 600, "hang": "interrupt"}]},
            }),
        )
        .await
        .ok();
    assert!(
        started.elapsed().as_secs() < 60,
        "the wait was not cut short"
    );
    assert_eq!(c.notes["aborted"], 1, "{}", c.notes);
    assert!(s.read("ran").is_none());
    let results = c.results();
    assert_eq!(results[0]["subtype"], "error_during_execution");
    assert_eq!(results[1]["result"], "After the interruption.");
    assert_eq!(server.violations(), Vec::<String>::new());
}
