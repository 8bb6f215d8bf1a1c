//! Scheduler tests against small tools of our own: a barrier proves parallelism (a
//! sequential scheduler would never get past it), counters prove exclusivity, nothing
//! depends on timing. Each run is bounded by a generous timeout so a regression fails
//! instead of hanging.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{Barrier, Notify, mpsc};
use tokio_util::sync::CancellationToken;

use super::*;
use toolbelt_core::{Kind, ToolEnvironment};

mod approval_tests;
mod checkpoint_tests;
mod consent_tests;
mod fixtures;
mod hooks_tests;
mod protected_tests;
mod shell_always_tests;

use fixtures::*;

fn yolo(env: Arc<ToolEnvironment>) -> Scheduler {
    Scheduler::new(
        env,
        SchedulerConfig::new(CallRules::new(
            Permissions::new(&crate::rules::RuleVocabulary::default()),
            ApprovalMode::Yolo,
            None,
            None,
        )),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consecutive_read_only_calls_run_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    // Three calls meet at a barrier of three: run one at a time, they never would.
    let barrier = Arc::new(Barrier::new(3));
    let reg = registry(vec![
        TestTool::new("r", Kind::Read, Behaviour::Barrier(barrier.clone())),
        TestTool::new("s", Kind::Search, Behaviour::Barrier(barrier.clone())),
        TestTool::new("t", Kind::Think, Behaviour::Barrier(barrier)),
    ]);
    let s = yolo(env(&dir));
    let out = run(
        &s,
        &reg,
        vec![
            call("1", "r", "a"),
            call("2", "s", "b"),
            call("3", "t", "c"),
        ],
    )
    .await;
    let states: Vec<_> = out.iter().map(|c| c.state).collect();
    assert_eq!(states, [CallState::Success; 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_come_back_in_call_order_whatever_the_finishing_order() {
    let dir = tempfile::tempdir().unwrap();
    // `first` waits until `second` has finished, so `second` finishes first.
    let second_done = Arc::new(Notify::new());
    let go = Arc::new(Notify::new());
    go.notify_one();
    let reg = registry(vec![
        TestTool::new(
            "first",
            Kind::Read,
            Behaviour::Chain(second_done.clone(), Arc::new(Notify::new())),
        ),
        TestTool::new("second", Kind::Read, Behaviour::Chain(go, second_done)),
    ]);
    let s = yolo(env(&dir));
    let out = run(
        &s,
        &reg,
        vec![call("1", "first", "a"), call("2", "second", "b")],
    )
    .await;
    let ids: Vec<_> = out.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(ids, ["1", "2"]);
    assert_eq!(out[0].result.llm_text(), "echo: a");
    assert_eq!(out[1].result.llm_text(), "echo: b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutating_calls_run_one_at_a_time_and_split_the_read_batches() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let barrier = Arc::new(Barrier::new(2));
    let reg = registry(vec![
        TestTool::new("r", Kind::Read, Behaviour::Barrier(barrier)),
        TestTool::new("e", Kind::Edit, Behaviour::Log(log.clone())),
        TestTool::new("x", Kind::Execute, Behaviour::Log(log.clone())),
        TestTool::new("l", Kind::Read, Behaviour::Log(log.clone())),
    ]);
    let s = yolo(env(&dir));
    let out = run(
        &s,
        &reg,
        vec![
            call("1", "r", "a"),
            call("2", "r", "b"),
            call("3", "e", "c"),
            call("4", "x", "d"),
            call("5", "l", "e"),
        ],
    )
    .await;
    assert!(out.iter().all(|c| c.state == CallState::Success));
    // [r ∥ r] (the barrier proves they overlapped), then e, then x, then l: no overlap.
    assert_eq!(
        *log.lock().unwrap(),
        ["start:c", "end:c", "start:d", "end:d", "start:e", "end:e"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_kinds_never_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let max = Arc::new(AtomicUsize::new(0));
    let b = Behaviour::Exclusive(running, max.clone());
    let reg = registry(vec![
        TestTool::new("e", Kind::Edit, b.clone()),
        TestTool::new("x", Kind::Execute, b.clone()),
        TestTool::new("o", Kind::Other, b),
    ]);
    let s = yolo(env(&dir));
    let calls = (0..6)
        .map(|i| call(&i.to_string(), ["e", "x", "o"][i % 3], "v"))
        .collect();
    let out = run(&s, &reg, calls).await;
    assert_eq!(out.len(), 6);
    assert_eq!(max.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_batches_respect_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let max = Arc::new(AtomicUsize::new(0));
    // Pairs meet at a barrier of two (so two do run together) while the counter shows
    // never more than two at once.
    let barrier = Arc::new(Barrier::new(2));
    let reg = registry(vec![
        TestTool::new("b", Kind::Read, Behaviour::Barrier(barrier)),
        TestTool::new("c", Kind::Read, Behaviour::Exclusive(running, max.clone())),
    ]);
    let s = Scheduler::new(
        env(&dir),
        SchedulerConfig::new(CallRules::new(
            Permissions::new(&crate::rules::RuleVocabulary::default()),
            ApprovalMode::Yolo,
            None,
            None,
        ))
        .max_parallel(2),
    );
    let calls: Vec<_> = (0..4).map(|i| call(&format!("b{i}"), "b", "v")).collect();
    let out = run(&s, &reg, calls).await;
    assert!(out.iter().all(|c| c.state == CallState::Success));
    let calls: Vec<_> = (0..8).map(|i| call(&format!("c{i}"), "c", "v")).collect();
    run(&s, &reg, calls).await;
    assert!(max.load(Ordering::SeqCst) <= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_while_executing_stops_the_running_call_and_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let started = Arc::new(Notify::new());
    let reg = registry(vec![
        TestTool::new(
            "slow",
            Kind::Execute,
            Behaviour::UntilCancelled(started.clone()),
        ),
        TestTool::new("e", Kind::Edit, Behaviour::Echo),
    ]);
    let s = yolo(env(&dir));
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            started.notified().await;
            cancel.cancel();
        })
    };
    let out = run_with(
        &s,
        &reg,
        vec![call("1", "slow", "a"), call("2", "e", "b")],
        TurnInfo::default(),
        &cancel,
    )
    .await;
    canceller.await.unwrap();
    assert_eq!(out[0].state, CallState::Cancelled);
    assert!(out[0].result.llm_text().contains("partial: step 1 done"));
    assert_eq!(out[1].state, CallState::Cancelled);
    assert_eq!(
        out[1].result.error.as_ref().unwrap().kind,
        ErrorKind::Cancelled
    );
}

#[tokio::test]
async fn every_text_result_passes_the_output_policy() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(vec![TestTool::new("big", Kind::Read, Behaviour::Huge)]);
    let s = yolo(env(&dir));
    let out = run(&s, &reg, vec![call("1", "big", "")]).await;
    let text = out[0].result.llm_text();
    assert!(text.lines().count() < 120, "cut to the 100-line budget");
    let spilled = text
        .split_whitespace()
        .find(|w| w.contains("/s/output/"))
        .map(|w| w.trim_end_matches(';'))
        .expect("names the spill file");
    assert_eq!(
        std::fs::read_to_string(spilled).unwrap(),
        "x\n".repeat(5_000)
    );
}

#[tokio::test]
async fn unknown_tools_and_malformed_arguments_are_results_not_faults() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(vec![
        TestTool::new("read_file", Kind::Read, Behaviour::Echo),
        TestTool::new("read_many_files", Kind::Read, Behaviour::Echo),
    ]);
    let s = yolo(env(&dir));
    let bad_json = ToolCallRequest {
        call_id: "2".into(),
        name: "read_file".into(),
        arguments: "{\"value\": ".into(),
    };
    let out = run(
        &s,
        &reg,
        vec![
            call("1", "read_fil", "a"),
            bad_json,
            call("3", "read_file", "ok"),
        ],
    )
    .await;
    let e0 = out[0].result.error.as_ref().unwrap();
    assert_eq!(e0.kind, ErrorKind::ToolNotRegistered);
    assert!(e0.message.contains("\"read_file\""), "{}", e0.message);
    let e1 = out[1].result.error.as_ref().unwrap();
    assert_eq!(e1.kind, ErrorKind::InvalidToolParams);
    assert!(e1.message.contains("not valid JSON"));
    assert_eq!(out[2].state, CallState::Success);
}

#[tokio::test]
async fn the_third_identical_validation_failure_gets_a_different_approach_note() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(vec![TestTool::new("e", Kind::Edit, Behaviour::Echo)]);
    let s = yolo(env(&dir));
    let mut notes = Vec::new();
    for i in 0..3 {
        let out = run(&s, &reg, vec![call(&i.to_string(), "e", "bad")]).await;
        notes.push(
            out[0]
                .result
                .llm_text()
                .contains("fundamentally different approach"),
        );
    }
    assert_eq!(notes, [false, false, true]);
    let out = run(
        &s,
        &reg,
        vec![call("ok", "e", "fine"), call("again", "e", "bad")],
    )
    .await;
    assert!(
        !out[1].result.llm_text().contains("different approach"),
        "a success resets"
    );
}

#[tokio::test]
async fn edits_from_a_truncated_reply_are_refused_with_advice() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(vec![
        TestTool::new("e", Kind::Edit, Behaviour::Echo),
        TestTool::new("r", Kind::Read, Behaviour::Echo),
    ]);
    let s = yolo(env(&dir));
    let turn = TurnInfo {
        reply_truncated: true,
    };
    let out = run_with(
        &s,
        &reg,
        vec![call("1", "e", "a"), call("2", "r", "b")],
        turn,
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(out[0].state, CallState::Error);
    assert!(
        out[0]
            .result
            .llm_text()
            .contains("cut off by the output token limit")
    );
    assert_eq!(out[1].state, CallState::Success);
}

#[tokio::test]
async fn a_panicking_tool_is_an_error_result() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(vec![
        TestTool::new("p", Kind::Edit, Behaviour::Panics),
        TestTool::new("e", Kind::Edit, Behaviour::Echo),
    ]);
    let s = yolo(env(&dir));
    let out = run(&s, &reg, vec![call("1", "p", ""), call("2", "e", "b")]).await;
    assert_eq!(
        out[0].result.error.as_ref().unwrap().kind,
        ErrorKind::ExecutionFailed
    );
    assert_eq!(out[1].state, CallState::Success);
}

#[tokio::test]
async fn events_follow_each_call_through_its_states() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(vec![TestTool::new("x", Kind::Execute, Behaviour::Streams)]);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let s = Scheduler::new(
        env(&dir),
        SchedulerConfig::new(CallRules::new(
            Permissions::new(&crate::rules::RuleVocabulary::default()),
            ApprovalMode::Yolo,
            None,
            None,
        ))
        .events(tx),
    );
    run(&s, &reg, vec![call("1", "x", "a"), call("2", "nope", "")]).await;
    drop(s);
    let mut seen = Vec::new();
    while let Some(e) = rx.recv().await {
        seen.push(match e {
            SchedulerEvent::Validated { call_id, .. } => format!("validated {call_id}"),
            SchedulerEvent::AwaitingApproval { call_id, .. } => format!("asking {call_id}"),
            SchedulerEvent::Scheduled { call_id } => format!("scheduled {call_id}"),
            SchedulerEvent::Started { call_id, .. } => format!("started {call_id}"),
            SchedulerEvent::Output { call_id, chunk } => format!("output {call_id} {chunk}"),
            SchedulerEvent::Hook { call_id, message } => format!("hook {call_id} {message}"),
            SchedulerEvent::Finished(c) => format!("finished {} {}", c.call_id, c.state.as_str()),
        });
    }
    assert_eq!(
        seen,
        [
            "validated 1",
            "scheduled 1",
            "finished 2 error",
            "started 1",
            "output 1 one",
            "output 1 two",
            "finished 1 success"
        ]
    );
}

#[test]
fn terminal_states_are_final() {
    for terminal in [CallState::Success, CallState::Error, CallState::Cancelled] {
        for to in [
            CallState::Executing,
            CallState::Cancelled,
            CallState::Success,
        ] {
            assert_eq!(terminal.advance(to), terminal);
        }
    }
    assert_eq!(
        CallState::Scheduled.advance(CallState::Executing),
        CallState::Executing
    );
}
