//! The session's hooks at every step of a call, with a runner of our own that answers
//! each event with a fixed outcome and keeps every request it got: what each decision
//! does to the call, what the model and the person are told, and what it can never do
//! (pass a deny or ask rule, plan mode, protected configuration, the workspace boundary).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use super::fixtures::*;
use super::protected_tests::{Recorder, Setup};
use crate::hooks::{
    HookDecision, HookEvent, HookFailure, HookMessage, HookOutcome, HookRequest, HookRunner,
};
use crate::rules::RuleList;
use crate::scheduler::*;
use toolbelt_core::ConfirmationOutcome;
use toolbelt_core::ErrorKind;
use toolbelt_core::{BoxFuture, Kind, ToolEnvironment};

/// Answers each event it has an outcome for (and only those: it wants no other), and
/// keeps every request. With `hang`, PreToolUse waits until its token is cancelled.
#[derive(Default)]
struct Hooks {
    answers: HashMap<HookEvent, HookOutcome>,
    requests: Mutex<Vec<HookRequest>>,
    hang: Option<Arc<Notify>>,
    /// Whether a hung hook saw its token cancelled.
    cancelled: Arc<Mutex<bool>>,
}

impl Hooks {
    fn new() -> Self {
        Hooks::default()
    }

    fn on(mut self, event: HookEvent, outcome: HookOutcome) -> Self {
        self.answers.insert(event, outcome);
        self
    }

    fn requests(&self, event: HookEvent) -> Vec<HookRequest> {
        let all = self.requests.lock().unwrap();
        all.iter().filter(|r| r.event == event).cloned().collect()
    }

    fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

impl HookRunner for Hooks {
    fn wants(&self, event: HookEvent, _target: Option<&str>, _aliases: &[String]) -> bool {
        self.answers.contains_key(&event)
    }

    fn run(
        &self,
        request: HookRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, HookOutcome> {
        let event = request.event;
        self.requests.lock().unwrap().push(request);
        let outcome = self.answers.get(&event).cloned().unwrap_or_default();
        let hang = self.hang.clone().filter(|_| event == HookEvent::PreToolUse);
        let cancelled = self.cancelled.clone();
        Box::pin(async move {
            if let Some(started) = hang {
                started.notify_one();
                cancel.cancelled().await;
                *cancelled.lock().unwrap() = true;
            }
            outcome
        })
    }
}

fn decision(decision: HookDecision, reason: &str) -> HookOutcome {
    HookOutcome {
        decision: Some(decision),
        reason: Some(reason.to_string()),
        ..Default::default()
    }
}

fn rewrite(decision: Option<HookDecision>, input: Value) -> HookOutcome {
    HookOutcome {
        decision,
        updated_input: Some(input),
        ..Default::default()
    }
}

fn context(text: &str) -> HookOutcome {
    HookOutcome {
        additional_context: vec![text.to_string()],
        ..Default::default()
    }
}

fn scheduler(
    env: Arc<ToolEnvironment>,
    mode: ApprovalMode,
    approver: Option<Arc<dyn Approver>>,
    permissions: Option<Permissions>,
    hooks: &Arc<Hooks>,
) -> (Scheduler, mpsc::UnboundedReceiver<SchedulerEvent>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let permissions =
        permissions.unwrap_or_else(|| Permissions::new(&crate::rules::RuleVocabulary::default()));
    let rules = CallRules::new(permissions, mode, Some(hooks.clone()), None);
    let config = SchedulerConfig::new(rules).approver(approver).events(tx);
    (Scheduler::new(env, config), rx)
}

fn rules(list: RuleList, rule: &str) -> Permissions {
    let mut permissions = Permissions::from_rules(crate::rules::tests::empty_rules());
    permissions.add(list, rule);
    permissions
}

fn text(call: &CompletedCall) -> String {
    text_for_model(&call.result)
}

fn refusal(call: &CompletedCall) -> String {
    let error = call.result.error.as_ref().expect("the call was refused");
    assert_eq!(error.kind, ErrorKind::ExecutionDenied, "{}", error.message);
    error.message.clone()
}

fn hook_messages(rx: &mut mpsc::UnboundedReceiver<SchedulerEvent>) -> Vec<HookMessage> {
    let mut out = Vec::new();
    while let Ok(event) = rx.try_recv() {
        if let SchedulerEvent::Hook { message, .. } = event {
            out.push(message);
        }
    }
    out
}

fn edit_tool() -> ToolRegistry {
    registry(vec![
        TestTool::new("t", Kind::Edit, Behaviour::Echo),
        TestTool::new("x", Kind::Execute, Behaviour::Echo),
        TestTool::new("r", Kind::Read, Behaviour::Echo),
    ])
}

#[tokio::test]
async fn a_deny_reaches_the_model_with_the_reason_and_the_tool_does_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Arc::new(
        Hooks::new()
            .on(
                HookEvent::PreToolUse,
                decision(HookDecision::Deny, "rm is not allowed here"),
            )
            .on(HookEvent::PermissionDenied, HookOutcome::default()),
    );
    let (s, _rx) = scheduler(env(&dir), ApprovalMode::Yolo, None, None, &hooks);
    let out = run(&s, &edit_tool(), vec![call("1", "x", "rm -rf /")]).await;
    let message = refusal(&out[0]);
    assert!(
        message.contains("blocked by a PreToolUse hook: rm is not allowed here"),
        "{message}"
    );
    assert!(!text(&out[0]).contains("echo:"), "the tool ran");
    // The hook's own refusal is not reported back to the hooks.
    assert!(hooks.requests(HookEvent::PermissionDenied).is_empty());
    let pre = hooks.requests(HookEvent::PreToolUse);
    assert_eq!(pre.len(), 1);
    assert_eq!(pre[0].target.as_deref(), Some("x"));
    assert_eq!(pre[0].fields["tool_name"], "x");
    assert_eq!(pre[0].fields["tool_input"], json!({"value": "rm -rf /"}));
    assert_eq!(pre[0].fields["tool_use_id"], "1");
    assert_eq!(pre[0].fields["tool_call_id"], "1");
    assert_eq!(pre[0].permission_mode.as_deref(), Some("yolo"));
    assert!(pre[0].nobody_to_ask);
}

#[tokio::test]
async fn the_request_names_the_tool_by_its_display_name_and_rule_aliases_too() {
    let w = Setup::new();
    let hooks = Arc::new(Hooks::new().on(HookEvent::PreToolUse, HookOutcome::default()));
    let (s, _rx) = scheduler(w.env.clone(), ApprovalMode::AutoEdit, None, None, &hooks);
    run(&s, &w.registry, vec![w.write("1", "a.txt")]).await;
    let pre = hooks.requests(HookEvent::PreToolUse);
    assert_eq!(pre[0].target.as_deref(), Some("edit"));
    assert_eq!(pre[0].aliases, ["Edit"]);
    assert_eq!(pre[0].permission_mode.as_deref(), Some("auto_edit"));
}

#[tokio::test]
async fn allow_skips_the_question() {
    let dir = tempfile::tempdir().unwrap();
    let hooks =
        Arc::new(Hooks::new().on(HookEvent::PreToolUse, decision(HookDecision::Allow, "fine")));
    let person = Recorder::new(ConfirmationOutcome::Cancel);
    let (s, _rx) = scheduler(
        env(&dir),
        ApprovalMode::Default,
        Some(person.clone()),
        None,
        &hooks,
    );
    let out = run(&s, &edit_tool(), vec![call("1", "t", "a")]).await;
    assert_eq!(out[0].state, CallState::Success, "{:?}", out[0].result);
    assert!(person.asked().is_empty());
    // Headless too: the hook answered, nobody had to.
    let (s, _rx) = scheduler(env(&dir), ApprovalMode::Default, None, None, &hooks);
    let out = run(&s, &edit_tool(), vec![call("2", "t", "a")]).await;
    assert_eq!(out[0].state, CallState::Success, "{:?}", out[0].result);
}

#[tokio::test]
async fn allow_never_passes_a_deny_rule_an_ask_rule_or_plan_mode() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Arc::new(
        Hooks::new()
            .on(HookEvent::PreToolUse, decision(HookDecision::Allow, "ok"))
            .on(HookEvent::PermissionDenied, HookOutcome::default()),
    );
    let (s, _rx) = scheduler(
        env(&dir),
        ApprovalMode::Yolo,
        None,
        Some(rules(RuleList::Deny, "t")),
        &hooks,
    );
    let out = run(&s, &edit_tool(), vec![call("1", "t", "a")]).await;
    assert!(refusal(&out[0]).contains("denied by permission rules"));
    let denied = hooks.requests(HookEvent::PermissionDenied);
    assert_eq!(denied[0].fields["reason"], "permission_rule");
    assert_eq!(denied[0].fields["tool_name"], "t");

    let person = Recorder::new(ConfirmationOutcome::ProceedOnce);
    let (s, _rx) = scheduler(
        env(&dir),
        ApprovalMode::Default,
        Some(person.clone()),
        Some(rules(RuleList::Ask, "t")),
        &hooks,
    );
    let out = run(&s, &edit_tool(), vec![call("2", "t", "a")]).await;
    assert_eq!(out[0].state, CallState::Success);
    assert_eq!(person.asked().len(), 1, "an ask rule still asks");

    let (s, _rx) = scheduler(env(&dir), ApprovalMode::Plan, None, None, &hooks);
    let out = run(&s, &edit_tool(), vec![call("3", "t", "a")]).await;
    assert!(refusal(&out[0]).contains("Plan mode is active"));
    let denied = hooks.requests(HookEvent::PermissionDenied);
    assert_eq!(denied.last().unwrap().fields["reason"], "plan_mode");
}

#[tokio::test]
async fn allow_never_approves_protected_configuration() {
    let w = Setup::new();
    let hooks = Arc::new(
        Hooks::new()
            .on(HookEvent::PreToolUse, decision(HookDecision::Allow, "ok"))
            .on(
                HookEvent::PermissionRequest,
                decision(HookDecision::Allow, "ok"),
            ),
    );
    let person = Recorder::new(ConfirmationOutcome::Cancel);
    let (s, mut rx) = scheduler(
        w.env.clone(),
        ApprovalMode::Default,
        Some(person.clone()),
        None,
        &hooks,
    );
    let out = run(&s, &w.registry, vec![w.write("1", ".qwen/settings.json")]).await;
    assert_eq!(person.asked().len(), 1, "the person is asked all the same");
    assert_eq!(out[0].state, CallState::Cancelled);
    assert_eq!(w.read(".qwen/settings.json").as_deref(), Some("{}"));
    let said = hook_messages(&mut rx);
    assert!(
        said.iter()
            .any(|m| m.text.contains("protected configuration")),
        "{said:?}"
    );
    // Headless, nobody approves it: refused.
    let (s, _rx) = scheduler(w.env.clone(), ApprovalMode::Default, None, None, &hooks);
    let out = run(&s, &w.registry, vec![w.write("2", ".qwen/settings.json")]).await;
    refusal(&out[0]);
    assert_eq!(w.read(".qwen/settings.json").as_deref(), Some("{}"));
}

#[tokio::test]
async fn ask_asks_even_in_yolo_and_without_always() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Arc::new(
        Hooks::new()
            .on(
                HookEvent::PreToolUse,
                decision(HookDecision::Ask, "touches *production*"),
            )
            // A hook that asks wants the person: PermissionRequest hooks do not answer.
            .on(
                HookEvent::PermissionRequest,
                decision(HookDecision::Allow, "x"),
            ),
    );
    let person = Recorder::new(ConfirmationOutcome::ProceedOnce);
    let (s, _rx) = scheduler(
        env(&dir),
        ApprovalMode::Yolo,
        Some(person.clone()),
        None,
        &hooks,
    );
    // A read-only tool asks nothing by itself.
    let out = run(&s, &edit_tool(), vec![call("1", "r", "a")]).await;
    assert_eq!(out[0].state, CallState::Success);
    let asked = person.asked();
    assert_eq!(asked.len(), 1);
    assert!(!asked[0].may_always_allow);
    assert!(
        asked[0]
            .description
            .contains("a PreToolUse hook asks: touches *production*"),
        "{}",
        asked[0].description
    );
    assert!(hooks.requests(HookEvent::PermissionRequest).is_empty());
}

#[tokio::test]
async fn ask_with_nobody_to_ask_is_a_refusal_that_says_a_hook_asked() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Arc::new(
        Hooks::new()
            .on(HookEvent::PreToolUse, decision(HookDecision::Ask, "unsure"))
            .on(HookEvent::PermissionDenied, HookOutcome::default()),
    );
    let (s, _rx) = scheduler(env(&dir), ApprovalMode::Yolo, None, None, &hooks);
    let out = run(&s, &edit_tool(), vec![call("1", "r", "a")]).await;
    let message = refusal(&out[0]);
    assert!(
        message.contains("asked for by a PreToolUse hook: unsure"),
        "{message}"
    );
    assert!(message.contains("without anyone to ask"), "{message}");
    let denied = hooks.requests(HookEvent::PermissionDenied);
    assert_eq!(denied[0].fields["reason"], "nobody_to_ask");
}

#[tokio::test]
async fn updated_input_runs_in_place_of_the_models_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Arc::new(Hooks::new().on(
        HookEvent::PreToolUse,
        rewrite(Some(HookDecision::Allow), json!({"value": "safer"})),
    ));
    let (s, mut rx) = scheduler(env(&dir), ApprovalMode::Default, None, None, &hooks);
    let out = run(&s, &edit_tool(), vec![call("1", "t", "risky")]).await;
    assert_eq!(out[0].state, CallState::Success, "{:?}", out[0].result);
    assert_eq!(text(&out[0]), "echo: safer");
    assert_eq!(out[0].arguments, json!({"value": "safer"}));
    let mut described = Vec::new();
    while let Ok(event) = rx.try_recv() {
        if let SchedulerEvent::Validated { description, .. } = event {
            described.push(description);
        }
    }
    assert_eq!(described, ["test safer"]);
}

#[tokio::test]
async fn updated_input_is_validated_against_the_schema_and_the_tool_again() {
    let dir = tempfile::tempdir().unwrap();
    for input in [json!({"bogus": 1}), json!({"value": "bad"})] {
        let hooks = Arc::new(Hooks::new().on(
            HookEvent::PreToolUse,
            rewrite(Some(HookDecision::Allow), input.clone()),
        ));
        let (s, _rx) = scheduler(env(&dir), ApprovalMode::Yolo, None, None, &hooks);
        let out = run(&s, &edit_tool(), vec![call("1", "t", "a")]).await;
        let error = out[0].result.error.as_ref().expect("refused");
        assert_eq!(error.kind, ErrorKind::InvalidToolParams, "{input}");
        assert!(
            error
                .message
                .contains("The arguments a PreToolUse hook gave in place of yours are not valid"),
            "{}",
            error.message
        );
    }
}

#[tokio::test]
async fn updated_input_cannot_leave_the_workspace() {
    let w = Setup::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("stolen.txt");
    let hooks = Arc::new(Hooks::new().on(
        HookEvent::PreToolUse,
        rewrite(
            Some(HookDecision::Allow),
            json!({"file_path": target, "content": "x"}),
        ),
    ));
    let (s, _rx) = scheduler(w.env.clone(), ApprovalMode::Yolo, None, None, &hooks);
    let out = run(&s, &w.registry, vec![w.write("1", "a.txt")]).await;
    assert_eq!(out[0].state, CallState::Error);
    assert!(!target.exists(), "the hook wrote outside the workspace");
    assert!(w.read("a.txt").is_none());
}

#[tokio::test]
async fn updated_input_is_judged_by_the_rules_again() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Arc::new(Hooks::new().on(
        HookEvent::PreToolUse,
        rewrite(Some(HookDecision::Allow), json!({"value": "rm"})),
    ));
    let (s, _rx) = scheduler(
        env(&dir),
        ApprovalMode::Yolo,
        None,
        Some(rules(RuleList::Deny, "x(rm)")),
        &hooks,
    );
    let out = run(&s, &edit_tool(), vec![call("1", "x", "ls")]).await;
    assert!(refusal(&out[0]).contains("denied by permission rules"));
    assert_eq!(out[0].arguments, json!({"value": "rm"}));
}

#[tokio::test]
async fn permission_request_answers_in_the_persons_place() {
    let dir = tempfile::tempdir().unwrap();
    let allow = Arc::new(Hooks::new().on(
        HookEvent::PermissionRequest,
        decision(HookDecision::Allow, "known command"),
    ));
    let person = Recorder::new(ConfirmationOutcome::Cancel);
    let (s, _rx) = scheduler(
        env(&dir),
        ApprovalMode::Default,
        Some(person.clone()),
        None,
        &allow,
    );
    let out = run(
        &s,
        &edit_tool(),
        vec![call("1", "x", "make"), call("2", "r", "read")],
    )
    .await;
    assert_eq!(out[0].state, CallState::Success);
    assert!(person.asked().is_empty());
    // Only a call that would be asked is asked about.
    let asked = allow.requests(HookEvent::PermissionRequest);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].fields["tool_input"], json!({"value": "make"}));
    // Headless: a hook can answer where nobody else can.
    let (s, _rx) = scheduler(env(&dir), ApprovalMode::Default, None, None, &allow);
    let out = run(&s, &edit_tool(), vec![call("3", "x", "make")]).await;
    assert_eq!(out[0].state, CallState::Success);

    let deny = Arc::new(Hooks::new().on(
        HookEvent::PermissionRequest,
        decision(HookDecision::Deny, "not on Fridays"),
    ));
    let (s, _rx) = scheduler(
        env(&dir),
        ApprovalMode::Default,
        Some(person.clone()),
        None,
        &deny,
    );
    let out = run(&s, &edit_tool(), vec![call("4", "x", "make")]).await;
    assert!(refusal(&out[0]).contains("denied by a PermissionRequest hook: not on Fridays"));
    assert!(person.asked().is_empty());

    let silent = Arc::new(Hooks::new().on(HookEvent::PermissionRequest, HookOutcome::default()));
    let (s, _rx) = scheduler(
        env(&dir),
        ApprovalMode::Default,
        Some(person.clone()),
        None,
        &silent,
    );
    let out = run(&s, &edit_tool(), vec![call("5", "x", "make")]).await;
    assert_eq!(out[0].state, CallState::Cancelled);
    assert_eq!(person.asked().len(), 1, "no decision: asked as usual");
}

#[tokio::test]
async fn a_permission_request_rewrite_is_validated_and_ruled_again() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Arc::new(Hooks::new().on(
        HookEvent::PermissionRequest,
        rewrite(Some(HookDecision::Allow), json!({"value": "rm"})),
    ));
    let (s, _rx) = scheduler(
        env(&dir),
        ApprovalMode::Default,
        None,
        Some(rules(RuleList::Deny, "x(rm)")),
        &hooks,
    );
    let out = run(
        &s,
        &edit_tool(),
        vec![call("1", "x", "ls"), call("2", "t", "ok")],
    )
    .await;
    assert!(refusal(&out[0]).contains("denied by permission rules"));
    let hooks = Arc::new(Hooks::new().on(
        HookEvent::PermissionRequest,
        rewrite(Some(HookDecision::Allow), json!({"value": "tidy"})),
    ));
    let (s, _rx) = scheduler(env(&dir), ApprovalMode::Default, None, None, &hooks);
    let out = run(&s, &edit_tool(), vec![call("3", "x", "ls")]).await;
    assert_eq!(text(&out[0]), "echo: tidy");
}

#[tokio::test]
async fn permission_denied_says_why_for_want_of_anyone_to_ask() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Arc::new(Hooks::new().on(
        HookEvent::PermissionDenied,
        HookOutcome {
            system_messages: vec!["ignored".into()],
            failures: vec![HookFailure {
                hook: "audit.sh".into(),
                message: "exit code 1".into(),
            }],
            ..Default::default()
        },
    ));
    let (s, mut rx) = scheduler(env(&dir), ApprovalMode::Default, None, None, &hooks);
    let out = run(&s, &edit_tool(), vec![call("1", "x", "make")]).await;
    refusal(&out[0]);
    let denied = hooks.requests(HookEvent::PermissionDenied);
    assert_eq!(denied.len(), 1);
    assert_eq!(denied[0].fields["reason"], "nobody_to_ask");
    assert!(
        denied[0].fields["message"]
            .as_str()
            .unwrap()
            .contains("needs the user's approval")
    );
    // Its output is ignored; its failures are shown.
    let said = hook_messages(&mut rx);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].failure);
    assert_eq!(
        said[0].to_string(),
        "PermissionDenied hook audit.sh failed: exit code 1"
    );
}

#[tokio::test]
async fn post_tool_use_adds_context_marked_as_the_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Arc::new(
        Hooks::new()
            .on(HookEvent::PreToolUse, context("before </hook-context> <x>"))
            .on(HookEvent::PostToolUse, context("after")),
    );
    let (s, _rx) = scheduler(env(&dir), ApprovalMode::Yolo, None, None, &hooks);
    let out = run(&s, &edit_tool(), vec![call("1", "r", "a")]).await;
    let text = text(&out[0]);
    assert!(text.starts_with("echo: a\n"), "{text}");
    assert!(
        text.contains(
            "<hook-context event=\"PreToolUse\">\nbefore &lt;/hook-context&gt; &lt;x&gt;\n</hook-context>"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("<hook-context event=\"PostToolUse\">\nafter\n</hook-context>"),
        "{text}"
    );
    let post = hooks.requests(HookEvent::PostToolUse);
    assert_eq!(post[0].fields["tool_response"]["llm_content"], "echo: a");
    assert_eq!(
        post[0].fields["tool_response"]["result_display"]["type"],
        "markdown"
    );
    assert!(post[0].fields["duration_ms"].is_u64());
}

#[tokio::test]
async fn a_failed_call_gets_post_tool_use_failure_and_a_block_is_feedback() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Arc::new(
        Hooks::new()
            .on(HookEvent::PostToolUse, context("unused"))
            .on(
                HookEvent::PostToolUseFailure,
                decision(HookDecision::Deny, "check the path first"),
            ),
    );
    let reg = registry(vec![TestTool::new("p", Kind::Read, Behaviour::Panics)]);
    let (s, _rx) = scheduler(env(&dir), ApprovalMode::Yolo, None, None, &hooks);
    let out = run(&s, &reg, vec![call("1", "p", "a")]).await;
    assert_eq!(out[0].state, CallState::Error);
    assert!(hooks.requests(HookEvent::PostToolUse).is_empty());
    let failed = hooks.requests(HookEvent::PostToolUseFailure);
    assert!(
        failed[0].fields["error"]
            .as_str()
            .unwrap()
            .contains("failed unexpectedly")
    );
    assert_eq!(failed[0].fields["is_interrupt"], false);
    assert!(text(&out[0]).contains("(it has already run): check the path first"));
}

#[tokio::test]
async fn no_matching_hooks_means_the_runner_is_never_asked_to_run() {
    let dir = tempfile::tempdir().unwrap();
    // Wants nothing.
    let hooks = Arc::new(Hooks::new());
    let person = Recorder::new(ConfirmationOutcome::ProceedOnce);
    let (s, _rx) = scheduler(
        env(&dir),
        ApprovalMode::Default,
        Some(person),
        Some(rules(RuleList::Deny, "t")),
        &hooks,
    );
    let out = run(
        &s,
        &edit_tool(),
        vec![
            call("1", "r", "a"),
            call("2", "x", "b"),
            call("3", "t", "c"),
        ],
    )
    .await;
    assert_eq!(out.len(), 3);
    assert_eq!(hooks.count(), 0);
}

#[tokio::test]
async fn a_hook_runs_under_the_turns_token() {
    let dir = tempfile::tempdir().unwrap();
    let started = Arc::new(Notify::new());
    let hooks = Arc::new(Hooks {
        hang: Some(started.clone()),
        ..Hooks::new().on(HookEvent::PreToolUse, decision(HookDecision::Allow, ""))
    });
    let (s, _rx) = scheduler(env(&dir), ApprovalMode::Yolo, None, None, &hooks);
    let cancel = CancellationToken::new();
    let reg = edit_tool();
    let turn = run_with(
        &s,
        &reg,
        vec![call("1", "r", "a")],
        TurnInfo::default(),
        &cancel,
    );
    let cancelling = async {
        started.notified().await;
        cancel.cancel();
    };
    let (out, ()) = tokio::join!(turn, cancelling);
    assert_eq!(out[0].state, CallState::Cancelled);
    assert!(*hooks.cancelled.lock().unwrap());
}

#[tokio::test]
async fn continue_false_stops_the_call_and_the_calls_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Arc::new(Hooks::new().on(
        HookEvent::PreToolUse,
        HookOutcome {
            stop: Some("budget spent".into()),
            ..Default::default()
        },
    ));
    let (s, mut rx) = scheduler(env(&dir), ApprovalMode::Yolo, None, None, &hooks);
    let out = run(
        &s,
        &edit_tool(),
        vec![call("1", "r", "a"), call("2", "r", "b")],
    )
    .await;
    assert_eq!(out[0].stop.as_deref(), Some("budget spent"));
    assert!(refusal(&out[0]).contains("a PreToolUse hook stopped the agent (budget spent)"));
    assert!(refusal(&out[1]).contains("a hook stopped the agent before this call"));
    assert_eq!(hooks.requests(HookEvent::PreToolUse).len(), 1);
    let said = hook_messages(&mut rx);
    assert!(said.iter().any(|m| m.text.contains("budget spent")));

    // After the call ran, PostToolUse can still stop the agent.
    let hooks = Arc::new(Hooks::new().on(
        HookEvent::PostToolUse,
        HookOutcome {
            stop: Some("enough".into()),
            ..Default::default()
        },
    ));
    let (s, _rx) = scheduler(env(&dir), ApprovalMode::Yolo, None, None, &hooks);
    let out = run(&s, &edit_tool(), vec![call("3", "r", "a")]).await;
    assert_eq!(out[0].state, CallState::Success);
    assert_eq!(out[0].stop.as_deref(), Some("enough"));
}

#[tokio::test]
async fn system_messages_and_failures_reach_the_person_before_the_call_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Arc::new(Hooks::new().on(
        HookEvent::PreToolUse,
        HookOutcome {
            system_messages: vec!["audited".into()],
            failures: vec![HookFailure {
                hook: "slow.sh".into(),
                message: "timed out after 60 s".into(),
            }],
            ..Default::default()
        },
    ));
    let (s, mut rx) = scheduler(env(&dir), ApprovalMode::Yolo, None, None, &hooks);
    run(&s, &edit_tool(), vec![call("1", "r", "a")]).await;
    let mut seen = Vec::new();
    while let Ok(event) = rx.try_recv() {
        seen.push(event);
    }
    let hook_at: Vec<usize> = seen
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, SchedulerEvent::Hook { .. }))
        .map(|(i, _)| i)
        .collect();
    let finished_at = seen
        .iter()
        .position(|e| matches!(e, SchedulerEvent::Finished(_)))
        .unwrap();
    assert_eq!(hook_at.len(), 2);
    assert!(hook_at.iter().all(|&i| i < finished_at));
    let SchedulerEvent::Hook { call_id, message } = &seen[hook_at[1]] else {
        unreachable!()
    };
    assert_eq!(call_id, "1");
    assert!(message.failure);
    assert_eq!(
        message.to_string(),
        "PreToolUse hook slow.sh failed: timed out after 60 s"
    );
}

#[tokio::test]
async fn a_waiting_question_is_a_notification() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = Arc::new(Hooks::new().on(HookEvent::Notification, HookOutcome::default()));
    let person = Recorder::new(ConfirmationOutcome::ProceedOnce);
    let (s, _rx) = scheduler(env(&dir), ApprovalMode::Default, Some(person), None, &hooks);
    run(&s, &edit_tool(), vec![call("1", "x", "make")]).await;
    let notes = hooks.requests(HookEvent::Notification);
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].target.as_deref(), Some("permission_prompt"));
    assert_eq!(notes[0].fields["notification_type"], "permission_prompt");
    assert!(
        notes[0].fields["message"]
            .as_str()
            .unwrap()
            .contains("permission to use x")
    );
}
