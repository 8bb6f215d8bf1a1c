//! A foreground call leaves nothing running: every way of escaping the process group or
//! the shell (`setsid`, `setsid -f`, `nohup`, a subshell, `disown`, a cleared
//! environment) is ended when the call returns, times out or is cancelled; background
//! jobs and other calls' processes are not touched. Real processes throughout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolbelt_config::settings::Settings;
use toolbelt_core::{
    ErrorKind, ExecContext, OutputPolicy, OutputSink, Tool, ToolEnvironment, ToolResult,
    WorkspaceRoots,
};

use crate::shell::RunShellCommand;

struct Fixture {
    _dir: tempfile::TempDir,
    env: Arc<ToolEnvironment>,
    tool: RunShellCommand,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let roots = WorkspaceRoots::new([dir.path().join("ws")]).unwrap();
    let settings = Settings::from_value(json!({})).unwrap();
    let mut env = ToolEnvironment::new(roots, Arc::new(settings), dir.path().join("session"));
    env.output = OutputPolicy::new(25_000, 1_000, dir.path().join("spill"));
    let env = Arc::new(env);
    let tool = RunShellCommand::new(env.clone());
    Fixture {
        _dir: dir,
        env,
        tool,
    }
}

impl Fixture {
    async fn run(&self, args: serde_json::Value) -> ToolResult {
        self.tool
            .build(args)
            .unwrap()
            .execute(ExecContext::new(self.env.clone()).approved())
            .await
    }
}

/// PIDs printed by a command as `pid:N` words.
fn printed_pids(text: &str) -> Vec<u32> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter_map(|w| w.strip_prefix("pid:"))
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Alive: exists and is not a zombie. A zombie of ours would be a leak too, so a zombie
/// whose parent is this test process counts as alive. `pid` is what a command printed
/// (and what results name): an id in the PID namespace approved commands share.
fn alive(pid: u32) -> bool {
    let Some(pid) = toolbelt_process::isolate::host_pid(pid) else {
        return false;
    };
    match toolbelt_process::procfs::stat(pid) {
        None => false,
        Some(p) => p.is_alive() || p.ppid == std::process::id(),
    }
}

/// Polls until `pid` is dead, with a generous deadline (a signal is asynchronous).
fn dead_soon(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

async fn assert_nothing_survives(command: &str) {
    let f = fixture();
    let r = f.run(json!({ "command": command })).await;
    let text = r.llm_text();
    let pids = printed_pids(&text);
    assert!(!pids.is_empty(), "no pid printed: {text}");
    for pid in &pids {
        assert!(!alive(*pid), "process {pid} outlived `{command}`: {text}");
    }
    assert!(
        text.contains("is_background: true"),
        "the result says what was ended and what to use instead: {text}"
    );
    for pid in &pids {
        assert!(
            text.contains(&pid.to_string()),
            "{pid} is named in the result: {text}"
        );
    }
}

#[tokio::test]
async fn setsid_in_the_background_is_ended() {
    assert_nothing_survives("setsid sleep 1000 >/dev/null 2>&1 & echo pid:$!").await;
}

#[tokio::test]
async fn nohup_in_the_background_is_ended() {
    assert_nothing_survives("nohup sleep 1000 >/dev/null 2>&1 & echo pid:$!").await;
}

#[tokio::test]
async fn an_orphan_of_a_subshell_is_ended() {
    assert_nothing_survives("(sleep 1000 >/dev/null 2>&1 & echo pid:$!)").await;
}

#[tokio::test]
async fn setsid_fork_is_ended() {
    // `setsid -f` forks and its parent exits at once: the child is orphaned in a new
    // session before the shell even returns.
    assert_nothing_survives("setsid -f sh -c 'echo pid:$$; exec sleep 1000' ; sleep 0.2").await;
}

#[tokio::test]
async fn a_disowned_job_is_ended() {
    assert_nothing_survives("sleep 1000 >/dev/null 2>&1 & disown; echo pid:$!").await;
}

#[tokio::test]
async fn a_cleared_environment_seen_below_the_shell_is_ended() {
    // `env -i` removes the owner marker; the process was seen below the shell while it
    // ran, which is enough.
    assert_nothing_survives("env -i setsid sleep 1000 >/dev/null 2>&1 & echo pid:$!; sleep 1")
        .await;
}

#[tokio::test]
async fn setsid_survives_no_timeout() {
    let f = fixture();
    let r = f
        .run(json!({
            "command": "setsid sleep 1000 >/dev/null 2>&1 & echo pid:$!; sleep 1000",
            "timeout": 1500
        }))
        .await;
    assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Timeout));
    let pids = printed_pids(&r.llm_text());
    assert_eq!(pids.len(), 1, "{}", r.llm_text());
    assert!(!alive(pids[0]), "setsid sleep survived the timeout");
}

#[tokio::test]
async fn setsid_survives_no_cancellation() {
    let f = fixture();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let mut ctx = ExecContext::new(f.env.clone()).approved();
    ctx.output = OutputSink::new(move |chunk| {
        let _ = tx.send(chunk.to_string());
    });
    let cancel = ctx.cancel.clone();
    let call = f
        .tool
        .build(json!({"command": "setsid sleep 1000 >/dev/null 2>&1 & echo pid:$!; sleep 1000"}))
        .unwrap();
    let run = tokio::spawn(call.execute(ctx));
    let mut seen = String::new();
    while printed_pids(&seen).is_empty() || !seen.ends_with('\n') {
        seen.push_str(&rx.recv().await.unwrap());
    }
    cancel.cancel();
    let r = run.await.unwrap();
    assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Cancelled));
    for pid in printed_pids(&seen) {
        assert!(!alive(pid), "setsid sleep {pid} survived the cancellation");
    }
}

#[tokio::test]
async fn background_jobs_and_other_calls_are_left_alone() {
    let f = fixture();
    // A background job that also detaches a process of its own.
    let job = f
        .run(json!({
            "command": "setsid sleep 1000 >/dev/null 2>&1 & echo pid:$! ; exec sleep 1000",
            "is_background": true
        }))
        .await;
    let job_pid: u32 = job
        .llm_text()
        .lines()
        .find_map(|l| l.strip_prefix("PID: "))
        .unwrap()
        .parse()
        .unwrap();
    let log = job
        .llm_text()
        .lines()
        .find_map(|l| l.strip_prefix("Output file: "))
        .unwrap()
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(10);
    let detached = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(pid) = printed_pids(&text).first() {
            break *pid;
        }
        assert!(Instant::now() < deadline, "the job printed nothing");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };

    // Another foreground call, still running, with a detached process of its own.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let mut ctx = ExecContext::new(f.env.clone()).approved();
    ctx.output = OutputSink::new(move |chunk| {
        let _ = tx.send(chunk.to_string());
    });
    let cancel = ctx.cancel.clone();
    let other = f
        .tool
        .build(json!({"command": "setsid sleep 1000 >/dev/null 2>&1 & echo pid:$!; sleep 1000"}))
        .unwrap();
    let other = tokio::spawn(other.execute(ctx));
    let mut seen = String::new();
    while printed_pids(&seen).is_empty() || !seen.ends_with('\n') {
        seen.push_str(&rx.recv().await.unwrap());
    }
    let others = printed_pids(&seen);

    // A foreground call that leaves something ends only its own.
    let r = f
        .run(json!({"command": "setsid sleep 1000 >/dev/null 2>&1 & echo pid:$!"}))
        .await;
    let own = printed_pids(&r.llm_text());
    assert!(!alive(own[0]), "{}", r.llm_text());
    assert!(alive(job_pid), "the background job was killed");
    assert!(alive(detached), "the job's detached process was killed");
    assert!(alive(others[0]), "another call's process was killed");

    cancel.cancel();
    other.await.unwrap();
    assert!(dead_soon(others[0]));
    let stopped = f.tool.jobs().stop("bg_1").await.unwrap();
    assert_eq!(stopped.shown_pid, job_pid);
    assert!(dead_soon(job_pid));
    assert!(dead_soon(detached), "stopping a job ends what it detached");
}

#[tokio::test]
async fn a_job_whose_shell_exited_is_stopped_by_identity() {
    let f = fixture();
    // The shell exits at once; what it detached keeps running under the job.
    let job = f
        .run(json!({
            "command": "setsid sleep 1000 >/dev/null 2>&1 & echo pid:$!",
            "is_background": true
        }))
        .await;
    let log = job
        .llm_text()
        .lines()
        .find_map(|l| l.strip_prefix("Output file: "))
        .unwrap()
        .to_string();
    let done = f.tool.jobs().wait("bg_1").await.unwrap();
    assert_ne!(done.status, crate::shell::background::JobStatus::Running);
    let detached = printed_pids(&std::fs::read_to_string(&log).unwrap())[0];
    assert!(alive(detached));
    f.tool.jobs().stop("bg_1").await.unwrap();
    assert!(dead_soon(detached));
}
