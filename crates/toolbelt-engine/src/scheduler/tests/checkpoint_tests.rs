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
    ) -> toolbelt_core::BoxFuture<'a, Result<(), crate::checkpoint::CheckpointError>> {
        self.log
            .lock()
            .unwrap()
            .push(format!("before:{}:{}", call.tool, call.kind.as_str()));
        let fail = self.fail;
        Box::pin(async move {
            if fail {
                Err(crate::checkpoint::CheckpointError::Recorder(
                    "the disk is full".into(),
                ))
            } else {
                Ok(())
            }
        })
    }

    fn after_call<'a>(&'a self, call: &'a CheckpointCall) -> toolbelt_core::BoxFuture<'a, ()> {
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

/// A read-only tool that says it writes files (`save_memory`'s `ToolFacts::writes_files`)
/// is a call that may change files to the checkpoints; another read-only tool is not:
/// the scheduler reads the tool's own declaration, no list of names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_tool_that_says_it_writes_is_a_change_to_the_checkpoints() {
    struct Seen(Arc<Mutex<Vec<(String, bool)>>>);
    impl Checkpoints for Seen {
        fn before_call<'a>(
            &'a self,
            call: &'a CheckpointCall,
        ) -> toolbelt_core::BoxFuture<'a, Result<(), crate::checkpoint::CheckpointError>> {
            let seen = (call.tool.clone(), call.changes_files);
            self.0.lock().unwrap().push(seen);
            Box::pin(async { Ok(()) })
        }
        fn after_call<'a>(&'a self, _call: &'a CheckpointCall) -> toolbelt_core::BoxFuture<'a, ()> {
            Box::pin(async {})
        }
        fn begin_turn(&self, _turn: TurnStart) {}
    }
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut writer = TestTool::new("remember", Kind::Think, Behaviour::Log(log.clone()));
    writer.facts.writes_files = true;
    let thinker = TestTool::new("think", Kind::Think, Behaviour::Log(log.clone()));
    let editor = TestTool::new("edit", Kind::Edit, Behaviour::Log(log.clone()));
    let reg = registry(vec![writer, thinker, editor]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Scheduler::new(
        env(&dir),
        SchedulerConfig::new(CallRules::new(
            Permissions::new(&crate::rules::RuleVocabulary::default()),
            ApprovalMode::Yolo,
            None,
            Some(Arc::new(Seen(seen.clone()))),
        )),
    );
    let calls = vec![
        call("1", "remember", "r"),
        call("2", "think", "t"),
        call("3", "edit", "e"),
    ];
    let out = run(&s, &reg, calls).await;
    assert!(out.iter().all(|c| c.state == CallState::Success));
    let seen = seen.lock().unwrap().clone();
    let says = |tool: &str| seen.iter().find(|(t, _)| t == tool).map(|(_, c)| *c);
    assert_eq!(says("remember"), Some(true), "{seen:?}");
    assert_eq!(says("think"), Some(false), "{seen:?}");
    assert_eq!(says("edit"), Some(true), "{seen:?}");
}
