//! The shell tool with real processes: exit codes, signals, interleaving, timeouts and
//! cancellation that end whole process groups, background jobs, huge output, rules.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use toolbelt_config::settings::Settings;
use toolbelt_core::{
    ConfirmationDetails, ErrorKind, ExecContext, OutputPolicy, OutputSink, PermissionSubject,
    ShellCommand, Tool, ToolEnvironment, ToolResult, WorkspaceRoots,
};

use super::*;

struct Fixture {
    dir: tempfile::TempDir,
    env: Arc<ToolEnvironment>,
    tool: RunShellCommand,
}

fn fixture() -> Fixture {
    fixture_with(json!({}), 25_000, 1_000)
}

fn fixture_with(settings: serde_json::Value, max_chars: usize, max_lines: usize) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let roots = WorkspaceRoots::new([dir.path().join("ws")]).unwrap();
    let settings = Settings::from_value(settings).unwrap();
    let mut env = ToolEnvironment::new(roots, Arc::new(settings), dir.path().join("session"));
    env.output = OutputPolicy::new(max_chars, max_lines, dir.path().join("spill"));
    let env = Arc::new(env);
    let tool = RunShellCommand::new(env.clone());
    Fixture { dir, env, tool }
}

impl Fixture {
    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }
    fn build(&self, args: serde_json::Value) -> Box<dyn Invocation> {
        self.tool.build(args).unwrap()
    }
    async fn run(&self, command: &str) -> ToolResult {
        self.run_args(json!({ "command": command })).await
    }
    /// Runs a call as one the person approved (these tests are about running
    /// commands; `sandbox_tests` covers the unasked ones).
    async fn run_args(&self, args: serde_json::Value) -> ToolResult {
        self.build(args)
            .execute(ExecContext::new(self.env.clone()).approved())
            .await
    }
}

/// The value of one `Field: value` line of the model text.
fn field(result: &ToolResult, name: &str) -> String {
    let text = result.llm_text();
    let prefix = format!("{name}: ");
    let start = text
        .find(&format!("\n{prefix}"))
        .map(|i| i + 1)
        .or_else(|| text.starts_with(&prefix).then_some(0))
        .unwrap_or_else(|| panic!("no {name} in {text}"));
    let rest = &text[start + prefix.len()..];
    // Output may span lines: it ends where the Error field starts.
    let end = if name == "Output" {
        rest.find("\nError: ").unwrap_or(rest.len())
    } else {
        rest.find('\n').unwrap_or(rest.len())
    };
    rest[..end].to_string()
}

/// PIDs printed by a command as `name:PID` words.
fn pids(text: &str, name: &str) -> Vec<u32> {
    text.split_whitespace()
        .filter_map(|w| w.strip_prefix(&format!("{name}:")))
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// A process is finished for us when it is gone, or a zombie that is not our child
/// (orphans belong to init, which reaps them; ours we must reap).
/// [`finished`] for an id a command printed or a result named: an id in the PID
/// namespace approved commands share (none there: it ended).
fn finished_ns(pid: u32) -> bool {
    toolbelt_process::isolate::host_pid(pid).is_none_or(finished)
}

fn finished(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next().unwrap();
    let ppid: u32 = fields.next().unwrap().parse().unwrap();
    state == "Z" && ppid != std::process::id() || state == "X"
}

#[tokio::test]
async fn output_exit_code_and_pgid_are_reported() {
    let f = fixture();
    let r = f.run("echo hello; exit 3").await;
    assert!(r.error.is_none(), "a non-zero exit is not an error");
    assert_eq!(field(&r, "Command"), "echo hello; exit 3");
    assert_eq!(field(&r, "Directory"), "(root)");
    assert_eq!(field(&r, "Output"), "hello");
    assert_eq!(field(&r, "Exit Code"), "3");
    assert_eq!(field(&r, "Signal"), "(none)");
    assert_eq!(field(&r, "Background PIDs"), "(none)");
    assert!(field(&r, "Process Group PGID").parse::<u32>().unwrap() > 1);
}

#[tokio::test]
async fn a_signal_is_reported() {
    let f = fixture();
    let r = f.run("kill -TERM $$").await;
    assert_eq!(field(&r, "Signal"), "15");
    assert_eq!(field(&r, "Exit Code"), "(none)");
}

#[tokio::test]
async fn stdout_and_stderr_interleave_in_order() {
    let f = fixture();
    let r = f.run("echo 1; echo 2 >&2; echo 3; echo 4 >&2").await;
    assert_eq!(field(&r, "Output"), "1\n2\n3\n4");
}

#[tokio::test]
async fn invalid_utf8_and_ansi_never_fail_a_call() {
    let f = fixture();
    let r = f.run(r"printf 'ok \377\376 \033[31mred\033[0m\n'").await;
    assert!(r.error.is_none());
    assert_eq!(field(&r, "Output"), "ok \u{fffd}\u{fffd} red");
}

#[tokio::test]
async fn environment_stdin_and_directory() {
    let f = fixture();
    std::fs::create_dir(f.ws().join("sub")).unwrap();
    let r = f
        .run_args(json!({
            "command": "echo $TOOLBELT $PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT; cat; pwd",
            "directory": f.ws().join("sub").to_str().unwrap(),
        }))
        .await;
    // `cat` reads /dev/null and returns at once.
    assert_eq!(
        field(&r, "Output"),
        format!("1 cat cat 0\n{}", f.ws().join("sub").display())
    );
    assert_eq!(field(&r, "Directory"), "sub");
}

#[tokio::test]
async fn directories_outside_the_workspace_are_refused() {
    let f = fixture();
    let outside = f.dir.path().join("session");
    std::fs::create_dir_all(&outside).unwrap();
    let err = f
        .tool
        .build(json!({"command": "ls", "directory": outside.to_str().unwrap()}))
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::PathNotInWorkspace);
    let err = f
        .tool
        .build(json!({"command": "ls", "directory": "relative"}))
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidToolParams);
    let err = f.tool.build(json!({"command": "   "})).unwrap_err();
    assert!(err.message.contains("empty"));
    let err = f
        .tool
        .build(json!({"command": "sleep 1 &", "is_background": true}))
        .unwrap_err();
    assert!(err.message.contains("trailing '&'"), "{err}");
}

#[tokio::test]
async fn timeout_kills_children_and_grandchildren() {
    let f = fixture();
    let command =
        "sleep 300 & echo child:$!; (sleep 300 & echo grandchild:$!; wait) & echo sub:$!; wait";
    let r = f
        .run_args(json!({"command": command, "timeout": 1500}))
        .await;
    assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Timeout));
    let text = r.llm_text();
    assert!(text.starts_with("Command timed out after 1500ms"), "{text}");
    let all: Vec<u32> = ["child", "grandchild", "sub"]
        .iter()
        .flat_map(|n| pids(&text, n))
        .collect();
    assert_eq!(all.len(), 3, "{text}");
    let pgid: u32 = field(&r, "Process Group PGID").parse().unwrap();
    for pid in all.iter().chain([&pgid]) {
        assert!(finished_ns(*pid), "process {pid} survived: {text}");
    }
}

#[tokio::test]
async fn cancellation_kills_the_group_and_keeps_the_output() {
    let f = fixture();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let mut ctx = ExecContext::new(f.env.clone()).approved();
    ctx.output = OutputSink::new(move |chunk| {
        let _ = tx.send(chunk.to_string());
    });
    let cancel = ctx.cancel.clone();
    let call = f.build(json!({"command": "sleep 300 & echo ready:$!; wait"}));
    let run = tokio::spawn(call.execute(ctx));
    // Live output tells us the command is running; then cancel.
    let mut seen = String::new();
    while !seen.contains("ready:") || !seen.ends_with('\n') {
        seen.push_str(&rx.recv().await.unwrap());
    }
    cancel.cancel();
    let r = run.await.unwrap();
    assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Cancelled));
    assert!(field(&r, "Output").starts_with("ready:"));
    for pid in pids(&r.llm_text(), "ready") {
        assert!(finished_ns(pid), "sleep {pid} survived");
    }
}

#[tokio::test]
async fn processes_left_in_the_background_are_listed_and_ended() {
    let f = fixture();
    let r = f.run("sleep 300 >/dev/null 2>&1 & echo started").await;
    assert_eq!(field(&r, "Output"), "started");
    let bg: Vec<u32> = field(&r, "Background PIDs")
        .split(", ")
        .filter_map(|p| p.parse().ok())
        .collect();
    assert_eq!(bg.len(), 1, "{}", r.llm_text());
    assert!(
        finished_ns(bg[0]),
        "a foreground call leaves nothing running"
    );
    assert!(
        r.llm_text().contains("is_background: true"),
        "{}",
        r.llm_text()
    );
}

#[tokio::test]
async fn huge_output_is_cut_for_the_model_and_kept_whole_in_a_log() {
    let f = fixture_with(json!({}), 2_000, 100);
    let r = f.run("seq 1 300000; echo done >&2").await;
    let text = r.llm_text();
    assert!(
        f.env.output.fits(&text),
        "the whole result fits the budget, so nothing cuts it twice: {} bytes",
        text.len()
    );
    let output = field(&r, "Output");
    assert!(output.starts_with("[Output truncated:"), "{output}");
    assert!(output.contains("\n1\n2\n"), "head kept");
    assert!(output.ends_with("299999\n300000\ndone"), "tail kept");
    let log = output
        .split("saved in ")
        .nth(1)
        .and_then(|s| s.split(';').next())
        .unwrap();
    let full = std::fs::read_to_string(log).unwrap();
    assert_eq!(full.lines().count(), 300_001);
    assert!(Path::new(log).starts_with(&f.env.session_dir));
}

#[tokio::test]
async fn binary_output_is_summarised() {
    let f = fixture();
    let r = f.run("head -c 10000 /dev/zero").await;
    let output = field(&r, "Output");
    assert!(
        output.starts_with("[Binary output: 10000 bytes"),
        "{output}"
    );
}

#[tokio::test]
async fn read_only_lines_need_no_confirmation() {
    let f = fixture();
    for command in ["ls -la", "git status && git diff", "cat a | grep b | wc -l"] {
        let call = f.build(json!({ "command": command }));
        assert!(call.confirmation().await.is_none(), "{command}");
    }
    let call = f.build(json!({"command": "ls && rm -rf x && touch y"}));
    match call.confirmation().await {
        Some(ConfirmationDetails::Exec { root_commands, .. }) => {
            assert_eq!(root_commands, ["rm", "touch"]);
        }
        other => panic!("{other:?}"),
    }
    // An environment prefix changes what the program does: no root is remembered for
    // it, so the question offers no "always".
    let call = f.build(json!({"command": "ls && FOO=1 rm -rf x && touch y"}));
    match call.confirmation().await {
        Some(ConfirmationDetails::Exec { root_commands, .. }) => {
            assert!(root_commands.is_empty(), "{root_commands:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        call.permission_subject(),
        PermissionSubject::Commands(vec![
            ShellCommand::from_text("ls"),
            ShellCommand {
                assignments: vec!["FOO=1".into()],
                ..ShellCommand::from_text("rm -rf x")
            },
            ShellCommand::from_text("touch y"),
        ])
    );
    for command in ["echo $(ls)", "cat `ls`", "diff <(ls a) b", "ls > out"] {
        let call = f.build(json!({ "command": command }));
        assert!(call.confirmation().await.is_some(), "{command}");
    }
}

#[tokio::test]
async fn a_jobs_log_stops_at_its_cap_and_is_whole_when_the_job_reads_as_ended() {
    let mut f = fixture();
    f.tool = RunShellCommand::new(f.env.clone()).with_log_limits(1000, 1 << 30);
    // 1 MiB of output, more than a pipe holds, from a job that exits at once after it.
    let r = f
        .run_args(json!({"command": "head -c 1048576 /dev/zero | tr '\\0' x; echo; echo done", "is_background": true}))
        .await;
    let text = r.llm_text();
    let id = text.lines().find_map(|l| l.strip_prefix("id: ")).unwrap();
    let job = f.tool.jobs().wait(id).await.unwrap();
    assert_eq!(
        job.status,
        JobStatus::Exited {
            code: Some(0),
            signal: None
        }
    );
    let log = std::fs::read_to_string(&job.log_path).unwrap();
    assert_eq!(
        log,
        format!(
            "{}\n[toolbelt: this log stops after its first 1000 bytes; the {} bytes of output after them were not saved]\n",
            "x".repeat(1000),
            1_048_576 + 6 - 1000
        )
    );
    // A job within the cap: its log is its output exactly.
    let r = f
        .run_args(json!({"command": "echo started; echo to-stderr >&2", "is_background": true}))
        .await;
    let text = r.llm_text();
    let id = text.lines().find_map(|l| l.strip_prefix("id: ")).unwrap();
    let job = f.tool.jobs().wait(id).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(&job.log_path).unwrap(),
        "started\nto-stderr\n"
    );
}

#[tokio::test]
async fn the_logs_of_a_session_share_one_budget_foreground_and_background() {
    let mut f = fixture_with(json!({}), 1000, 50);
    f.tool = RunShellCommand::new(f.env.clone()).with_log_limits(100_000, 150_000);
    let flood = "head -c 1048576 /dev/zero | tr '\\0' x";
    let r = f
        .run_args(json!({"command": flood, "is_background": true}))
        .await;
    let text = r.llm_text();
    let id = text.lines().find_map(|l| l.strip_prefix("id: ")).unwrap();
    let job = f.tool.jobs().wait(id).await.unwrap();
    let log = std::fs::read(&job.log_path).unwrap();
    assert!(log.starts_with(&[b'x'; 100_000]) && log[100_000] == b'\n');
    // The foreground call's log gets what is left of the budget, not its own cap.
    let r = f.run(flood).await;
    let text = r.llm_text();
    assert!(
        text.contains("The first 50000 bytes of the output are saved in"),
        "{text}"
    );
    // Spent: a later call saves nothing more, and still shows the output's end.
    let r = f.run(&format!("{flood}; echo; echo the-end")).await;
    let text = r.llm_text();
    assert!(
        text.contains(
            "None of the output was saved: the logs of this session reached their limit."
        ),
        "{text}"
    );
    assert!(text.contains("\nthe-end"), "{text}");
}

#[tokio::test]
async fn background_job_lifecycle() {
    let f = fixture();
    let r = f
        .run_args(json!({"command": "echo started; exit 7", "is_background": true}))
        .await;
    assert!(r.error.is_none(), "{}", r.llm_text());
    let text = r.llm_text();
    assert!(text.starts_with("Background command started."));
    let id = text.lines().find_map(|l| l.strip_prefix("id: ")).unwrap();
    let job = f.tool.jobs().wait(id).await.unwrap();
    assert_eq!(
        job.status,
        JobStatus::Exited {
            code: Some(7),
            signal: None
        }
    );
    assert_eq!(std::fs::read_to_string(&job.log_path).unwrap(), "started\n");
    assert!(job.log_path.starts_with(&f.env.session_dir));

    let r = f
        .run_args(json!({"command": "exec sleep 300", "is_background": true}))
        .await;
    let id = r
        .llm_text()
        .lines()
        .find_map(|l| l.strip_prefix("id: ").map(str::to_string))
        .unwrap();
    let job = f.tool.jobs().get(&id).unwrap();
    assert_eq!(job.status, JobStatus::Running);
    assert_eq!(job.pid, job.pgid);
    let stopped = f.tool.jobs().stop(&id).await.unwrap();
    assert_eq!(stopped.status, JobStatus::Stopped);
    assert!(finished(job.pid));
}

/// `stop_started_by` ends the jobs of one caller's calls, also what a job whose shell
/// already exited left behind, and leaves other callers' jobs alone.
#[tokio::test]
async fn jobs_are_stopped_by_the_calls_that_started_them() {
    let f = fixture();
    let start = |call_id: &str, command: &str| {
        let mut ctx = ExecContext::new(f.env.clone()).approved();
        ctx.call_id = call_id.to_string();
        f.build(json!({"command": command, "is_background": true}))
            .execute(ctx)
    };
    let mine = start("mcp-1-1", "exec sleep 301").await;
    let left = start("mcp-1-2", "sleep 302 >/dev/null 2>&1 & echo left:$!").await;
    let other = start("mcp-11-1", "exec sleep 303").await;
    let id = |r: &ToolResult| {
        r.llm_text()
            .lines()
            .find_map(|l| l.strip_prefix("id: ").map(str::to_string))
            .unwrap()
    };
    let jobs = f.tool.jobs();
    // The second job's shell exits at once, leaving its sleep behind.
    let left_job = jobs.wait(&id(&left)).await.unwrap();
    let orphan = pids(
        &std::fs::read_to_string(&left_job.log_path).unwrap(),
        "left",
    )[0];
    assert!(!finished_ns(orphan));
    let mine = jobs.get(&id(&mine)).unwrap();
    let other = jobs.get(&id(&other)).unwrap();

    let stopped = jobs.stop_started_by("mcp-1-").await;
    assert_eq!(stopped.len(), 2, "{stopped:?}");
    assert!(finished(mine.pid));
    assert!(finished_ns(orphan), "what the exited job left is ended too");
    assert!(!finished(other.pid), "mcp-11- is another caller");
    jobs.stop(&other.id).await;
}

#[tokio::test]
async fn jobs_end_with_the_tool_unless_configured() {
    let f = fixture();
    let r = f
        .run_args(json!({"command": "sleep 300", "is_background": true}))
        .await;
    let pid: u32 = r
        .llm_text()
        .lines()
        .find_map(|l| l.strip_prefix("PID: "))
        .unwrap()
        .parse()
        .unwrap();
    let host = toolbelt_process::isolate::host_pid(pid).unwrap();
    assert!(!finished(host));
    let Fixture { tool, dir, .. } = f;
    drop(tool);
    assert!(
        process::live_members(host).is_empty(),
        "job survived the session"
    );
    drop(dir);

    let f = fixture_with(
        json!({"tools": {"shell": {"killBackgroundOnExit": false}}}),
        25_000,
        1_000,
    );
    let r = f
        .run_args(json!({"command": "sleep 300", "is_background": true}))
        .await;
    let pid: u32 = r
        .llm_text()
        .lines()
        .find_map(|l| l.strip_prefix("PID: "))
        .unwrap()
        .parse()
        .unwrap();
    let Fixture { tool, .. } = f;
    drop(tool);
    assert_eq!(
        process::live_members(pid),
        [pid],
        "kept running as configured"
    );
    process::terminate_group(pid, process::KILL_GRACE).await;
}

#[tokio::test]
async fn landlock_confines_writes_to_the_workspace() {
    let f = fixture_with(json!({"tools": {"sandbox": "landlock"}}), 25_000, 1_000);
    // "Outside" must be neither in the workspace nor in the temp directory (which the
    // sandbox allows): a checkout under /tmp cannot host it, so try a few places.
    let temp = std::env::temp_dir().canonicalize().unwrap();
    let candidates = [
        std::env::current_dir().ok(),
        std::env::var_os("HOME").map(std::path::PathBuf::from),
        Some(std::path::PathBuf::from("/var/tmp")),
    ];
    let outside = candidates
        .into_iter()
        .flatten()
        .filter_map(|dir| dir.canonicalize().ok())
        .filter(|dir| !dir.starts_with(&temp) && !dir.starts_with(f.ws()))
        .find_map(|dir| tempfile::tempdir_in(dir).ok());
    let Some(outside) = outside else {
        // CI runs on a clean clone outside /tmp, so there is always a place there.
        assert!(
            std::env::var_os("CI").is_none(),
            "no writable directory outside the workspace and the temp directory"
        );
        eprintln!("skipped: no writable directory outside the workspace and the temp directory");
        return;
    };
    let inside = f.ws().join("inside.txt");
    let blocked = outside.path().join("blocked.txt");
    let command = format!(
        "touch {} && echo in-ok; touch {} && echo out-ok; echo tmp > $(mktemp) && echo tmp-ok",
        inside.display(),
        blocked.display()
    );
    let r = f.run(&command).await;
    if let Some(e) = &r.error {
        // Without Landlock the sandbox fails closed: nothing ran. CI's kernel has
        // Landlock, so there the confinement itself must be what is checked.
        assert_eq!(e.kind, ErrorKind::ExecutionDenied);
        assert!(e.message.contains("cannot enforce Landlock"), "{e}");
        assert!(!inside.exists() && !blocked.exists(), "{e}");
        assert!(
            std::env::var_os("CI").is_none(),
            "this kernel has no Landlock, so CI cannot check the confinement: {e}"
        );
        eprintln!("not checked: this kernel has no Landlock ({})", e.message);
        return;
    }
    let output = field(&r, "Output");
    assert!(inside.exists(), "{output}");
    assert!(
        !blocked.exists(),
        "a write outside the workspace got through: {output}"
    );
    assert!(
        output.contains("in-ok") && output.contains("tmp-ok"),
        "{output}"
    );
    assert!(!output.contains("out-ok"), "{output}");
}

#[tokio::test]
async fn failing_to_start_is_a_tool_error() {
    let f = fixture();
    let gone = f.ws().join("gone");
    std::fs::create_dir(&gone).unwrap();
    let call = f.build(json!({"command": "ls", "directory": gone.to_str().unwrap()}));
    std::fs::remove_dir(&gone).unwrap();
    let r = call
        .execute(ExecContext::new(f.env.clone()).approved())
        .await;
    assert_eq!(
        r.error.as_ref().map(|e| e.kind),
        Some(ErrorKind::ShellExecuteError),
        "{}",
        r.llm_text()
    );
    assert!(r.llm_text().contains("Could not start the command"));
}

#[tokio::test]
async fn git_asks_when_the_repository_configures_a_program() {
    let f = fixture();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(f.ws())
            .output()
            .unwrap();
        assert!(status.status.success(), "git {args:?}: {status:?}");
    };
    git(&["init", "-q"]);
    for command in ["git status", "git log --oneline -1", "git diff"] {
        let call = f.build(json!({ "command": command }));
        assert!(call.confirmation().await.is_none(), "{command}");
    }
    // What the model could write into .git/config in auto-edit mode: a program git runs
    // on every `status`, and an external diff.
    let pwned = f.ws().join("pwned");
    git(&[
        "config",
        "core.fsmonitor",
        &format!("touch {}; echo", pwned.display()),
    ]);
    git(&[
        "config",
        "diff.external",
        &format!("touch {}", pwned.display()),
    ]);
    for command in ["git status", "ls && git diff", "git --no-pager log -p"] {
        let call = f.build(json!({ "command": command }));
        match call.confirmation().await {
            Some(ConfirmationDetails::Exec { root_commands, .. }) => {
                assert_eq!(root_commands, ["git"], "{command}");
            }
            other => panic!("{command}: {other:?}"),
        }
    }
    // Deciding ran nothing.
    assert!(!pwned.exists());
    // Commands without git are not affected.
    let call = f.build(json!({"command": "ls"}));
    assert!(call.confirmation().await.is_none());
}

/// The root commands a question offers to remember, and the workspace rule they become.
async fn always_rules(f: &Fixture, command: &str) -> (Vec<String>, Vec<String>) {
    let call = f.build(json!({ "command": command }));
    let details = call.confirmation().await.unwrap();
    let ConfirmationDetails::Exec { root_commands, .. } = &details else {
        panic!("{details:?}");
    };
    let request = toolbelt_engine::scheduler::ApprovalRequest {
        call_id: "1".into(),
        tool: "run_shell_command".into(),
        kind: toolbelt_core::Kind::Execute,
        description: command.into(),
        details: details.clone(),
        may_always_allow: true,
    };
    (
        root_commands.clone(),
        crate::workspace_rules::rules_for(&request, false, &crate::rule_vocabulary()),
    )
}

#[tokio::test]
async fn always_allow_names_the_program_approved_and_nothing_wider() {
    let f = fixture();
    let (roots, rules) = always_rules(&f, "/ws/bin/git status").await;
    assert_eq!(roots, ["/ws/bin/git"]);
    assert_eq!(rules, ["run_shell_command(/ws/bin/git *)"]);
    let (roots, rules) = always_rules(&f, "./git status && rm x").await;
    assert_eq!(roots, ["./git", "rm"]);
    assert_eq!(rules.len(), 2, "{rules:?}");
    for command in [
        "eval ls",
        "xargs ls",
        "env A=1 ls",
        "bash -c ls",
        "sh -c 'rm x'",
        "sudo ls",
        "exec ls",
        "command ls",
        "nohup ls",
        "timeout 5 ls",
        "find . -exec ls ;",
        "python3 -c 1",
        "$x a",
        "touch y && eval ls",
        // Too many pipes to analyse: judged whole, and no rule may name it.
        &vec!["touch y"; 600].join(" | "),
    ] {
        let (roots, rules) = always_rules(&f, command).await;
        assert!(
            roots.is_empty() && rules.is_empty(),
            "{command}: {roots:?} {rules:?}"
        );
    }
}

#[tokio::test]
async fn a_command_longer_than_the_kernel_passes_is_refused_before_anything_is_asked() {
    let f = fixture();
    // The longest the kernel passes does run.
    let fits = format!(": {}", "a".repeat(128 * 1024 - 1 - 2));
    let r = f.run(&fits).await;
    assert!(r.error.is_none(), "{}", r.llm_text());
    let long = format!("echo {}", "a".repeat(128 * 1024));
    let Err(e) = f.tool.build(json!({ "command": long })) else {
        panic!("a command of {} bytes was built", long.len());
    };
    assert_eq!(e.kind, ErrorKind::InvalidToolParams);
    assert!(
        e.message.contains("131077 bytes") && e.message.contains("write_file"),
        "{}",
        e.message
    );
}

mod logs;
mod waits;

#[tokio::test]
async fn unasked_background_jobs_are_few_and_the_next_one_asks() {
    let f = fixture();
    if SandboxSupport::detect().can_confine().is_err() {
        // Without a sandbox every unasked command asks already.
        return;
    }
    let mut pids = Vec::new();
    for _ in 0..background::MAX_UNASKED_JOBS {
        let call = f.build(json!({"command": "tail -f /dev/null", "is_background": true}));
        assert!(call.confirmation().await.is_none(), "runs unasked");
        let r = call.execute(ExecContext::new(f.env.clone())).await;
        let text = r.llm_text();
        let pid: u32 = text
            .lines()
            .find_map(|l| l.strip_prefix("PID: "))
            .unwrap_or_else(|| panic!("{text}"))
            .parse()
            .unwrap();
        pids.push(pid);
    }
    let call = f.build(json!({"command": "tail -f /dev/null", "is_background": true}));
    match call.confirmation().await {
        Some(ConfirmationDetails::Exec { title, .. }) => {
            assert!(title.contains("background jobs"), "{title}");
        }
        other => panic!("the next unasked job must ask: {other:?}"),
    }
    // A foreground read-only command still runs unasked, and once a job ends another
    // may start unasked again.
    let foreground = f.build(json!({"command": "cat /dev/null"}));
    assert!(foreground.confirmation().await.is_none());
    process::terminate_group(pids[0], process::KILL_GRACE).await;
    let id = f.tool.jobs().jobs()[0].id.clone();
    f.tool.jobs().wait(&id).await;
    let again = f.build(json!({"command": "tail -f /dev/null", "is_background": true}));
    assert!(again.confirmation().await.is_none());
}

/// Logs of unasked commands a killed toolbelt left go at the next session's start; logs
/// of approved commands, and those of a toolbelt still running, stay.
#[test]
fn unasked_logs_a_killed_toolbelt_left_are_swept() {
    let dir = tempfile::tempdir().unwrap();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let me = std::process::id();
    for (sub, name) in [
        ("background", format!("bg_1.unasked-{dead}.log")),
        ("shell", format!("run_shell_command-3.unasked-{dead}.log")),
        ("background", format!("bg_2-{dead}.log")),
        ("shell", format!("run_shell_command-4.unasked-{me}.log")),
    ] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        std::fs::write(dir.path().join(sub).join(name), "x").unwrap();
    }
    assert_eq!(super::sweep_unasked_logs(dir.path()), 2);
    let left = |sub: &str| {
        let mut names: Vec<String> = std::fs::read_dir(dir.path().join(sub))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        names.sort();
        names
    };
    assert_eq!(left("background"), [format!("bg_2-{dead}.log")]);
    assert_eq!(
        left("shell"),
        [format!("run_shell_command-4.unasked-{me}.log")]
    );
}

/// An unasked command's log is named so the sweep can find it.
#[tokio::test]
async fn an_unasked_commands_log_is_marked_unasked() {
    let f = fixture();
    if SandboxSupport::detect().can_confine().is_err() {
        return;
    }
    let call = f.build(json!({"command": "echo hi", "is_background": true}));
    assert!(call.confirmation().await.is_none(), "runs unasked");
    let r = call.execute(ExecContext::new(f.env.clone())).await;
    let log = r
        .llm_text()
        .lines()
        .find_map(|l| l.strip_prefix("Output file: ").map(str::to_string))
        .unwrap();
    assert!(
        log.ends_with(&format!(".unasked-{}.log", std::process::id())),
        "{log}"
    );
    let id = f.tool.jobs().jobs()[0].id.clone();
    f.tool.jobs().wait(&id).await;
}
