//! Issue 47: commands that wait for input they will never get end early with a result
//! naming what they waited for; a command whose output settles on a "ready" line moves
//! to the background and ends with the session. Real processes, small settings.

use std::time::{Duration, Instant};

use super::*;

/// A fixture whose prompt wait and ready settle are short, so a test that would hang on
/// the old code fails at its (long) timeout instead.
fn quick() -> Fixture {
    fixture_with(
        json!({"tools": {"shell": {"inputWaitMs": 300, "readySettleMs": 300}}}),
        25_000,
        1_000,
    )
}

/// Runs `command` with a 20 s timeout and checks it came back well before it.
async fn run_quick(f: &Fixture, command: &str) -> ToolResult {
    let started = Instant::now();
    let r = f
        .run_args(json!({ "command": command, "timeout": 20_000 }))
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "ran to its timeout: {}",
        r.llm_text()
    );
    r
}

#[tokio::test]
async fn bash_read_at_end_of_input_is_named() {
    let f = quick();
    let r = run_quick(&f, "read -r name; echo \"hello $name\"; exit 1").await;
    let text = r.llm_text();
    assert!(
        text.contains(
            "failed waiting for input it cannot get: a line on standard input (bash `read`)"
        ),
        "{text}"
    );
    assert!(text.contains("printf 'value\\n'"), "{text}");
}

#[tokio::test]
async fn python_input_at_end_of_input_is_named() {
    let f = quick();
    let r = run_quick(&f, "python3 -c 'input(\"name? \")'").await;
    let text = r.llm_text();
    assert!(
        text.contains("waiting for input it cannot get: a line on standard input (input())"),
        "{text}"
    );
}

#[tokio::test]
async fn git_commit_without_a_message_opens_no_editor_and_says_pass_m() {
    let f = quick();
    let r = run_quick(
        &f,
        "git init -q . && git -c user.name=t -c user.email=t@example.com commit -q --allow-empty",
    )
    .await;
    let text = r.llm_text();
    assert!(
        text.contains("an editor for the commit message (git)"),
        "{text}"
    );
    assert!(text.contains("-m \"...\""), "{text}");
    // The editor git runs is toolbelt's, whatever the person's configuration says.
    let r = run_quick(&f, "git var GIT_EDITOR; echo \"[$GIT_TERMINAL_PROMPT]\"").await;
    assert_eq!(field(&r, "Output"), "true\n[0]");
}

#[tokio::test]
async fn a_password_prompt_that_waits_is_ended_early() {
    let f = quick();
    let r = run_quick(&f, "printf 'Password: '; exec sleep 60").await;
    let text = r.llm_text();
    assert!(text.starts_with("Command was ended early"), "{text}");
    assert!(
        text.contains("it waits for input it cannot get (a password (the prompt `Password:`))"),
        "{text}"
    );
    assert_eq!(r.error.as_ref().unwrap().kind, ErrorKind::ExecutionFailed);
    assert_eq!(field(&r, "Output"), "Password: ");
}

#[tokio::test]
async fn an_npm_init_style_prompt_is_ended_early() {
    let f = quick();
    let r = run_quick(
        &f,
        "echo 'This utility will walk you through'; printf 'package name: (demo) '; exec sleep 60",
    )
    .await;
    let text = r.llm_text();
    assert!(
        text.contains("an answer to the prompt `package name: (demo)`"),
        "{text}"
    );
    assert!(text.contains("--yes"), "{text}");
}

#[tokio::test]
async fn quiet_output_without_a_prompt_is_left_to_run() {
    let f = quick();
    // Quiet for longer than both settings, on a finished line that is neither a prompt
    // nor a ready line: the command runs to its end.
    let r = run_quick(&f, "echo building; sleep 1; echo done").await;
    assert!(r.error.is_none(), "{}", r.llm_text());
    assert_eq!(field(&r, "Output"), "building\ndone");
}

/// The job id a moved command's result names.
fn job_id(r: &ToolResult) -> String {
    r.llm_text()
        .lines()
        .find_map(|l| l.strip_prefix("id: ").map(str::to_string))
        .unwrap_or_else(|| panic!("no job id in {}", r.llm_text()))
}

#[tokio::test]
async fn a_server_that_is_listening_moves_to_the_background_and_keeps_logging() {
    let f = quick();
    let r = run_quick(
        &f,
        "echo compiling; echo 'listening on :8080'; while [ ! -e go ]; do sleep 0.05; done; echo after-move",
    )
    .await;
    let text = r.llm_text();
    assert!(r.error.is_none(), "{text}");
    assert!(text.contains("moved to the background"), "{text}");
    assert!(text.contains("(\"listening on :8080\")"), "{text}");
    assert!(
        text.contains("Output so far: compiling\nlistening on :8080\n"),
        "{text}"
    );
    let id = job_id(&r);
    assert!(text.contains(&format!("task_stop (id {id})")), "{text}");
    let jobs = f.tool.jobs();
    assert_eq!(jobs.get(&id).unwrap().status, JobStatus::Running);
    // Its output keeps flowing into the job's log once the call has returned.
    std::fs::write(f.ws().join("go"), "").unwrap();
    let job = jobs.wait(&id).await.unwrap();
    assert_eq!(
        job.status,
        JobStatus::Exited {
            code: Some(0),
            signal: None
        }
    );
    let log = std::fs::read_to_string(&job.log_path).unwrap();
    assert_eq!(log, "compiling\nlistening on :8080\nafter-move\n");
}

#[tokio::test]
async fn a_moved_server_is_stopped_at_the_end_of_the_session() {
    let f = quick();
    let r = run_quick(&f, "echo 'listening on :8080'; exec sleep 300").await;
    let id = job_id(&r);
    let job = f.tool.jobs().get(&id).unwrap();
    assert_eq!(job.status, JobStatus::Running);
    assert!(!process::live_members(job.pid).is_empty());
    let Fixture { tool, dir, .. } = f;
    drop(tool);
    assert!(
        process::live_members(job.pid).is_empty(),
        "the moved job survived the session"
    );
    drop(dir);
}
