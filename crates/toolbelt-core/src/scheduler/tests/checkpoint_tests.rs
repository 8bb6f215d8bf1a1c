//! Issue 34: the checkpoints are asked before and after every approved call, around
//! its execution; a failed checkpoint lets the call run and says so in its result.

use std::sync::Mutex;

use super::*;
use crate::checkpoint::{CheckpointCall, Checkpoints, TurnStart};

/// Logs every question into the same log as the tools, and fails when told to.
struct Recording {
    log: Arc<Mutex<Vec<String>>>,
    fail: bool,
}

impl Checkpoints for Recording {
    fn before_call<'a>(
        &'a self,
        call: &'a CheckpointCall,
    ) -> crate::BoxFuture<'a, Result<(), String>> {
        self.log
            .lock()
            .unwrap()
            .push(format!("before:{}:{}", call.tool, call.kind.as_str()));
        let fail = self.fail;
        Box::pin(async move {
            if fail {
                Err("the disk is full".to_string())
            } else {
                Ok(())
            }
        })
    }

    fn after_call<'a>(&'a self, call: &'a CheckpointCall) -> crate::BoxFuture<'a, ()> {
        self.log
            .lock()
            .unwrap()
            .push(format!("after:{}", call.tool));
        Box::pin(async {})
    }

    fn begin_turn(&self, _turn: TurnStart) {}
}

fn scheduler(dir: &tempfile::TempDir, checkpoints: Recording) -> Scheduler {
    Scheduler::new(
        env(dir),
        SchedulerConfig::new(CallRules::new(
            Permissions::new(&crate::rules::RuleVocabulary::default()),
            ApprovalMode::Yolo,
            None,
            Some(Arc::new(checkpoints)),
        )),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_approved_call_is_checkpointed_before_and_after_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let reg = registry(vec![
        TestTool::new("edit", Kind::Edit, Behaviour::Log(log.clone())),
        TestTool::new("sh", Kind::Execute, Behaviour::Log(log.clone())),
    ]);
    let s = scheduler(
        &dir,
        Recording {
            log: log.clone(),
            fail: false,
        },
    );
    let out = run(&s, &reg, vec![call("1", "edit", "e"), call("2", "sh", "s")]).await;
    assert!(out.iter().all(|c| c.state == CallState::Success));
    assert_eq!(
        *log.lock().unwrap(),
        [
            "before:edit:edit",
            "start:e",
            "end:e",
            "after:edit",
            "before:sh:execute",
            "start:s",
            "end:s",
            "after:sh"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_checkpoint_lets_the_call_run_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let reg = registry(vec![TestTool::new(
        "sh",
        Kind::Execute,
        Behaviour::Log(log.clone()),
    )]);
    let s = scheduler(
        &dir,
        Recording {
            log: log.clone(),
            fail: true,
        },
    );
    let out = run(&s, &reg, vec![call("1", "sh", "s")]).await;
    assert_eq!(out[0].state, CallState::Success);
    assert!(
        log.lock().unwrap().contains(&"end:s".to_string()),
        "the call ran"
    );
    let text = crate::scheduler::text_for_model(&out[0].result);
    assert!(
        text.contains("no checkpoint was taken before this call (the disk is full)"),
        "{text}"
    );
}
