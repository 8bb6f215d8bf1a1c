//! What one hook's answer means, event by event; and that no answer panics.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use HookDecision::*;
use HookEvent::*;

fn json_reply(event: HookEvent, value: Value) -> Reply {
    let Value::Object(map) = value else {
        panic!("an object")
    };
    reply(event, "h (f)", Answer::Json(map))
}

#[test]
fn pre_tool_use_permission_decisions_with_reasons_and_rewrites() {
    let r = json_reply(
        PreToolUse,
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny", "permissionDecisionReason": "no rm",
            "additionalContext": "ctx"}}),
    );
    assert_eq!(
        (r.decision, r.reason.as_deref()),
        (Some(Deny), Some("no rm"))
    );
    assert_eq!(r.context.as_deref(), Some("ctx"));
    let r = json_reply(
        PreToolUse,
        json!({"hookSpecificOutput": {"permissionDecision": "allow",
            "updatedInput": {"command": "ls"}}}),
    );
    assert_eq!(r.decision, Some(Allow));
    assert_eq!(r.updated_input, Some(json!({"command": "ls"})));
    let r = json_reply(
        PreToolUse,
        json!({"hookSpecificOutput": {"permissionDecision": "ask"}}),
    );
    assert_eq!(r.decision, Some(Ask));
    let r = json_reply(
        PreToolUse,
        json!({"hookSpecificOutput": {"permissionDecision": "defer"}}),
    );
    assert_eq!(r.decision, None);
    // The legacy top-level spelling, and permissionDecision winning over it.
    assert_eq!(
        json_reply(PreToolUse, json!({"decision": "approve"})).decision,
        Some(Allow)
    );
    assert_eq!(
        json_reply(PreToolUse, json!({"decision": "block", "reason": "r"}))
            .reason
            .as_deref(),
        Some("r")
    );
    let r = json_reply(
        PreToolUse,
        json!({"decision": "approve", "hookSpecificOutput": {"permissionDecision": "deny"}}),
    );
    assert_eq!(r.decision, Some(Deny));
}

#[test]
fn permission_request_decisions_are_objects_with_a_behavior() {
    let r = json_reply(
        PermissionRequest,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow", "updatedInput": {"a": 1}, "message": "ok"}}}),
    );
    assert_eq!(r.decision, Some(Allow));
    assert_eq!(r.updated_input, Some(json!({"a": 1})));
    assert_eq!(r.reason.as_deref(), Some("ok"));
    let r = json_reply(
        PermissionRequest,
        json!({"hookSpecificOutput": {"decision": {"behavior": "maybe"}}}),
    );
    assert_eq!(r.decision, Some(Deny));
    assert!(
        r.reason.unwrap().contains("behavior"),
        "names what is wrong"
    );
}

#[test]
fn common_fields_stop_suppress_and_message() {
    let r = json_reply(
        Notification,
        json!({"continue": false, "stopReason": "enough", "suppressOutput": true,
            "systemMessage": "hello", "decision": "block"}),
    );
    assert_eq!(r.stop.as_deref(), Some("enough"));
    assert!(r.suppress_output);
    assert_eq!(r.system_message.as_deref(), Some("hello"));
    assert_eq!(r.decision, None, "a Notification hook cannot refuse");
    let r = json_reply(Stop, json!({"decision": "block", "reason": "go on"}));
    assert_eq!(
        (r.decision, r.reason.as_deref()),
        (Some(Deny), Some("go on"))
    );
    let r = json_reply(SessionStart, json!({"continue": false}));
    assert!(r.stop.is_some());
}

#[test]
fn plain_text_is_context_or_a_message_by_event() {
    let text = classify_stdout("  remember the tests\n");
    assert_eq!(text, Answer::Text("remember the tests".into()));
    let r = reply(SessionStart, "h", text.clone());
    assert_eq!(r.context.as_deref(), Some("remember the tests"));
    let r = reply(UserPromptSubmit, "h", text.clone());
    assert_eq!(r.context.as_deref(), Some("remember the tests"));
    let r = reply(PostToolUse, "h", text);
    assert_eq!(r.system_message.as_deref(), Some("remember the tests"));
    // A bare JSON value is text, not an answer.
    assert_eq!(classify_stdout("42"), Answer::Text("42".into()));
    assert_eq!(classify_stdout(" \n"), Answer::Empty);
}

#[test]
fn exit_two_blocks_where_the_event_can_block_and_fails_elsewhere() {
    for event in [
        PreToolUse,
        PermissionRequest,
        UserPromptSubmit,
        Stop,
        SubagentStop,
        PostToolUse,
        PostToolUseFailure,
    ] {
        let r = reply(event, "h", Answer::Blocked("no rm here\n".into()));
        assert_eq!(
            (r.decision, r.reason.as_deref()),
            (Some(Deny), Some("no rm here")),
            "{event}"
        );
    }
    for event in [
        SessionStart,
        SessionEnd,
        Notification,
        PreCompact,
        SubagentStart,
        PermissionDenied,
    ] {
        let r = reply(event, "h", Answer::Blocked("x".into()));
        assert_eq!(r.decision, None, "{event}");
        assert!(r.failure.unwrap().contains("exit code 2"));
    }
    let r = reply(PreToolUse, "check (f)", Answer::Blocked(String::new()));
    assert!(r.reason.unwrap().contains("check (f)"));
}

#[test]
fn unreadable_answers_refuse_where_hooks_decide_and_fail_elsewhere() {
    let garbage = classify_stdout("{\"hookSpecificOutput\": ");
    assert!(matches!(garbage, Answer::Malformed(_)));
    for event in [PreToolUse, PermissionRequest, UserPromptSubmit] {
        let r = reply(event, "guard (f)", garbage.clone());
        assert_eq!(r.decision, Some(Deny), "{event}");
        let reason = r.reason.unwrap();
        assert!(
            reason.contains("guard (f)") && reason.contains("not valid JSON"),
            "{reason}"
        );
    }
    let r = reply(PostToolUse, "h", garbage);
    assert_eq!(r.decision, None);
    assert!(r.failure.is_some());
    for bad in [
        json!({"hookSpecificOutput": {"permissionDecision": "yes"}}),
        json!({"hookSpecificOutput": {"permissionDecision": 1}}),
        json!({"hookSpecificOutput": {"updatedInput": "rm -rf /"}}),
        json!({"hookSpecificOutput": "deny"}),
        json!({"hookSpecificOutput": {"hookEventName": "PostToolUse"}}),
        json!({"continue": "no"}),
        json!({"decision": "nope"}),
        json!({"systemMessage": 5}),
    ] {
        let r = json_reply(PreToolUse, bad.clone());
        assert_eq!(r.decision, Some(Deny), "{bad}");
    }
}

#[test]
fn failures_do_not_decide() {
    let r = reply(PreToolUse, "h", Answer::Failed("exit code 1: oops".into()));
    assert_eq!(r.decision, None);
    assert_eq!(r.failure.as_deref(), Some("exit code 1: oops"));
}

/// Any JSON value, a few levels deep, with the keys hooks use.
fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just("allow".to_string()),
            Just("deny".to_string()),
            Just("ask".to_string()),
            Just("block".to_string()),
            Just("PreToolUse".to_string()),
            ".{0,12}",
        ]
        .prop_map(Value::String),
    ];
    let keys = prop_oneof![
        Just("continue".to_string()),
        Just("stopReason".to_string()),
        Just("decision".to_string()),
        Just("reason".to_string()),
        Just("hookSpecificOutput".to_string()),
        Just("hookEventName".to_string()),
        Just("permissionDecision".to_string()),
        Just("updatedInput".to_string()),
        Just("behavior".to_string()),
        Just("additionalContext".to_string()),
        ".{0,8}",
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(keys.clone(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn no_stdout_panics(text in ".{0,200}") {
        for event in HookEvent::ALL {
            let _ = reply(event, "h", classify_stdout(&text));
        }
    }

    #[test]
    fn no_json_answer_panics_and_a_deciding_event_never_allows_what_it_cannot_read(value in arbitrary_json()) {
        let answer = match value {
            Value::Object(map) => Answer::Json(map),
            other => classify_stdout(&other.to_string()),
        };
        for event in HookEvent::ALL {
            let r = reply(event, "h", answer.clone());
            if r.failure.is_some() {
                prop_assert!(r.decision.is_none());
            }
        }
    }
}
