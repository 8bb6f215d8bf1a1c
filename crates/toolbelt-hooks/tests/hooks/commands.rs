//! Command hooks: real scripts, their answers, their failures, their ends.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_engine::{
    hooks::HookDecision, hooks::HookEvent, hooks::HookRequest, hooks::HookRunner,
};
use toolbelt_process::procfs;

use crate::support::{Fixture, command_group, run, shell_call};

/// The outcome of one PreToolUse hook `command` for the shell call `call`.
async fn pre_tool_use(
    f: &Fixture,
    command: &str,
    call: &str,
) -> toolbelt_engine::hooks::HookOutcome {
    f.user_hooks(json!({"PreToolUse": [command_group("Bash", command)]}));
    run(&f.engine(), shell_call(call)).await
}

#[tokio::test]
async fn a_hook_allows_denies_or_asks_with_its_reason() {
    let f = Fixture::new();
    for (decision, expected) in [
        ("allow", HookDecision::Allow),
        ("deny", HookDecision::Deny),
        ("ask", HookDecision::Ask),
    ] {
        let answer = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": decision, "permissionDecisionReason": format!("said {decision}")}});
        let outcome = pre_tool_use(&f, &format!("echo '{answer}'"), "ls").await;
        assert_eq!(outcome.decision, Some(expected));
        assert_eq!(outcome.reason, Some(format!("said {decision}")));
        assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    }
}

#[tokio::test]
async fn a_claude_code_script_reading_tool_input_with_jq_works_unchanged() {
    let f = Fixture::new();
    // As Claude Code's documentation writes it, in ~/.claude/settings.json.
    f.script(
        ".claude/hooks/block-rm.sh",
        r#"COMMAND=$(jq -r '.tool_input.command')
if echo "$COMMAND" | grep -q 'rm -rf'; then
  echo "Blocked: $COMMAND is destructive" >&2
  exit 2
fi
exit 0"#,
    );
    f.write(
        &f.home.join(".claude/settings.json"),
        &json!({"hooks": {"PreToolUse": [command_group("Bash", "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/block-rm.sh")]}}),
    );
    let engine = f.engine();
    let outcome = run(&engine, shell_call("rm -rf /tmp/x")).await;
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
    assert_eq!(
        outcome.reason.as_deref(),
        Some("Blocked: rm -rf /tmp/x is destructive")
    );
    let outcome = run(&engine, shell_call("ls")).await;
    assert_eq!(outcome, Default::default());
}

#[tokio::test]
async fn exit_two_blocks_with_stderr_and_exit_one_is_a_failure_that_does_not() {
    let f = Fixture::new();
    let outcome = pre_tool_use(
        &f,
        "echo 'not here' >&2; echo '{\"decision\":\"approve\"}'; exit 2",
        "ls",
    )
    .await;
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
    assert_eq!(
        outcome.reason.as_deref(),
        Some("not here"),
        "stdout is ignored"
    );
    let outcome = pre_tool_use(&f, "echo oops >&2; exit 1", "ls").await;
    assert_eq!(outcome.decision, None);
    assert_eq!(outcome.failures.len(), 1);
    assert_eq!(outcome.failures[0].message, "exit code 1: oops");
    let hook = &outcome.failures[0].hook;
    assert!(
        hook.contains("echo oops") && hook.contains("settings.json"),
        "{hook}"
    );
}

#[tokio::test]
async fn garbage_is_a_message_and_a_broken_json_object_refuses_naming_the_hook() {
    let f = Fixture::new();
    let outcome = pre_tool_use(&f, "echo 'lorem ipsum'", "ls").await;
    assert_eq!(outcome.decision, None);
    assert_eq!(outcome.system_messages, vec!["lorem ipsum"]);
    let outcome = pre_tool_use(&f, "echo '{\"hookSpecificOutput\": {'", "ls").await;
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
    let reason = outcome.reason.unwrap();
    assert!(
        reason.contains("not valid JSON") && reason.contains("echo"),
        "{reason}"
    );
    let answer = json!({"hookSpecificOutput": {"permissionDecision": "sure"}});
    let outcome = pre_tool_use(&f, &format!("echo '{answer}'"), "ls").await;
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
    assert!(outcome.reason.unwrap().contains("\"sure\""));
    // The same garbage after a call does not refuse: it is a failure.
    f.user_hooks(json!({"PostToolUse": [command_group("", "echo '{oops'")]}));
    let mut request = HookRequest::new(HookEvent::PostToolUse);
    request.target = Some("read_file".into());
    let outcome = run(&f.engine(), request).await;
    assert_eq!(outcome.decision, None);
    assert_eq!(outcome.failures.len(), 1);
}

#[tokio::test]
async fn a_hook_that_hangs_is_ended_at_its_timeout_with_everything_it_started() {
    let f = Fixture::new();
    let pids = f.project.join("pids");
    f.user_hooks(json!({"PreToolUse": [{"hooks": [{"type": "command", "timeout": 2,
        "command": format!("sleep 1000 & echo \"$$ $! $TOOLBELT_OWNER\" > {}; wait", pids.display())}]}]}));
    let started = Instant::now();
    let outcome = run(&f.engine(), shell_call("ls")).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(outcome.decision, None);
    assert_eq!(outcome.failures.len(), 1);
    let message = &outcome.failures[0].message;
    assert!(message.contains("did not finish within 2 s"), "{message}");
    assert_no_process_left(&std::fs::read_to_string(&pids).unwrap());
}

#[tokio::test]
async fn cancelling_ends_a_hanging_hook_and_what_it_started() {
    let f = Fixture::new();
    let pids = f.project.join("pids");
    let ready = f.project.join("ready");
    f.user_hooks(json!({"PreToolUse": [command_group("", &format!(
        "(setsid sleep 1000 &) ; sleep 1000 & echo \"$$ $! $TOOLBELT_OWNER\" > {p}; touch {r}; wait",
        p = pids.display(), r = ready.display()))]}));
    let engine = f.engine();
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let engine = engine.clone();
        let cancel = cancel.clone();
        async move { engine.run(shell_call("ls"), cancel).await }
    });
    while !ready.exists() {
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cancel.cancel();
    let outcome = running.await.unwrap();
    assert!(
        outcome.failures[0].message.starts_with("cancelled"),
        "{:?}",
        outcome.failures
    );
    assert_no_process_left(&std::fs::read_to_string(&pids).unwrap());
}

/// `pids`: the hook's pid (its group), a child's pid and its owner marker. None of the
/// group, the child, nor anything carrying the marker is alive.
fn assert_no_process_left(pids: &str) {
    let words: Vec<&str> = pids.split_whitespace().collect();
    let leader: u32 = words[0].parse().unwrap();
    let child: u32 = words[1].parse().unwrap();
    let marker = words[2];
    assert!(
        toolbelt_process::live_members(leader).is_empty(),
        "the group is gone"
    );
    assert!(
        procfs::stat(child).is_none_or(|p| !p.is_alive()),
        "the child is gone"
    );
    let marked: Vec<u32> = procfs::all()
        .into_iter()
        .filter(|p| p.is_alive() && procfs::has_env(p.pid, "TOOLBELT_OWNER", marker))
        .map(|p| p.pid)
        .collect();
    assert!(
        marked.is_empty(),
        "processes with the hook's marker: {marked:?}"
    );
}

#[tokio::test]
async fn the_input_and_environment_name_the_session_and_the_project() {
    let f = Fixture::new();
    f.user_hooks(json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
        "env": {"MY_VAR": "mine"},
        "command": "input=$(cat); jq -n --arg p \"$(pwd)\" --argjson i \"$input\" '{systemMessage: ([env.QWEN_PROJECT_DIR, env.CLAUDE_PROJECT_DIR, env.GEMINI_PROJECT_DIR, env.MY_VAR, $p] | join(\" \")), hookSpecificOutput: {additionalContext: ($i | tojson)}}'"}]}]}));
    let outcome = run(&f.engine(), shell_call("ls -la")).await;
    let dir = f.project.display().to_string();
    assert_eq!(
        outcome.system_messages,
        vec![format!("{dir} {dir} {dir} mine {dir}")],
        "{outcome:?}"
    );
    let input: Value = serde_json::from_str(&outcome.additional_context[0]).unwrap();
    assert_eq!(input["session_id"], "session-1");
    assert_eq!(
        input["transcript_path"],
        f.project.join("transcript.jsonl").display().to_string()
    );
    assert_eq!(input["cwd"], dir);
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["permission_mode"], "default");
    assert_eq!(input["tool_name"], "run_shell_command");
    assert_eq!(input["tool_input"], json!({"command": "ls -la"}));
    assert_eq!(input["tool_use_id"], "call-1");
    assert!(input["timestamp"].as_str().unwrap().ends_with('Z'));
}

#[tokio::test]
async fn a_resumed_session_gives_its_id_and_transcript() {
    let f = Fixture::new();
    f.user_hooks(json!({"Stop": [command_group("", "jq -c '{systemMessage: (.session_id + \" \" + .transcript_path)}'")]}));
    let engine = f.engine();
    engine.set_session("resumed-9", Some("/t/resumed-9.jsonl".into()));
    let outcome = run(&engine, HookRequest::new(HookEvent::Stop)).await;
    assert_eq!(
        outcome.system_messages,
        vec!["resumed-9 /t/resumed-9.jsonl"]
    );
}

#[tokio::test]
async fn a_program_with_args_runs_without_a_shell() {
    let f = Fixture::new();
    f.user_hooks(
        json!({"Notification": [{"hooks": [{"type": "command", "command": "printf",
        "args": ["%s|", "$HOME", "a b"]}]}]}),
    );
    let outcome = run(&f.engine(), HookRequest::new(HookEvent::Notification)).await;
    assert_eq!(outcome.system_messages, vec!["$HOME|a b|"]);
}

#[tokio::test]
async fn parallel_hooks_combine_deny_over_ask_over_allow_in_configuration_order() {
    let f = Fixture::new();
    let answer = |d: &str, r: &str| {
        format!(
            "echo '{}'",
            json!({"hookSpecificOutput": {"permissionDecision": d, "permissionDecisionReason": r}})
        )
    };
    // Finishing order is the reverse of configuration order.
    f.write(
        &f.project_file(),
        &json!({"hooks": {"PreToolUse": [
            command_group("", &format!("sleep 0.3; {}", answer("allow", "project allows"))),
            command_group("", &format!("sleep 0.2; {}", answer("deny", "project denies"))),
        ]}}),
    );
    f.user_hooks(json!({"PreToolUse": [
        command_group("", &format!("sleep 0.1; {}", answer("ask", "user asks"))),
        command_group("", &answer("deny", "user denies")),
    ]}));
    let started = Instant::now();
    let outcome = run(&f.engine(), shell_call("ls")).await;
    assert!(
        started.elapsed() < Duration::from_millis(550),
        "side by side: {:?}",
        started.elapsed()
    );
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
    assert_eq!(
        outcome.reason.as_deref(),
        Some("project denies\nuser denies")
    );
    // Without the denials, ask wins.
    f.write(
        &f.project_file(),
        &json!({"hooks": {"PreToolUse": [command_group("", &answer("allow", "ok"))]}}),
    );
    f.user_hooks(json!({"PreToolUse": [command_group("", &answer("ask", "check"))]}));
    let outcome = run(&f.engine(), shell_call("ls")).await;
    assert_eq!(
        (outcome.decision, outcome.reason.as_deref()),
        (Some(HookDecision::Ask), Some("check"))
    );
}

#[tokio::test]
async fn two_different_rewrites_are_refused_and_a_sequential_chain_passes_its_rewrite_on() {
    let f = Fixture::new();
    let rewrite = |c: &str| {
        format!(
            "echo '{}'",
            json!({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": c}}})
        )
    };
    f.user_hooks(json!({"PreToolUse": [
        command_group("", &rewrite("ls -1")),
        {"hooks": [{"type": "command", "name": "second", "command": rewrite("ls -2")}]},
    ]}));
    let outcome = run(&f.engine(), shell_call("ls")).await;
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
    assert_eq!(outcome.updated_input, None);
    let reason = outcome.reason.unwrap();
    assert!(
        reason.contains("hooks `echo '{") && reason.contains(" and second ("),
        "{reason}"
    );

    f.user_hooks(json!({"PreToolUse": [{"sequential": true, "hooks": [
        {"type": "command", "command": rewrite("ls -1")},
        {"type": "command", "command": "jq -c '{hookSpecificOutput: {updatedInput: {command: (.tool_input.command + \" -a\")}}}'"},
    ]}]}));
    let outcome = run(&f.engine(), shell_call("ls")).await;
    assert_eq!(outcome.decision, Some(HookDecision::Allow));
    assert_eq!(outcome.updated_input, Some(json!({"command": "ls -1 -a"})));
}

#[tokio::test]
async fn the_same_command_in_two_files_runs_once() {
    let f = Fixture::new();
    let count = f.project.join("count");
    let command = format!("echo x >> {}", count.display());
    f.user_hooks(json!({"PreToolUse": [command_group("Bash", &command)]}));
    f.write(
        &f.home.join(".claude/settings.json"),
        &json!({"hooks": {"PreToolUse": [command_group("", &command)]}}),
    );
    run(&f.engine(), shell_call("ls")).await;
    assert_eq!(std::fs::read_to_string(&count).unwrap(), "x\n");
}

#[tokio::test]
async fn plain_stdout_is_context_on_session_start_and_output_past_the_cap_refuses() {
    let f = Fixture::new();
    f.user_hooks(json!({
        "SessionStart": [command_group("startup", "echo 'branch: main'")],
        "UserPromptSubmit": [command_group("", "head -c 2000000 /dev/zero | tr '\\0' a")],
    }));
    let engine = f.engine();
    let mut start = HookRequest::new(HookEvent::SessionStart).field("source", "startup");
    start.target = Some("startup".into());
    let outcome = run(&engine, start).await;
    assert_eq!(outcome.additional_context, vec!["branch: main"]);
    let outcome = run(
        &engine,
        HookRequest::new(HookEvent::UserPromptSubmit).field("prompt", "hi"),
    )
    .await;
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
    assert!(outcome.reason.unwrap().contains("passed 1 MiB"));
}

#[tokio::test]
async fn a_timeout_of_1000_or_more_is_milliseconds_and_a_bad_one_is_the_default() {
    let f = Fixture::new();
    f.user_hooks(json!({"PreToolUse": [
        {"hooks": [{"type": "command", "command": "sleep 5", "timeout": 1000}]},
        {"hooks": [{"type": "command", "command": "true", "timeout": "30s"}]},
    ]}));
    let listing = toolbelt_hooks::HookListing::from_settings(&f.settings());
    let timeouts: Vec<f64> = listing.hooks.iter().map(|h| h.timeout_seconds).collect();
    assert_eq!(timeouts, vec![1.0, 60.0]);
    let outcome = run(&f.engine(), shell_call("ls")).await;
    assert!(
        outcome.failures[0].message.contains("within 1 s"),
        "{:?}",
        outcome.failures
    );
}

#[tokio::test]
async fn wants_answers_without_running_anything() {
    let f = Fixture::new();
    f.user_hooks(json!({"PreToolUse": [command_group("Edit|Write", "exit 1")]}));
    let engine = f.engine();
    assert!(engine.wants(
        HookEvent::PreToolUse,
        Some("write_file"),
        &["Write".into(), "WriteFile".into()]
    ));
    assert!(!engine.wants(
        HookEvent::PreToolUse,
        Some("run_shell_command"),
        &["Bash".into()]
    ));
    assert!(!engine.wants(
        HookEvent::PostToolUse,
        Some("write_file"),
        &["Write".into()]
    ));
}
