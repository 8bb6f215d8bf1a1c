//! SDK hook callbacks (stream-JSON `initialize.hooks`), with an in-test SDK.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;
use toolbelt_engine::{hooks::HookDecision, hooks::HookEvent, hooks::HookRunner};
use toolbelt_hooks::{HookCallbacks, HookConfig, HookEngine};

use crate::support::{Fixture, command_group, run, shell_call};

/// One call the SDK received: the callback id, the input, the call's id.
type Call = (String, Value, Option<String>);

/// Answers `deny` for `h-deny`, hangs for `h-hang` (until cancelled), fails for
/// `h-fail`, answers a string for `h-odd`; records every call and its token.
#[derive(Clone, Default)]
struct Sdk {
    calls: Arc<Mutex<Vec<Call>>>,
    tokens: Arc<Mutex<Vec<CancellationToken>>>,
}

impl HookCallbacks for Sdk {
    fn call(
        &self,
        callback_id: &str,
        input: Value,
        tool_use_id: Option<String>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Value, toolbelt_core::EmbedderError>> {
        self.calls
            .lock()
            .unwrap()
            .push((callback_id.to_string(), input, tool_use_id));
        self.tokens.lock().unwrap().push(cancel.clone());
        let id = callback_id.to_string();
        Box::pin(async move {
            match id.as_str() {
                "h-deny" => Ok(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                    "permissionDecision": "deny", "permissionDecisionReason": "the SDK says no"}})),
                "h-hang" => {
                    cancel.cancelled().await;
                    Ok(Value::Null)
                }
                "h-fail" => Err("boom".into()),
                "h-odd" => Ok(json!("yes")),
                _ => Ok(json!({})),
            }
        })
    }
}

#[tokio::test]
async fn callbacks_run_after_the_settings_hooks_with_the_call_id() {
    let f = Fixture::new();
    f.user_hooks(json!({"PreToolUse": [command_group("", "echo from-settings")]}));
    let engine = f.engine();
    let sdk = Sdk::default();
    engine
        .add_callbacks(
            &json!({"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["h-deny", "h-fail"]}],
                    "Stop": [{"hookCallbackIds": ["h-ok"]}]}),
            Arc::new(sdk.clone()),
        )
        .unwrap();
    let outcome = run(&engine, shell_call("rm -rf /")).await;
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
    assert_eq!(outcome.reason.as_deref(), Some("the SDK says no"));
    assert_eq!(outcome.system_messages, vec!["from-settings"]);
    assert_eq!(outcome.failures.len(), 1);
    assert_eq!(
        outcome.failures[0].message,
        "the SDK's callback failed: boom"
    );
    assert!(outcome.failures[0].hook.contains("h-fail"));
    let calls = sdk.calls.lock().unwrap().clone();
    let ids: Vec<&str> = calls.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(ids, vec!["h-deny", "h-fail"]);
    assert_eq!(calls[0].1["tool_input"]["command"], "rm -rf /");
    assert_eq!(calls[0].2.as_deref(), Some("call-1"));
    assert!(engine.wants(HookEvent::Stop, None, &[]));
}

#[tokio::test]
async fn a_callback_past_its_timeout_is_cancelled_and_odd_answers_refuse() {
    let f = Fixture::new();
    let engine = HookEngine::new(HookConfig::default(), f.session(), None);
    assert!(engine.is_empty());
    let sdk = Sdk::default();
    engine
        .add_callbacks(
            &json!({"PreToolUse": [{"hookCallbackIds": ["h-hang"], "timeout": 0.2}]}),
            Arc::new(sdk.clone()),
        )
        .unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(10), run(&engine, shell_call("ls")))
        .await
        .unwrap();
    assert!(
        outcome.failures[0]
            .message
            .contains("did not answer within 200 ms")
    );
    // The SDK is told to give up (a `hook_callback` it may still be working on).
    assert!(sdk.tokens.lock().unwrap()[0].is_cancelled());

    let engine = HookEngine::new(HookConfig::default(), f.session(), None);
    engine
        .add_callbacks(
            &json!({"PreToolUse": [{"hookCallbackIds": ["h-odd"]}]}),
            Arc::new(sdk.clone()),
        )
        .unwrap();
    let outcome = run(&engine, shell_call("ls")).await;
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
}

#[test]
fn a_bad_initialize_entry_is_an_error_and_adds_nothing() {
    let f = Fixture::new();
    let engine = HookEngine::new(HookConfig::default(), f.session(), None);
    let err = engine
        .add_callbacks(
            &json!({"PreToolUse": [{"hookCallbackIds": "h1"}]}),
            Arc::new(Sdk::default()),
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the SDK's initialize request: hooks.PreToolUse[0].hookCallbackIds: must be a list of callback ids"
    );
    assert!(engine.is_empty());
}

/// Answers for the tests below: `h-huge` a 2 MiB context, `h-fail` an error.
#[derive(Clone, Default)]
struct Hostile;

impl HookCallbacks for Hostile {
    fn call(
        &self,
        callback_id: &str,
        _input: Value,
        _tool_use_id: Option<String>,
        _cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Value, toolbelt_core::EmbedderError>> {
        let id = callback_id.to_string();
        Box::pin(async move {
            match id.as_str() {
                "h-huge" => Ok(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                    "additionalContext": "x".repeat(2 << 20)}})),
                "h-fail" => Err("Error: hook callback not found: h-fail".into()),
                _ => Ok(json!({})),
            }
        })
    }
}

#[tokio::test]
async fn on_failure_block_refuses_where_hooks_decide_and_a_huge_answer_refuses() {
    let f = Fixture::new();
    let engine = HookEngine::new(HookConfig::default(), f.session(), None);
    let skipped = engine
        .add_callbacks(
            &json!({"PreToolUse": [{"hookCallbackIds": ["h-fail"], "onFailure": "block"}],
                    "Stop": [{"hookCallbackIds": ["h-fail"], "onFailure": "block"}],
                    "CwdChanged": [{"hookCallbackIds": ["h-ok"]}]}),
            Arc::new(Hostile),
        )
        .unwrap();
    assert_eq!(
        skipped,
        [
            "the SDK's initialize request: hooks.CwdChanged: skipped: toolbelt does not raise the CwdChanged event"
        ]
    );
    let outcome = run(&engine, shell_call("ls")).await;
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
    let reason = outcome.reason.unwrap();
    assert!(reason.contains("set to block on failure"), "{reason}");
    assert!(reason.contains("hook callback not found"), "{reason}");
    // On Stop a block would keep the agent going: it stays a failure.
    let stop = engine
        .run(
            toolbelt_engine::hooks::HookRequest::new(HookEvent::Stop),
            CancellationToken::new(),
        )
        .await;
    assert_eq!(stop.decision, None);
    assert_eq!(stop.failures.len(), 1);

    let engine = HookEngine::new(HookConfig::default(), f.session(), None);
    engine
        .add_callbacks(
            &json!([{"event": "PreToolUse", "callback_id": "h-huge", "matcher": "Bash"}]),
            Arc::new(Hostile),
        )
        .unwrap();
    let outcome = run(&engine, shell_call("ls")).await;
    assert_eq!(outcome.decision, Some(HookDecision::Deny));
    assert!(
        outcome
            .reason
            .as_deref()
            .unwrap()
            .contains("larger than 1 MiB"),
        "{:?}",
        outcome.reason
    );
}

#[test]
fn a_bad_on_failure_is_an_error() {
    let f = Fixture::new();
    let engine = HookEngine::new(HookConfig::default(), f.session(), None);
    let err = engine
        .add_callbacks(
            &json!({"PreToolUse": [{"hookCallbackIds": ["h1"], "onFailure": "explode"}]}),
            Arc::new(Hostile),
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the SDK's initialize request: hooks.PreToolUse[0].onFailure: must be \"continue\" or \"block\""
    );
}
