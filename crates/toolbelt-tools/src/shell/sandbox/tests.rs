//! The sandbox with real processes: an unasked command cannot write, change metadata,
//! connect or signal toolbelt, and says why it failed; an approved one is unconfined;
//! without Landlock, read-only commands ask (a simulated [`SandboxSupport`], not a fake
//! kernel). These tests need a kernel with Landlock and seccomp (Linux 6.12 or later
//! for the scoping); they fail, not skip, without one.

use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::Arc;
use toolbelt_config::ApprovalMode;
use toolbelt_engine::{scheduler::CallRules, scheduler::Permissions};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_config::settings::Settings;
use toolbelt_core::{
    ConfirmationDetails, ErrorKind, ExecContext, Invocation, Tool, ToolEnvironment, ToolResult,
    WorkspaceRoots,
};
use toolbelt_engine::{registry::Origin, registry::ToolRegistry};
use toolbelt_engine::{
    scheduler::Scheduler, scheduler::SchedulerConfig, scheduler::ToolCallRequest,
    scheduler::TurnInfo,
};

use super::*;
use crate::shell::RunShellCommand;

struct Fixture {
    dir: tempfile::TempDir,
    env: Arc<ToolEnvironment>,
    support: Option<SandboxSupport>,
}

fn fixture(settings: Value) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    std::fs::create_dir(dir.path().join("outside")).unwrap();
    let roots = WorkspaceRoots::new([dir.path().join("ws")]).unwrap();
    let settings = Settings::from_value(settings).unwrap();
    let env = ToolEnvironment::new(roots, Arc::new(settings), dir.path().join("session"));
    Fixture {
        dir,
        env: Arc::new(env),
        support: None,
    }
}

impl Fixture {
    fn without_landlock(mut self) -> Self {
        self.support = Some(SandboxSupport::unavailable("simulated: no Landlock here"));
        self
    }
    fn tool(&self) -> RunShellCommand {
        let tool = RunShellCommand::new(self.env.clone());
        match &self.support {
            Some(s) => tool.with_sandbox_support(s.clone()),
            None => tool,
        }
    }
    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }
    fn outside(&self, name: &str) -> PathBuf {
        self.dir
            .path()
            .join("outside")
            .canonicalize()
            .unwrap()
            .join(name)
    }
    fn build(&self, command: &str) -> Box<dyn Invocation> {
        self.tool().build(json!({ "command": command })).unwrap()
    }
    async fn unasked(&self, command: &str) -> ToolResult {
        let ctx = ExecContext::new(self.env.clone());
        self.build(command).execute(ctx).await
    }
    async fn approved(&self, command: &str) -> ToolResult {
        let ctx = ExecContext::new(self.env.clone()).approved();
        self.build(command).execute(ctx).await
    }
}

fn exit_code(r: &ToolResult) -> String {
    let text = r.llm_text();
    text.lines()
        .find_map(|l| l.strip_prefix("Exit Code: "))
        .unwrap_or("(missing)")
        .to_string()
}

/// A loopback listener that accepts without blocking, to ask afterwards whether anything
/// connected (a connection is queued by the kernel before the command's `connect`
/// returns, so after the command ended there is nothing to wait for).
fn listener() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

fn connected(l: &TcpListener) -> bool {
    match l.accept() {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
        Err(e) => panic!("accept: {e}"),
    }
}

#[tokio::test]
async fn an_unasked_command_cannot_write_and_is_told_so() {
    let f = fixture(json!({}));
    let target = f.outside("x");
    let r = f.unasked(&format!("touch {}", target.display())).await;
    assert!(!target.exists());
    assert_ne!(exit_code(&r), "0");
    let text = r.llm_text();
    assert!(
        text.contains(&format!("It tried to write {}", target.display())),
        "{text}"
    );
    assert!(text.contains("approve it to run it unconfined"), "{text}");

    // Nothing is writable, the workspace included; removing, renaming, linking and
    // truncating are writes too. Reading, pipes and /dev/null still work.
    let keep = f.outside("keep");
    std::fs::write(&keep, "keep").unwrap();
    let ws_file = f.ws().join("f");
    std::fs::write(&ws_file, "ws").unwrap();
    let o = |n: &str| f.outside(n).display().to_string();
    let command = format!(
        "echo new > {ws}; : > {keep}; rm -f {keep}; mv {keep} {moved}; ln -s {keep} {link}; mkdir {dir}; \
         mkfifo {fifo}; echo gone > /dev/null; cat {keep} | wc -c",
        ws = ws_file.display(),
        keep = keep.display(),
        moved = o("moved"),
        link = o("link"),
        dir = o("d"),
        fifo = o("fifo"),
    );
    let r = f.unasked(&command).await;
    let text = r.llm_text();
    assert_eq!(std::fs::read_to_string(&keep).unwrap(), "keep", "{text}");
    assert_eq!(std::fs::read_to_string(&ws_file).unwrap(), "ws", "{text}");
    for name in ["moved", "link", "d", "fifo"] {
        assert!(
            f.outside(name).symlink_metadata().is_err(),
            "{name}: {text}"
        );
    }
    assert!(text.contains("4\nError: (none)"), "{text}");
}

#[tokio::test]
async fn an_unasked_command_cannot_change_modes_owners_or_times() {
    let f = fixture(json!({}));
    let file = f.outside("meta");
    std::fs::write(&file, "m").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::metadata(&file).unwrap();
    let p = file.display();
    let r = f
        .unasked(&format!(
            "chmod 600 {p}; chmod 600 {ws}; chown 12345:12345 {p}; touch -d 2001-01-01 {p}; touch -m {p}",
            ws = f.ws().display()
        ))
        .await;
    let after = std::fs::metadata(&file).unwrap();
    let text = r.llm_text();
    assert_eq!(after.mode(), before.mode(), "{text}");
    assert_eq!(
        (after.uid(), after.gid()),
        (before.uid(), before.gid()),
        "{text}"
    );
    assert_eq!(after.mtime_nsec(), before.mtime_nsec(), "{text}");
    assert_eq!(after.mtime(), before.mtime(), "{text}");
    let ws_mode = std::fs::metadata(f.ws()).unwrap().mode();
    assert_ne!(ws_mode & 0o777, 0o600, "{text}");
    assert!(text.contains("Operation not permitted"), "{text}");
}

#[tokio::test]
async fn an_unasked_command_reaches_no_tcp_listener() {
    let f = fixture(json!({}));
    let (l, port) = listener();
    let r = f
        .unasked(&format!(
            "echo hi > /dev/tcp/127.0.0.1/{port}; exec 3<>/dev/tcp/localhost/{port}; echo done"
        ))
        .await;
    assert!(!connected(&l), "{}", r.llm_text());
    assert!(r.llm_text().contains("done"), "{}", r.llm_text());
    // The same command approved does connect: the listener is reachable.
    f.approved(&format!("echo hi > /dev/tcp/127.0.0.1/{port}"))
        .await;
    assert!(connected(&l));
}

#[tokio::test]
async fn an_unasked_command_cannot_signal_toolbelt() {
    let f = fixture(json!({}));
    let me = std::process::id();
    let r = f.unasked(&format!("kill -0 {me}")).await;
    let text = r.llm_text();
    assert_eq!(exit_code(&r), "1", "{text}");
    // In a PID namespace of its own toolbelt has no PID it could name; where the kernel
    // grants none, Landlock's scoping refuses the signal.
    let refusal = if toolbelt_process::isolate::support().sealed.is_ok() {
        "No such process"
    } else {
        "Operation not permitted"
    };
    assert!(text.contains(refusal), "{text}");
    // An approved command is in the PID namespace approved commands share, where
    // toolbelt has no PID either; the control is a plain child of toolbelt's.
    let r = f.approved(&format!("kill -0 {me}")).await;
    let expected = if toolbelt_process::isolate::support().processes.is_ok() {
        "1"
    } else {
        "0"
    };
    assert_eq!(exit_code(&r), expected, "{}", r.llm_text());
    let control = std::process::Command::new("sh")
        .args(["-c", &format!("kill -0 {me}")])
        .status()
        .unwrap();
    assert!(control.success(), "control");
}

/// `tools.shell.processNamespace: false` keeps approved commands out of the shared
/// namespace (they reach toolbelt again); unasked ones keep their own.
#[tokio::test]
async fn approved_commands_leave_the_namespace_only_when_the_setting_says_so() {
    let f = fixture(json!({"tools": {"shell": {"processNamespace": false}}}));
    let me = std::process::id();
    let r = f.approved(&format!("kill -0 {me}")).await;
    assert_eq!(exit_code(&r), "0", "{}", r.llm_text());
    if toolbelt_process::isolate::support().sealed.is_ok() {
        let r = f.unasked(&format!("kill -0 {me}")).await;
        assert_eq!(exit_code(&r), "1", "{}", r.llm_text());
    }
}

#[tokio::test]
async fn an_unasked_command_keeps_no_machine_wide_powers() {
    // Tests may run as root: capabilities are not paths, so seccomp refuses them. The
    // clock is set to what it already is, so a regression changes nothing on the host.
    let f = fixture(json!({}));
    let r = f
        .unasked(
            "/usr/bin/python3 -c 'import time; time.clock_settime(time.CLOCK_REALTIME, time.time())' 2>&1 | tail -1; \
             unshare -U true || echo unshare-refused",
        )
        .await;
    let text = r.llm_text();
    assert!(text.contains("PermissionError"), "{text}");
    assert!(text.contains("unshare-refused"), "{text}");
}

#[tokio::test]
async fn an_approved_command_is_unconfined() {
    let f = fixture(json!({}));
    let target = f.outside("x");
    let p = target.display();
    let r = f.approved(&format!("touch {p} && chmod 600 {p}")).await;
    assert_eq!(exit_code(&r), "0", "{}", r.llm_text());
    let mode = std::fs::metadata(&target).unwrap().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[tokio::test]
async fn git_run_unasked_runs_no_hooks_or_monitor() {
    let f = fixture(json!({}));
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(f.ws())
        .status()
        .unwrap();
    assert!(init.success());
    let r = f
        .unasked(
            "git config --get core.hooksPath; git config --get core.fsmonitor; git status --short",
        )
        .await;
    let text = r.llm_text();
    assert!(text.contains("/dev/null\nfalse"), "{text}");
    // Approved commands run git as configured.
    let r = f.approved("git config --get core.hooksPath").await;
    assert!(!r.llm_text().contains("/dev/null"), "{}", r.llm_text());
}

#[tokio::test]
async fn without_landlock_read_only_commands_ask() {
    let f = fixture(json!({})).without_landlock();
    let call = f.build("ls -la && cat x | wc -l");
    match call.confirmation().await {
        Some(ConfirmationDetails::Exec {
            title,
            root_commands,
            ..
        }) => {
            assert!(title.contains("cannot confine"), "{title}");
            assert!(title.contains("simulated: no Landlock here"), "{title}");
            assert!(title.contains("allowUnsandboxed"), "{title}");
            assert_eq!(root_commands, ["ls", "cat", "wc"]);
        }
        other => panic!("{other:?}"),
    }
    // Run anyway without approval (a context built outside the scheduler): refused.
    let target = f.outside("x");
    let r = f.unasked(&format!("touch {}", target.display())).await;
    let e = r.error.as_ref().unwrap();
    assert_eq!(e.kind, ErrorKind::ExecutionDenied);
    assert!(e.message.contains("simulated: no Landlock here"), "{e}");
    assert!(!target.exists());

    // Headless, the refusal says why.
    let mut registry = ToolRegistry::new();
    registry.register(Arc::new(f.tool()), Origin::BuiltIn);
    let scheduler = Scheduler::new(
        f.env.clone(),
        SchedulerConfig::new(CallRules::new(
            Permissions::new(&toolbelt_engine::rules::RuleVocabulary::default()),
            ApprovalMode::Default,
            None,
            None,
        )),
    );
    let request = ToolCallRequest::new("1", "run_shell_command", &json!({"command": "ls"}));
    let out = scheduler
        .run(
            &registry,
            vec![request],
            TurnInfo::default(),
            &CancellationToken::new(),
        )
        .await;
    let text = out[0].result.llm_text();
    assert!(text.contains("cannot confine"), "{text}");
}

#[tokio::test]
async fn allow_unsandboxed_restores_unconfined_auto_approval() {
    let f = fixture(json!({"tools": {"shell": {"allowUnsandboxed": true}}})).without_landlock();
    assert!(f.build("ls -la").confirmation().await.is_none());
    let target = f.outside("x");
    let r = f.unasked(&format!("touch {}", target.display())).await;
    assert_eq!(exit_code(&r), "0", "{}", r.llm_text());
    assert!(target.exists());
}

#[tokio::test]
async fn the_workspace_sandbox_refuses_metadata_and_network_outside() {
    let f = fixture(json!({"tools": {"sandbox": "landlock"}}));
    let file = f.outside("meta");
    std::fs::write(&file, "m").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    // A directory's times can only be set by path (touch cannot open it for writing).
    let dir = f.outside("dir");
    std::fs::create_dir(&dir).unwrap();
    let before = std::fs::metadata(&file).unwrap();
    let dir_before = std::fs::metadata(&dir).unwrap();
    let (l, port) = listener();
    let new = f.ws().join("new");
    let p = file.display();
    let r = f
        .approved(&format!(
            "chmod 600 {p}; chown 12345 {p}; touch -d 2001-01-01 {d}; echo x > /dev/tcp/127.0.0.1/{port}; \
             touch {new} && echo created",
            d = dir.display(),
            new = new.display()
        ))
        .await;
    let text = r.llm_text();
    let after = std::fs::metadata(&file).unwrap();
    assert_eq!(after.mode(), before.mode(), "{text}");
    assert_eq!(after.uid(), before.uid(), "{text}");
    let dir_after = std::fs::metadata(&dir).unwrap();
    assert_eq!(dir_after.mtime(), dir_before.mtime(), "{text}");
    assert!(!connected(&l), "{text}");
    // Creating a file in the workspace (touch sets its times through the descriptor).
    assert!(new.exists() && text.contains("created"), "{text}");
}

#[test]
fn git_entries_follow_the_inherited_ones() {
    let env = git_inert_env(Some("2"));
    assert_eq!(env[0], ("GIT_CONFIG_COUNT".into(), "4".into()));
    assert_eq!(env[1], ("GIT_CONFIG_KEY_2".into(), "core.hooksPath".into()));
    assert_eq!(env[4], ("GIT_CONFIG_VALUE_3".into(), "false".into()));
    let fresh = git_inert_env(Some("bogus"));
    assert_eq!(fresh[0].1, "2");
    assert_eq!(fresh[1].0, "GIT_CONFIG_KEY_0");
    assert_eq!(git_inert_env(None), fresh);
}

#[test]
fn this_machine_can_confine() {
    // The kernel these tests run on must confine, or every test above proves nothing.
    let support = SandboxSupport::detect();
    assert!(support.can_confine().is_ok(), "{support:?}");
    assert!(support.landlock_abi().unwrap() >= 6, "{support:?}");
}

/// Whether unasked commands can be confined is asked only where the answer changes the
/// question (issue 49: the probe costs a thread and a seccomp compilation): a line that
/// writes a file, or has no read-only part, asks the same with or without Landlock; a
/// line with a read-only part names it only where it could not run unasked.
#[tokio::test]
async fn confinement_changes_the_question_only_where_a_part_could_go_unasked() {
    async fn roots(f: &Fixture, command: &str) -> (String, Vec<String>) {
        match f.build(command).confirmation().await {
            Some(ConfirmationDetails::Exec {
                title,
                root_commands,
                ..
            }) => (title, root_commands),
            other => panic!("{command}: {other:?}"),
        }
    }
    let with = fixture(json!({}));
    let without = fixture(json!({})).without_landlock();
    for command in [
        "wc -l a b > counts.txt",
        "rm x && mv a b",
        "ls > out.txt && rm y",
    ] {
        assert_eq!(
            roots(&with, command).await,
            roots(&without, command).await,
            "{command}"
        );
    }
    if SandboxSupport::detect().can_confine().is_ok() {
        assert_eq!(roots(&with, "ls && rm x").await.1, ["rm"]);
    }
    assert_eq!(roots(&without, "ls && rm x").await.1, ["ls", "rm"]);
}
