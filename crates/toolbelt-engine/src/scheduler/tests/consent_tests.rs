//! What a tool is told about how its call came to run: unasked only when its own
//! confirmation asked nothing and the person's choice played no part.

use std::sync::Arc;

use super::fixtures::*;
use crate::rules::RuleList;
use crate::scheduler::*;
use toolbelt_core::ConfirmationOutcome;
use toolbelt_core::{BoxFuture, Kind};

struct Yes;

impl Approver for Yes {
    fn approve<'a>(&'a self, _: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async { ConfirmationOutcome::ProceedOnce.into() })
    }
}

/// The consent `tool` ran with, under `mode`, `approver` and `allow` rules.
async fn consent(
    kind: Kind,
    mode: ApprovalMode,
    approver: Option<Arc<dyn Approver>>,
    allow: &[&str],
) -> String {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(vec![TestTool::new("t", kind, Behaviour::ReportsConsent)]);
    let mut permissions = Permissions::from_rules(crate::rules::tests::empty_rules());
    for rule in allow {
        permissions.add(RuleList::Allow, rule);
    }
    let s = Scheduler::new(
        env(&dir),
        SchedulerConfig::new(CallRules::new(permissions, mode, None, None)).approver(approver),
    );
    let out = run(&s, &reg, vec![call("1", "t", "a")]).await;
    out[0].result.llm_text()
}

#[tokio::test]
async fn a_call_that_asks_nothing_runs_unasked() {
    // Read-only kinds give no confirmation, like a shell command judged read-only; an
    // allow rule or plan mode does not make them approved.
    assert_eq!(
        consent(Kind::Read, ApprovalMode::Default, None, &[]).await,
        "Unasked"
    );
    assert_eq!(
        consent(Kind::Search, ApprovalMode::Plan, None, &["t"]).await,
        "Unasked"
    );
    assert_eq!(
        consent(Kind::Read, ApprovalMode::AutoEdit, Some(Arc::new(Yes)), &[]).await,
        "Unasked"
    );
}

#[tokio::test]
async fn the_persons_choice_makes_a_call_approved() {
    let yes: Arc<dyn Approver> = Arc::new(Yes);
    // The person's answer, an allow rule for what asks, yolo (even for what asks nothing).
    assert_eq!(
        consent(Kind::Execute, ApprovalMode::Default, Some(yes), &[]).await,
        "Approved"
    );
    assert_eq!(
        consent(Kind::Execute, ApprovalMode::Default, None, &["t"]).await,
        "Approved"
    );
    assert_eq!(
        consent(Kind::Read, ApprovalMode::Yolo, None, &[]).await,
        "Approved"
    );
    assert_eq!(
        consent(Kind::Edit, ApprovalMode::AutoEdit, None, &[]).await,
        "Approved"
    );
}
