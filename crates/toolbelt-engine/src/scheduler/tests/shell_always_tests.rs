//! "Always allow" for shell commands: a command the shell tool gives no root commands
//! (a wrapper, `eval`, a name it cannot read) is never remembered, and the whole shell
//! tool is never allowed by an "always" answer about one command.

use std::sync::Arc;
use std::sync::Mutex as StdMutex;

use super::fixtures::*;
use crate::registry::Origin;
use crate::scheduler::*;
use toolbelt_core::{BoxFuture, Kind};
use toolbelt_core::{ConfirmationDetails, ConfirmationOutcome};

/// Answers every question with a fixed outcome and keeps what it was offered.
struct Recorder {
    outcome: ConfirmationOutcome,
    offered_always: StdMutex<Vec<bool>>,
}

impl Approver for Recorder {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        self.offered_always
            .lock()
            .unwrap()
            .push(request.may_always_allow);
        Box::pin(async move { self.outcome.into() })
    }
}

fn exec(roots: &[&str]) -> Option<ConfirmationDetails> {
    Some(ConfirmationDetails::Exec {
        title: "t".into(),
        command: "eval ls".into(),
        root_commands: roots.iter().map(|r| r.to_string()).collect(),
    })
}

#[tokio::test]
async fn a_shell_command_without_roots_offers_and_remembers_no_always() {
    for outcome in [
        ConfirmationOutcome::ProceedAlways,
        ConfirmationOutcome::ProceedAlwaysRootCommand,
        ConfirmationOutcome::ProceedAlwaysServer,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut shell = TestTool::new("shell", Kind::Execute, Behaviour::Echo);
        shell.confirm = exec(&[]);
        let reg = registry(vec![shell]);
        let approver = Arc::new(Recorder {
            outcome,
            offered_always: StdMutex::new(Vec::new()),
        });
        let s = Scheduler::new(
            env(&dir),
            SchedulerConfig::new(CallRules::new(
                Permissions::new(&crate::rules::RuleVocabulary::default()),
                ApprovalMode::Default,
                None,
                None,
            ))
            .approver(Some(approver.clone())),
        );
        run(
            &s,
            &reg,
            vec![call("1", "shell", ""), call("2", "shell", "")],
        )
        .await;
        assert_eq!(
            *approver.offered_always.lock().unwrap(),
            [false, false],
            "{outcome:?}: asked every time, never offered always"
        );
    }
}

#[test]
fn an_always_answer_about_a_shell_command_never_allows_the_whole_tool() {
    let allowances = SessionAllowances::default();
    let origin = Origin::BuiltIn;
    allowances.remember(
        ConfirmationOutcome::ProceedAlways,
        "run_shell_command",
        &origin,
        &exec(&["git"]).unwrap(),
    );
    assert!(allowances.covers("run_shell_command", &origin, &exec(&["git"]).unwrap()));
    assert!(!allowances.covers("run_shell_command", &origin, &exec(&["rm"]).unwrap()));
    allowances.remember(
        ConfirmationOutcome::ProceedAlwaysRootCommand,
        "run_shell_command",
        &origin,
        &exec(&[]).unwrap(),
    );
    assert!(!allowances.covers("run_shell_command", &origin, &exec(&["rm"]).unwrap()));
    assert!(!allowances.covers("run_shell_command", &origin, &exec(&[]).unwrap()));
}
