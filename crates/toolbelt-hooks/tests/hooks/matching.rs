//! Which hooks an event runs: matchers on tool names and aliases, MCP tool names, the
//! events without matchers, and targets of the other events.

use serde_json::json;
use toolbelt_engine::{hooks::HookEvent, hooks::HookRequest, hooks::HookRunner};

use crate::support::{Fixture, command_group, run};

fn tool_request(name: &str, aliases: &[&str]) -> HookRequest {
    let mut request = HookRequest::new(HookEvent::PreToolUse).field("tool_name", name);
    request.target = Some(name.to_string());
    request.aliases = aliases.iter().map(|a| a.to_string()).collect();
    request
}

/// The names of the groups (their message) that ran for `request`.
async fn ran(f: &Fixture, request: HookRequest) -> Vec<String> {
    run(&f.engine(), request).await.system_messages
}

#[tokio::test]
async fn claude_matchers_and_runtime_names_select_the_same_hooks() {
    let f = Fixture::new();
    f.user_hooks(json!({"PreToolUse": [
        command_group("Bash", "echo bash"),
        command_group("Edit|Write", "echo edit-or-write"),
        command_group("^run_shell_command$", "echo anchored"),
        command_group("mcp__memory__.*", "echo memory"),
        command_group("read", "echo read-ish"),
    ]}));
    assert_eq!(
        ran(&f, tool_request("run_shell_command", &["Bash", "Shell"])).await,
        vec!["bash", "anchored"]
    );
    assert_eq!(
        ran(&f, tool_request("write_file", &["Write", "WriteFile"])).await,
        vec!["edit-or-write"]
    );
    assert_eq!(
        ran(&f, tool_request("edit", &["Edit"])).await,
        vec!["edit-or-write"]
    );
    assert_eq!(
        ran(&f, tool_request("mcp__memory__read_graph", &[])).await,
        vec!["memory", "read-ish"]
    );
    assert_eq!(
        ran(&f, tool_request("read_file", &["Read", "ReadFile"])).await,
        vec!["read-ish"]
    );
    assert!(ran(&f, tool_request("glob", &["Glob"])).await.is_empty());
}

#[tokio::test]
async fn events_without_matchers_ignore_them_and_others_match_their_target() {
    let f = Fixture::new();
    f.user_hooks(json!({
        "UserPromptSubmit": [command_group("nothing-matches-this", "echo prompt")],
        "Stop": [command_group("x", "echo stop")],
        "SessionStart": [command_group("resume|compact", "echo resumed"), command_group("", "echo any-start")],
        "SubagentStart": [command_group("^(Explorer|Plan)$", "echo explorer")],
    }));
    assert_eq!(
        ran(&f, HookRequest::new(HookEvent::UserPromptSubmit)).await,
        Vec::<String>::new(),
        "plain text is context there"
    );
    let outcome = run(&f.engine(), HookRequest::new(HookEvent::UserPromptSubmit)).await;
    assert_eq!(outcome.additional_context, vec!["prompt"]);
    assert_eq!(
        ran(&f, HookRequest::new(HookEvent::Stop)).await,
        vec!["stop"]
    );
    let start = |source: &str| {
        let mut r = HookRequest::new(HookEvent::SessionStart).field("source", source);
        r.target = Some(source.to_string());
        r
    };
    let engine = f.engine();
    assert_eq!(
        run(&engine, start("resume")).await.additional_context,
        vec!["resumed", "any-start"]
    );
    assert_eq!(
        run(&engine, start("startup")).await.additional_context,
        vec!["any-start"]
    );
    let mut sub = HookRequest::new(HookEvent::SubagentStart);
    sub.target = Some("Explorer".into());
    assert_eq!(ran(&f, sub).await, vec!["explorer"]);
    // An event with matchers but no target runs only the groups that match everything.
    assert!(engine.wants(HookEvent::SessionStart, None, &[]));
    assert!(!engine.wants(HookEvent::SubagentStart, None, &[]));
}
