//! Issue 40: the logs of unasked commands share a budget of their own and go with the
//! session; a kept job's log is capped after the session is gone too.

use super::*;

/// The log a result names (`... saved in <path> ...`), if any.
fn log_of(result: &ToolResult) -> Option<PathBuf> {
    let text = result.llm_text();
    let rest = text.split("saved in ").nth(1)?;
    let end = rest.find([' ', ';'])?;
    Some(PathBuf::from(&rest[..end]))
}

const FLOOD: &str = "head -c 1048576 /dev/zero | tr '\\0' x";

async fn unasked(f: &Fixture, command: &str) -> ToolResult {
    f.build(json!({ "command": command }))
        .execute(ExecContext::new(f.env.clone()))
        .await
}

#[tokio::test]
async fn unasked_logs_share_a_smaller_budget_and_go_with_the_session() {
    // No kernel sandbox needed for this: the logs are toolbelt's, not the command's.
    let settings = json!({"tools": {"shell": {"allowUnsandboxed": true}}});
    let mut f = fixture_with(settings, 1000, 50);
    f.tool = RunShellCommand::new(f.env.clone()).with_log_limits(100_000, 300_000);
    // The unasked part is half the budget: 150,000 bytes.
    let first = unasked(&f, FLOOD).await;
    let first_log = log_of(&first).unwrap();
    assert_eq!(std::fs::metadata(&first_log).unwrap().len() / 1000, 100);
    let second = unasked(&f, FLOOD).await;
    let text = second.llm_text();
    assert!(
        text.contains("The first 50000 bytes of the output are saved in"),
        "{text}"
    );
    let second_log = log_of(&second).unwrap();
    let third = unasked(&f, FLOOD).await;
    assert!(
        third.llm_text().contains(
            "None of the output was saved: the logs of this session reached their limit."
        ),
        "{}",
        third.llm_text()
    );
    // An approved command still has the rest of the session's budget.
    let approved = f.run(FLOOD).await;
    let approved_log = log_of(&approved).unwrap();
    assert_eq!(std::fs::metadata(&approved_log).unwrap().len() / 1000, 100);
    // The session ends: the unasked logs go, the approved one stays.
    let Fixture { tool, dir, .. } = f;
    drop(tool);
    assert!(!first_log.exists() && !second_log.exists());
    assert!(approved_log.exists());
    drop(dir);
}

#[tokio::test]
async fn a_kept_jobs_log_stays_within_its_cap_after_the_session_is_gone() {
    let settings = json!({"tools": {"shell": {"killBackgroundOnExit": false}}});
    let mut f = fixture_with(settings, 25_000, 1_000);
    f.tool = RunShellCommand::new(f.env.clone()).with_log_limits(1000, 1 << 30);
    // The job waits for the session to end (its FIFO opened by the test), then floods.
    let fifo = f.dir.path().join("go");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let command = format!(
        "read -r _ < {}; head -c 3000000 /dev/zero | tr '\\0' x; echo; echo done",
        fifo.display()
    );
    let r = f
        .run_args(json!({"command": command, "is_background": true}))
        .await;
    let text = r.llm_text();
    let id = text.lines().find_map(|l| l.strip_prefix("id: ")).unwrap();
    let job = f.tool.jobs().get(id).unwrap();
    let Fixture { tool, dir, .. } = f;
    drop(tool);
    // Kept: it runs on, and its writer caps what it prints now that the session is gone.
    std::fs::write(&fifo, "go\n").unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let log = loop {
        let log = std::fs::read_to_string(&job.log_path).unwrap();
        if log.contains("[toolbelt: this log stops") || std::time::Instant::now() > deadline {
            break log;
        }
        std::thread::yield_now();
    };
    assert!(
        log.starts_with(&"x".repeat(1000)),
        "{}",
        &log[..log.len().min(200)]
    );
    assert!(
        log[1000..]
            .starts_with("\n[toolbelt: this log stops after its first 1000 bytes; at least "),
        "{}",
        &log[..log.len().min(1200)]
    );
    assert!(log.len() < 1200, "capped: {} bytes", log.len());
    // The note is written once the job closed its output, which it does as it exits,
    // a moment before the kernel shows it as ended: wait for that, bounded.
    let gone = || process::live_members(job.pid).is_empty() || finished(job.pid);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !gone() && std::time::Instant::now() < deadline {
        std::thread::yield_now();
    }
    assert!(gone(), "the job ended after its flood");
    drop(dir);
}
