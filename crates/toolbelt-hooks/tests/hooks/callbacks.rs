//! SDK hook callbacks (stream-JSON `initialize.hooks`), with an in-test SDK.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;
use toolbelt_core::hooks::{HookDecision, HookEvent, HookRunner};
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
    ) -> BoxFuture<'static, Result<Value, String>> {
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
