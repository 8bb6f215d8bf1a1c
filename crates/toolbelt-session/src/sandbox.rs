//! What this machine's kernel enforces on a session's shell commands, proved from
//! inside (`toolbelt sandbox [--verify] [-- CMD...]` prints it).
//!
//! The report says which Landlock ABI and seccomp the kernel has and what that means
//! for the commands the classifier lets run unasked (confined read-only, or asking when
//! nothing can confine them) and for approved ones (`tools.sandbox`). `--verify` runs
//! probes through the shell tool exactly as an unasked command runs (same spawn path,
//! same sandbox): a write outside the workspace, a `chmod`, a TCP connection to a
//! loopback listener opened here, and a signal to this process. Each must be refused
//! inside and succeed on the host (the control, so a refusal for another reason does not
//! count as a pass). `-- CMD...` runs one command confined read-only and shows its
//! result.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use toolbelt_config::settings::Sandbox;
use toolbelt_core::{ExecContext, Tool, ToolEnvironment, ToolResult};
use toolbelt_tools::{RunShellCommand, SandboxSupport};

mod reach;

/// Says one line of a report.
macro_rules! say {
    ($out:expr, $($arg:tt)*) => {
        $out(format!($($arg)*))
    };
}

/// Where a report's lines go, one at a time.
pub type Lines<'a> = &'a mut dyn FnMut(String);

/// What the kernel has (Landlock ABI, seccomp) and what it means for unasked and
/// approved shell commands in the session of `env`.
pub fn report(env: &ToolEnvironment, support: &SandboxSupport, out: Lines<'_>) {
    let settings = &env.settings.tools;
    match support.landlock_abi() {
        Ok(abi) => {
            say!(out, "Landlock: ABI {abi}");
            say!(
                out,
                "  files: every write right handled (ABI 1-5 rights the kernel has); reading and executing \
                 handled, allowed everywhere but the hidden paths (terminals, toolbelt's store, credentials, \
                 Read deny rules)"
            );
            say!(
                out,
                "  network: {}",
                if abi >= 4 {
                    "TCP bind and connect refused (ABI 4)"
                } else {
                    "not confined by Landlock (ABI 4 needed); seccomp refuses sockets"
                }
            );
            say!(
                out,
                "  scoping: {}",
                if abi >= 6 {
                    "signals and abstract UNIX sockets stay inside the sandbox (ABI 6)"
                } else {
                    "none (ABI 6 needed): a confined command may signal other processes"
                }
            );
        }
        Err(why) => say!(out, "Landlock: unavailable ({why})"),
    }
    report_seccomp(support, out);
    report_isolation(settings.shell.process_namespace, out);
    let unasked = match support.can_confine() {
        Ok(()) => {
            let l = &settings.shell.limits;
            format!(
                "run confined read-only: nothing writable but /dev/null, /dev/zero and /dev/full; nothing \
                 readable in terminals, toolbelt's store, the known credential files or what a Read deny rule \
                 names; no network; no signal out; git without hooks or fsmonitor; at most {} MiB of address \
                 space, {} s of CPU, {} MiB files and {} more tasks (tools.shell.limits; the task count is not \
                 enforced for root)",
                l.address_space_mb, l.cpu_seconds, l.file_size_mb, l.processes
            )
        }
        Err(_) if settings.shell.allow_unsandboxed => {
            "run UNCONFINED (tools.shell.allowUnsandboxed is true and nothing can confine them)"
                .to_string()
        }
        Err(why) => format!(
            "ask first ({why}); headless they are refused. tools.shell.allowUnsandboxed: true runs them unconfined"
        ),
    };
    say!(
        out,
        "Shell commands judged read-only (run without asking): {unasked}"
    );
    let approved = if settings.sandbox == Sandbox::Landlock {
        "confined to the workspace (tools.sandbox: \"landlock\"): workspace and temporary directory \
         writable, no TCP, no mode/owner/xattr changes"
    } else {
        "unconfined (what approval grants; tools.sandbox: \"landlock\" confines them to the workspace)"
    };
    say!(out, "Approved shell commands: {approved}");
    let roots: Vec<String> = env
        .roots
        .roots()
        .iter()
        .map(|r| r.display().to_string())
        .collect();
    say!(out, "Workspace: {}", roots.join(", "));
}

/// What seccomp refuses, or why it cannot.
fn report_seccomp(support: &SandboxSupport, out: Lines<'_>) {
    match support.seccomp() {
        Ok(()) => say!(
            out,
            "seccomp: available; refused with EPERM: mode, owner, times and extended attributes, sockets \
             (read-only: all; workspace: all but AF_UNIX), ptrace, mounts, keys, bpf, io_uring, perf, \
             clock, host name, modules, reboot, namespaces (unshare, setns, clone with CLONE_NEW*; clone3 \
             answers ENOSYS), terminal ioctls (TIOCSTI, TIOCLINUX, TIOCSPGRP, TIOCSCTTY, TIOCCONS), \
             limits, priority and scheduling of another process, flock (read-only)"
        ),
        Err(why) => say!(out, "seccomp: unavailable ({why})"),
    }
}

/// The process layers of every child (`toolbelt_process::isolate`): what holds
/// everywhere, and which namespaces this machine grants, naming any that is missing.
fn report_isolation(approved_namespace: bool, out: Lines<'_>) {
    say!(
        out,
        "Every command: a session of its own (no controlling terminal) and no descriptor but 0-2"
    );
    let support = toolbelt_process::isolate::support();
    match &support.sealed {
        Ok(()) => say!(
            out,
            "Namespaces: unasked commands get a PID and mount namespace of their own (their own /proc, \
             everything they leave ended with them) and share one network namespace with no interface up"
        ),
        Err(why) => match &support.processes {
            Ok(()) => say!(
                out,
                "Namespaces: unasked commands get a PID and mount namespace of their own but share the \
                 network namespace, which the sandbox still confines (MISSING: {why})"
            ),
            Err(_) => say!(
                out,
                "Namespaces: MISSING ({why}); unasked commands see the machine's processes, and what they \
                 leave is ended by toolbelt's owner marker and guardian, not by the kernel"
            ),
        },
    }
    let through_user = if rustix::process::geteuid().is_root() {
        ""
    } else {
        "; made through a user namespace, so set-uid programs such as sudo run without their privilege"
    };
    match &support.processes {
        Ok(()) if !approved_namespace => say!(
            out,
            "Approved commands: no PID namespace (tools.shell.processNamespace is false); what they \
             leave is ended by the owner marker and guardian"
        ),
        Ok(()) => say!(
            out,
            "Approved commands: one PID namespace shared by all of them, with its own /proc (no \
             toolbelt or other process to see or signal; the kernel ends all of it when toolbelt \
             ends{through_user})"
        ),
        Err(why) => say!(
            out,
            "Approved commands: no PID namespace (MISSING: {why}); what they leave is ended by the \
             owner marker and guardian"
        ),
    }
}

/// The shell tool as the session has it, with a context of an unasked call.
async fn run_unasked(env: &Arc<ToolEnvironment>, command: &str) -> ToolResult {
    run_as(env, command, false).await
}

/// The shell tool as the session has it, the call approved when `approved`.
async fn run_as(env: &Arc<ToolEnvironment>, command: &str, approved: bool) -> ToolResult {
    let tool = RunShellCommand::new(env.clone());
    let mut ctx = ExecContext::new(env.clone());
    if approved {
        ctx = ctx.approved();
    }
    match tool.build(json!({ "command": command })) {
        Ok(call) => call.execute(ctx).await,
        Err(e) => ToolResult::error(e),
    }
}

/// Runs `command` (one shell line, or a program and its arguments) confined read-only,
/// as an unasked command runs; says its result and returns its exit code.
pub async fn run_confined(
    env: &Arc<ToolEnvironment>,
    command: &[String],
    out: Lines<'_>,
) -> Option<i32> {
    let line = if command.len() == 1 {
        command[0].clone()
    } else {
        command
            .iter()
            .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let result = run_unasked(env, &line).await;
    // The person ran it: the note speaks to them, not to a model.
    say!(out, "{}", toolbelt_core::for_person(&result.llm_text()));
    exit_code(&result)
}

fn exit_code(result: &ToolResult) -> Option<i32> {
    result
        .llm_text()
        .lines()
        .find_map(|l| l.strip_prefix("Exit Code: "))
        .and_then(|c| c.trim().parse().ok())
}

/// One probe: `command` must succeed on the host and be refused confined; `effect`
/// says, from the world and the command's exit code, whether it took effect. When the
/// host control fails and `unsupported` says why that may be (a program or a kernel
/// feature missing here), the check is skipped instead of failed.
struct Check<'a> {
    name: &'a str,
    command: String,
    effect: Box<dyn Fn(Option<i32>) -> bool + 'a>,
    undo: Box<dyn Fn() + 'a>,
    unsupported: Option<&'a str>,
}

impl<'a> Check<'a> {
    /// A probe that took effect when it exited 0.
    fn exits_zero(name: &'a str, command: String, unsupported: Option<&'a str>) -> Check<'a> {
        Check {
            name,
            command,
            effect: Box::new(|code| code == Some(0)),
            undo: Box::new(|| {}),
            unsupported,
        }
    }
}

/// The probes of `--verify`, a line each: whether every one was refused inside and
/// succeeded on the host.
pub async fn verify(env: &Arc<ToolEnvironment>, out: Lines<'_>) -> bool {
    let scratch = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            say!(out, "FAIL  cannot make a scratch directory: {e}");
            return false;
        }
    };
    let listener = TcpListener::bind("127.0.0.1:0").and_then(|l| {
        l.set_nonblocking(true)?;
        Ok(l)
    });
    let (listener, port) = match listener.and_then(|l| Ok((l.local_addr()?.port(), l))) {
        Ok((port, l)) => (l, port),
        Err(e) => {
            say!(out, "FAIL  cannot open a loopback listener: {e}");
            return false;
        }
    };
    let mode_file = scratch.path().join("mode");
    if let Err(e) = std::fs::write(&mode_file, "m")
        .and_then(|()| std::fs::set_permissions(&mode_file, std::fs::Permissions::from_mode(0o644)))
        .and_then(|()| std::fs::write(scratch.path().join("lock"), "l"))
    {
        say!(out, "FAIL  cannot make a probe file: {e}");
        return false;
    }
    let terminal = match reach::Terminal::open() {
        Ok(t) => t,
        Err(e) => {
            say!(out, "FAIL  cannot open a pseudo-terminal: {e}");
            return false;
        }
    };
    let store_probe = reach::StoreProbe::new(env);
    let mut checks = write_checks(scratch.path(), &listener, port);
    checks.extend(reach::checks(env, scratch.path(), &terminal, &store_probe));
    let mut all = true;
    for check in &checks {
        all &= run_check(env, check, out, false).await;
    }
    all & verify_approved(env, out).await
}

/// Approved commands, where they share the PID namespace: toolbelt is out of reach.
async fn verify_approved(env: &Arc<ToolEnvironment>, out: Lines<'_>) -> bool {
    if !env.settings.tools.shell.process_namespace {
        say!(
            out,
            "skip  approved commands: tools.shell.processNamespace is false"
        );
        return true;
    }
    if let Err(why) = &toolbelt_process::isolate::support().processes {
        say!(out, "skip  approved commands: no PID namespace ({why})");
        return true;
    }
    let me = std::process::id();
    let checks = [
        Check::exits_zero(
            "approved: signal to toolbelt",
            format!("kill -0 {me}"),
            None,
        ),
        Check::exits_zero(
            "approved: change toolbelt's limits (prlimit)",
            format!("prlimit --pid {me} --core=0:0 --core"),
            Some("util-linux's prlimit missing"),
        ),
    ];
    let mut all = true;
    for check in &checks {
        all &= run_check(env, check, out, true).await;
    }
    all
}

/// The probes of writing, metadata, the network and signals.
fn write_checks<'a>(scratch: &Path, listener: &'a TcpListener, port: u16) -> Vec<Check<'a>> {
    let outside = scratch.join("written");
    let mode_file = scratch.join("mode");
    let mode_of = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or(0)
    };
    let (o1, o2, m1, m2) = (
        outside.clone(),
        outside.clone(),
        mode_file.clone(),
        mode_file.clone(),
    );
    vec![
        Check {
            name: "write outside the workspace",
            command: format!("echo x > '{}'", outside.display()),
            effect: Box::new(move |_| o1.exists()),
            undo: Box::new(move || {
                let _ = std::fs::remove_file(&o2);
            }),
            unsupported: None,
        },
        Check {
            name: "chmod of a file the user owns",
            command: format!("chmod 600 '{}'", mode_file.display()),
            effect: Box::new(move |_| mode_of(&m1) == 0o600),
            undo: Box::new(move || {
                let _ = std::fs::set_permissions(&m2, std::fs::Permissions::from_mode(0o644));
            }),
            unsupported: None,
        },
        Check {
            name: "TCP connect to a loopback listener",
            command: format!("echo x > /dev/tcp/127.0.0.1/{port}"),
            effect: Box::new(move |_| listener.accept().is_ok()),
            undo: Box::new(|| {}),
            unsupported: None,
        },
        // Signal 0 checks the permission to signal and delivers nothing.
        Check::exits_zero(
            "signal to toolbelt",
            format!("kill -0 {}", std::process::id()),
            None,
        ),
    ]
}

/// Runs one check: the host control, then the probe, confined as an unasked command
/// or (`approved`) as an approved one.
async fn run_check(
    env: &Arc<ToolEnvironment>,
    check: &Check<'_>,
    out: Lines<'_>,
    approved: bool,
) -> bool {
    let host = tokio::process::Command::new("bash")
        .arg("-c")
        .arg(&check.command)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .await;
    let code = host.ok().and_then(|s| s.code());
    let control = code == Some(0) && (check.effect)(code);
    (check.undo)();
    if !control {
        if let Some(why) = check.unsupported {
            say!(
                out,
                "skip  {}: the control on the host did not succeed ({why})",
                check.name
            );
            return true;
        }
        say!(
            out,
            "FAIL  {}: the control on the host did not succeed, so the check proves nothing",
            check.name
        );
        return false;
    }
    let result = run_as(env, &check.command, approved).await;
    let code = exit_code(&result);
    let got_through = (check.effect)(code);
    (check.undo)();
    if let Some(e) = &result.error {
        say!(
            out,
            "FAIL  {}: the confined command did not run: {}",
            check.name,
            e.message
        );
        return false;
    }
    if got_through {
        say!(out, "FAIL  {}: allowed inside the sandbox", check.name);
        false
    } else {
        let code = code.map_or("?".to_string(), |c| c.to_string());
        say!(
            out,
            "pass  {}: refused inside the sandbox (exit code {code})",
            check.name
        );
        true
    }
}
