//! Approval: every mode against every kind, rules, "always allow", and cancellation
//! while a person is being asked.

use std::sync::Arc;
use std::sync::Mutex as StdMutex;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::fixtures::*;
use crate::registry::{Origin, ToolRegistry};
use crate::rules::RuleList;
use crate::scheduler::*;
use toolbelt_core::ErrorKind;
use toolbelt_core::{BoxFuture, Kind};
use toolbelt_core::{ConfirmationDetails, ConfirmationOutcome};

/// Answers every question with a fixed outcome and counts the questions.
struct ScriptedApprover {
    outcome: ConfirmationOutcome,
    asked: StdMutex<Vec<String>>,
}

impl ScriptedApprover {
    fn new(outcome: ConfirmationOutcome) -> Arc<Self> {
        Arc::new(ScriptedApprover {
            outcome,
            asked: StdMutex::new(Vec::new()),
        })
    }
    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl Approver for ScriptedApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        self.asked.lock().unwrap().push(request.call_id.clone());
        Box::pin(async move { self.outcome.into() })
    }
}

/// Signals that it was asked, then never answers.
struct SilentApprover(Arc<Notify>);

impl Approver for SilentApprover {
    fn approve<'a>(&'a self, _: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        self.0.notify_one();
        Box::pin(std::future::pending())
    }
}

const KINDS: [Kind; 9] = [
    Kind::Read,
    Kind::Edit,
    Kind::Delete,
    Kind::Move,
    Kind::Search,
    Kind::Execute,
    Kind::Fetch,
    Kind::Think,
    Kind::Other,
];

fn tool_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Read => "k_read",
        Kind::Edit => "k_edit",
        Kind::Delete => "k_delete",
        Kind::Move => "k_move",
        Kind::Search => "k_search",
        Kind::Execute => "k_execute",
        Kind::Fetch => "k_fetch",
        Kind::Think => "k_think",
        Kind::Other => "k_other",
    }
}

fn every_kind() -> ToolRegistry {
    registry(
        KINDS
            .iter()
            .map(|&k| TestTool::new(tool_name(k), k, Behaviour::Echo))
            .collect(),
    )
}

fn scheduler(
    dir: &tempfile::TempDir,
    mode: ApprovalMode,
    approver: Option<Arc<dyn Approver>>,
    permissions: Permissions,
) -> Scheduler {
    Scheduler::new(
        env(dir),
        SchedulerConfig::new(CallRules::new(permissions, mode, None, None)).approver(approver),
    )
}

/// `R`: runs without asking; `A`: asked (runs when approved; refused headless);
/// `P`: refused by plan mode, nobody asked.
fn expected(mode: ApprovalMode, kind: Kind) -> char {
    let asks = natural_confirmation(kind, "").is_some();
    let is_edit = matches!(kind, Kind::Edit | Kind::Delete | Kind::Move);
    match mode {
        ApprovalMode::Yolo => 'R',
        ApprovalMode::Plan if !kind.is_read_only() => 'P',
        ApprovalMode::AutoEdit if is_edit => 'R',
        _ if asks => 'A',
        _ => 'R',
    }
}

#[tokio::test]
async fn every_mode_against_every_kind_headless_and_with_a_person() {
    let modes = [
        ApprovalMode::Plan,
        ApprovalMode::Default,
        ApprovalMode::AutoEdit,
        ApprovalMode::Yolo,
    ];
    for mode in modes {
        for with_person in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let reg = every_kind();
            let approver = ScriptedApprover::new(ConfirmationOutcome::ProceedOnce);
            let s = scheduler(
                &dir,
                mode,
                with_person.then(|| approver.clone() as Arc<dyn Approver>),
                Permissions::from_rules(crate::rules::tests::empty_rules()),
            );
            let calls = KINDS
                .iter()
                .map(|&k| call(tool_name(k), tool_name(k), "v"))
                .collect();
            let out = run(&s, &reg, calls).await;
            let asked = approver.asked();
            for (c, &kind) in out.iter().zip(&KINDS) {
                let want = expected(mode, kind);
                let ctx = format!("mode {mode}, kind {}, person {with_person}", kind.as_str());
                let text = c.result.llm_text();
                match (want, with_person) {
                    ('R', _) | ('A', true) => {
                        assert_eq!(c.state, CallState::Success, "{ctx}: {text}")
                    }
                    ('A', false) => {
                        assert_eq!(
                            c.result.error.as_ref().unwrap().kind,
                            ErrorKind::ExecutionDenied,
                            "{ctx}"
                        );
                        assert!(text.contains("without anyone to ask"), "{ctx}: {text}");
                        assert!(text.contains("--yolo"), "{ctx}: tells how to allow it");
                    }
                    _ => {
                        assert_eq!(
                            c.result.error.as_ref().unwrap().kind,
                            ErrorKind::ExecutionDenied,
                            "{ctx}"
                        );
                        assert!(text.contains("Plan mode is active"), "{ctx}: {text}");
                    }
                }
                let was_asked = asked.contains(&c.call_id);
                assert_eq!(was_asked, want == 'A' && with_person, "{ctx}: asked?");
            }
        }
    }
}

#[tokio::test]
async fn a_refusal_cancels_the_call_and_the_others_still_run() {
    let dir = tempfile::tempdir().unwrap();
    let reg = every_kind();
    let approver = ScriptedApprover::new(ConfirmationOutcome::Cancel);
    let s = scheduler(
        &dir,
        ApprovalMode::Default,
        Some(approver),
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    );
    let out = run(
        &s,
        &reg,
        vec![call("1", "k_edit", "a"), call("2", "k_read", "b")],
    )
    .await;
    assert_eq!(out[0].state, CallState::Cancelled);
    assert!(out[0].result.llm_text().contains("did not allow"));
    assert_eq!(out[1].state, CallState::Success);
}

#[tokio::test]
async fn always_allow_is_remembered_per_tool() {
    let dir = tempfile::tempdir().unwrap();
    let reg = every_kind();
    let approver = ScriptedApprover::new(ConfirmationOutcome::ProceedAlways);
    let s = scheduler(
        &dir,
        ApprovalMode::Default,
        Some(approver.clone()),
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    );
    let out = run(
        &s,
        &reg,
        vec![
            call("1", "k_edit", "a"),
            call("2", "k_edit", "b"),
            call("3", "k_move", "c"),
        ],
    )
    .await;
    assert!(out.iter().all(|c| c.state == CallState::Success));
    let out = run(&s, &reg, vec![call("4", "k_edit", "d")]).await;
    assert_eq!(out[0].state, CallState::Success);
    assert_eq!(
        approver.asked(),
        ["1", "3"],
        "k_edit asked once in the session"
    );
}

#[tokio::test]
async fn always_allow_per_mcp_server_covers_its_other_tools() {
    let dir = tempfile::tempdir().unwrap();
    let mut reg = ToolRegistry::new();
    for name in ["mcp__srv__a", "mcp__srv__b"] {
        let tool = TestTool::new(name, Kind::Other, Behaviour::Echo);
        reg.register(
            Arc::new(tool),
            Origin::Mcp {
                server: "srv".into(),
            },
        );
    }
    let mut other = TestTool::new("mcp__other__c", Kind::Other, Behaviour::Echo);
    other.confirm = Some(ConfirmationDetails::Mcp {
        title: "t".into(),
        server: "other".into(),
        tool: "c".into(),
        tool_display_name: "c".into(),
    });
    reg.register(
        Arc::new(other),
        Origin::Mcp {
            server: "other".into(),
        },
    );
    let approver = ScriptedApprover::new(ConfirmationOutcome::ProceedAlwaysServer);
    let s = scheduler(
        &dir,
        ApprovalMode::Default,
        Some(approver.clone()),
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    );
    let calls = vec![
        call("1", "mcp__srv__a", ""),
        call("2", "mcp__srv__b", ""),
        call("3", "mcp__other__c", ""),
    ];
    let out = run(&s, &reg, calls).await;
    assert!(out.iter().all(|c| c.state == CallState::Success));
    assert_eq!(approver.asked(), ["1", "3"]);
}

#[tokio::test]
async fn always_allow_per_shell_root_command() {
    let dir = tempfile::tempdir().unwrap();
    let mut git = TestTool::new("shell_git", Kind::Execute, Behaviour::Echo);
    git.confirm = natural_confirmation(Kind::Execute, "");
    let mut rm = TestTool::new("shell_rm", Kind::Execute, Behaviour::Echo);
    rm.confirm = Some(ConfirmationDetails::Exec {
        title: "t".into(),
        command: "git add . && rm -rf x".into(),
        root_commands: vec!["git".into(), "rm".into()],
    });
    let reg = registry(vec![git, rm]);
    let approver = ScriptedApprover::new(ConfirmationOutcome::ProceedAlwaysRootCommand);
    let s = scheduler(
        &dir,
        ApprovalMode::Default,
        Some(approver.clone()),
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    );
    run(
        &s,
        &reg,
        vec![call("1", "shell_git", ""), call("2", "shell_git", "")],
    )
    .await;
    run(
        &s,
        &reg,
        vec![call("3", "shell_rm", ""), call("4", "shell_rm", "")],
    )
    .await;
    assert_eq!(approver.asked(), ["1", "3"], "git allowed; rm asked once");
}

#[tokio::test]
async fn rules_deny_ask_and_allow() {
    let dir = tempfile::tempdir().unwrap();
    let reg = every_kind();
    let mut permissions = Permissions::from_rules(crate::rules::tests::empty_rules());
    permissions.add(RuleList::Deny, "k_read");
    permissions.add(RuleList::Ask, "k_search");
    permissions.add(RuleList::Allow, "k_execute");
    let s = scheduler(&dir, ApprovalMode::Yolo, None, permissions.clone());
    let calls = vec![
        call("1", "k_read", ""),
        call("2", "k_search", ""),
        call("3", "k_execute", ""),
    ];
    let out = run(&s, &reg, calls.clone()).await;
    let deny = out[0].result.llm_text();
    assert!(deny.contains("Matching deny rule: \"k_read\""), "{deny}");
    assert!(
        out[1].result.llm_text().contains("without anyone to ask"),
        "ask beats yolo"
    );
    assert_eq!(out[2].state, CallState::Success);

    let s = scheduler(&dir, ApprovalMode::Default, None, permissions);
    let out = run(&s, &reg, calls).await;
    assert_eq!(
        out[2].state,
        CallState::Success,
        "allow rule runs without asking"
    );
}

#[tokio::test]
async fn approving_exit_plan_mode_leaves_plan_mode() {
    let dir = tempfile::tempdir().unwrap();
    let mut plan = TestTool::new(EXIT_PLAN_MODE, Kind::Think, Behaviour::Echo);
    plan.confirm = Some(ConfirmationDetails::Plan {
        title: "Ready to code?".into(),
        plan: "1. edit".into(),
    });
    let reg = registry(vec![plan, TestTool::new("e", Kind::Edit, Behaviour::Echo)]);
    let approver = ScriptedApprover::new(ConfirmationOutcome::ProceedOnce);
    let s = scheduler(
        &dir,
        ApprovalMode::Plan,
        Some(approver),
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    );
    let out = run(
        &s,
        &reg,
        vec![call("1", "e", ""), call("2", EXIT_PLAN_MODE, "")],
    )
    .await;
    assert_eq!(out[0].state, CallState::Error);
    assert_eq!(out[1].state, CallState::Success);
    assert_eq!(s.mode(), ApprovalMode::Default);
    let out = run(&s, &reg, vec![call("3", "e", "")]).await;
    assert_eq!(out[0].state, CallState::Success);
}

fn plan_tool() -> TestTool {
    let mut plan = TestTool::new(EXIT_PLAN_MODE, Kind::Think, Behaviour::Echo);
    plan.confirm = Some(ConfirmationDetails::Plan {
        title: "Ready to code?".into(),
        plan: "1. edit a\n2. test".into(),
    });
    plan
}

#[tokio::test]
async fn headless_plan_is_answered_unapproved_and_plan_mode_stays() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(vec![
        plan_tool(),
        TestTool::new("e", Kind::Edit, Behaviour::Echo),
    ]);
    let s = scheduler(
        &dir,
        ApprovalMode::Plan,
        None,
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    );
    let out = run(&s, &reg, vec![call("1", EXIT_PLAN_MODE, "")]).await;
    assert_eq!(out[0].state, CallState::Success);
    assert_eq!(
        out[0].result.return_display,
        toolbelt_core::Display::Plan {
            plan: "1. edit a\n2. test".into(),
            approved: false
        }
    );
    assert_eq!(s.mode(), ApprovalMode::Plan);
    let out = run(&s, &reg, vec![call("2", "e", "")]).await;
    assert_eq!(
        out[0].state,
        CallState::Error,
        "still planning: edits refused"
    );
}

#[tokio::test]
async fn exit_plan_mode_outside_plan_mode_asks_no_one() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(vec![plan_tool()]);
    let approver = ScriptedApprover::new(ConfirmationOutcome::Cancel);
    let s = scheduler(
        &dir,
        ApprovalMode::Default,
        Some(approver.clone()),
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    );
    let out = run(&s, &reg, vec![call("1", EXIT_PLAN_MODE, "")]).await;
    assert_eq!(out[0].state, CallState::Success);
    assert!(out[0].result.llm_text().contains("not active"));
    assert!(approver.asked().is_empty());
    assert_eq!(s.mode(), ApprovalMode::Default);
}

#[tokio::test]
async fn a_refused_plan_keeps_plan_mode_and_tells_the_model_to_keep_planning() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(vec![plan_tool()]);
    let approver = ScriptedApprover::new(ConfirmationOutcome::Cancel);
    let s = scheduler(
        &dir,
        ApprovalMode::Plan,
        Some(approver.clone()),
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    );
    let out = run(&s, &reg, vec![call("1", EXIT_PLAN_MODE, "")]).await;
    assert_eq!(
        out[0].state,
        CallState::Error,
        "an answer for the model, not a cancel"
    );
    assert!(out[0].result.llm_text().contains("revised plan"));
    assert_eq!(approver.asked(), vec!["1".to_string()]);
    assert_eq!(s.mode(), ApprovalMode::Plan);
}

#[tokio::test]
async fn an_approved_plan_returns_to_the_mode_before_plan_mode() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(vec![plan_tool()]);
    let approver = ScriptedApprover::new(ConfirmationOutcome::ProceedOnce);
    let s = scheduler(
        &dir,
        ApprovalMode::Yolo,
        Some(approver.clone()),
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    );
    s.set_mode(ApprovalMode::Plan);
    let out = run(&s, &reg, vec![call("1", EXIT_PLAN_MODE, "")]).await;
    assert_eq!(out[0].state, CallState::Success);
    assert_eq!(approver.asked().len(), 1, "yolo does not approve plans");
    assert_eq!(s.mode(), ApprovalMode::Yolo);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_while_waiting_for_approval_cancels_that_call_and_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let reg = every_kind();
    let asked = Arc::new(Notify::new());
    let s = scheduler(
        &dir,
        ApprovalMode::Default,
        Some(Arc::new(SilentApprover(asked.clone()))),
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    );
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            asked.notified().await;
            cancel.cancel();
        })
    };
    let calls = vec![
        call("1", "k_read", ""),
        call("2", "k_edit", ""),
        call("3", "k_read", ""),
    ];
    let out = run_with(&s, &reg, calls, TurnInfo::default(), &cancel).await;
    canceller.await.unwrap();
    let states: Vec<_> = out.iter().map(|c| c.state).collect();
    // The first read was approved before the question; execution only starts once every
    // call is decided, so it is cancelled too.
    assert_eq!(states, [CallState::Cancelled; 3]);
}

/// Gives one fixed [`Approval`] to every question.
struct Answers(Approval);

impl Approver for Answers {
    fn approve<'a>(&'a self, _: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move { self.0.clone() })
    }
}

fn answering(dir: &tempfile::TempDir, answer: Approval) -> Scheduler {
    scheduler(
        dir,
        ApprovalMode::Default,
        Some(Arc::new(Answers(answer))),
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    )
}

#[tokio::test]
async fn a_refusal_passes_the_persons_message_to_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let s = answering(&dir, Approval::deny("edit b.txt instead"));
    let out = run(&s, &every_kind(), vec![call("1", "k_edit", "a")]).await;
    assert_eq!(out[0].state, CallState::Cancelled);
    let text = out[0].result.llm_text();
    assert!(text.contains("did not allow"), "{text}");
    assert!(text.contains("The user said: edit b.txt instead"), "{text}");
    // A blank message adds nothing.
    let s = answering(&dir, Approval::deny("  "));
    let out = run(&s, &every_kind(), vec![call("1", "k_edit", "a")]).await;
    assert!(!out[0].result.llm_text().contains("The user said"));
}

#[tokio::test]
async fn corrected_arguments_run_in_place_of_the_models() {
    let dir = tempfile::tempdir().unwrap();
    let s = answering(
        &dir,
        Approval::with_arguments(serde_json::json!({"value": "fixed"})),
    );
    let out = run(&s, &every_kind(), vec![call("1", "k_edit", "typo")]).await;
    assert_eq!(out[0].state, CallState::Success);
    assert_eq!(out[0].result.llm_text(), "echo: fixed");
    assert_eq!(
        out[0].arguments["value"], "fixed",
        "the record shows what ran"
    );
    assert_eq!(out[0].description, "test fixed");
}

#[tokio::test]
async fn corrected_arguments_are_validated_again() {
    let dir = tempfile::tempdir().unwrap();
    let s = answering(
        &dir,
        Approval::with_arguments(serde_json::json!({"value": "bad"})),
    );
    let out = run(&s, &every_kind(), vec![call("1", "k_edit", "typo")]).await;
    assert_eq!(out[0].state, CallState::Error);
    let text = out[0].result.llm_text();
    assert!(text.contains("arguments the user gave"), "{text}");
    assert!(text.contains("must not be 'bad'"), "{text}");
}

#[tokio::test]
async fn corrected_arguments_still_meet_the_deny_rules() {
    let dir = tempfile::tempdir().unwrap();
    let mut permissions = Permissions::from_rules(crate::rules::tests::empty_rules());
    permissions.add(RuleList::Deny, "k_edit(secret)");
    let answer = Approval::with_arguments(serde_json::json!({"value": "secret"}));
    let s = scheduler(
        &dir,
        ApprovalMode::Default,
        Some(Arc::new(Answers(answer))),
        permissions,
    );
    let out = run(&s, &every_kind(), vec![call("1", "k_edit", "harmless")]).await;
    assert_eq!(out[0].state, CallState::Error);
    let text = out[0].result.llm_text();
    assert!(text.contains("denied by permission rules"), "{text}");
}
