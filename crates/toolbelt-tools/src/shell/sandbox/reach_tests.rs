//! What an unasked command cannot reach beyond the file system's write side: another
//! terminal, secrets (toolbelt's store, credentials, `Read(...)` deny rules), toolbelt's
//! own limits and priorities, namespaces, locks, and unbounded resources. Each check has
//! its control: the same command approved (unconfined) does reach it.
//!
//! Terminals are ptys these tests open themselves; nothing assumes a `/dev/pts/0`.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use toolbelt_config::settings::Settings;
use toolbelt_core::{ExecContext, Tool, ToolEnvironment, ToolResult, WorkspaceRoots};
use toolbelt_engine::{rules::PermissionRules, rules::RuleList};

use super::*;
use crate::shell::RunShellCommand;

struct World {
    dir: tempfile::TempDir,
    env: Arc<ToolEnvironment>,
}

/// A workspace with a home holding credentials, a toolbelt store holding another
/// project's conversation and this session's own directory, and `deny` rules anchored
/// at the workspace and the home.
fn world(settings: Value, deny: &[&str]) -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let write = |rel: &str, text: &str| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("ws/conf/readme", "PUBLIC-README\n");
    write("ws/conf/deploy.key", "KEY-IN-WORKSPACE\n");
    write("home/.ssh/id_rsa", "PRIVATE-KEY\n");
    write("home/.netrc", "machine x password NETRC-PASSWORD\n");
    write("home/.qwen/oauth_creds.json", "OAUTH-TOKEN\n");
    write("home/notes.txt", "HOME-NOTES\n");
    write("store/sessions/other/chat.jsonl", "OTHER-CONVERSATION\n");
    write("store/tmp/proj/own.log", "OWN-LOG\n");
    write("secret/plan.txt", "DENIED-PLAN\n");
    let ws = root.join("ws");
    let roots = WorkspaceRoots::new([&ws]).unwrap();
    let mut rules =
        PermissionRules::new(&crate::rule_vocabulary()).with_base(&ws, Some(root.join("home")));
    for rule in deny {
        rules.add(
            RuleList::Deny,
            &rule.replace("@ROOT", &root.to_string_lossy()),
        );
    }
    let roots = roots.with_path_policy(rules.path_policy());
    let settings = Settings::from_value(settings).unwrap();
    let mut env = ToolEnvironment::new(roots, Arc::new(settings), root.join("store/tmp/proj"));
    env.user_home = Some(root.join("home"));
    env.toolbelt_home = Some(root.join("store"));
    World {
        dir,
        env: Arc::new(env),
    }
}

impl World {
    fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }
    fn expand(&self, command: &str) -> String {
        command.replace("@ROOT", &self.root().to_string_lossy())
    }
    async fn run(&self, command: &str, approved: bool) -> ToolResult {
        let tool = RunShellCommand::new(self.env.clone());
        let call = tool
            .build(json!({ "command": self.expand(command), "timeout": 30_000 }))
            .unwrap();
        let ctx = ExecContext::new(self.env.clone());
        let ctx = if approved { ctx.approved() } else { ctx };
        call.execute(ctx).await
    }
    /// The result's text without its `Command:` line (which repeats the markers).
    async fn unasked(&self, command: &str) -> String {
        without_command(self.run(command, false).await.llm_text())
    }
    async fn approved(&self, command: &str) -> String {
        without_command(self.run(command, true).await.llm_text())
    }
}

fn without_command(text: String) -> String {
    text.lines()
        .filter(|l| !l.starts_with("Command: "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A new pty: its master, and the path of its terminal.
fn pty() -> (std::fs::File, PathBuf) {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let path = PathBuf::from(name.to_string_lossy().into_owned());
    (std::fs::File::from(master), path)
}

#[tokio::test]
// The lock serialises whole tests, each on a runtime of its own: nothing else on this
// runtime waits for it.
#[allow(clippy::await_holding_lock)]
async fn an_unasked_command_cannot_read_another_terminal() {
    let _terminals = super::TERMINAL_TESTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let w = world(json!({}), &[]);
    let (mut master, tty) = pty();
    let command = format!("head -n1 {}", tty.display());
    // What the person types into that terminal reaches an approved reader...
    master.write_all(b"typed-secret\n").unwrap();
    let text = w.approved(&command).await;
    assert!(text.contains("typed-secret"), "{text}");
    // ...and never an unasked one (the line stays for the terminal's own reader).
    master.write_all(b"typed-again\n").unwrap();
    let text = w.unasked(&command).await;
    assert!(!text.contains("typed-again"), "{text}");
    assert!(text.contains("Permission denied"), "{text}");
}

#[tokio::test]
async fn an_unasked_command_reads_no_secret_but_what_is_not_one() {
    let w = world(json!({}), &["Read(//@ROOT/secret/**)", "Read(*.key)"]);
    let probes = "cat @ROOT/home/.ssh/id_rsa; cat @ROOT/home/.netrc; cat @ROOT/home/.qwen/oauth_creds.json; \
         grep -r CONVERSATION @ROOT/store; cat @ROOT/secret/plan.txt; cat @ROOT/ws/conf/deploy.key; \
         jq -n --rawfile x @ROOT/home/.ssh/id_rsa '$x'; date -f @ROOT/home/.netrc; \
         git diff --no-index /dev/null @ROOT/secret/plan.txt; \
         cat @ROOT/ws/conf/readme @ROOT/home/notes.txt @ROOT/store/tmp/proj/own.log; ls @ROOT/home/.ssh";
    let control = w.approved(probes).await;
    let text = w.unasked(probes).await;
    let secrets = [
        "PRIVATE-KEY",
        "NETRC-PASSWORD",
        "OAUTH-TOKEN",
        "OTHER-CONVERSATION",
        "DENIED-PLAN",
        "KEY-IN-WORKSPACE",
    ];
    for secret in secrets {
        assert!(control.contains(secret), "control: {secret}\n{control}");
        assert!(!text.contains(secret), "{secret} was read:\n{text}");
    }
    // What is not hidden stays readable: the workspace, the home, the session's own
    // directory in the store; and names stay listable.
    for visible in ["PUBLIC-README", "HOME-NOTES", "OWN-LOG", "id_rsa"] {
        assert!(text.contains(visible), "{visible}:\n{text}");
    }
}

#[tokio::test]
async fn a_hidden_path_created_later_is_hidden_too() {
    // The ruleset is kept between calls: a credential that appears after a call must
    // still be hidden from the next one.
    let w = world(json!({}), &[]);
    let aws = w.root().join("home/.aws");
    let first = w.unasked("cat @ROOT/home/notes.txt").await;
    assert!(first.contains("HOME-NOTES"), "{first}");
    std::fs::create_dir_all(&aws).unwrap();
    std::fs::write(aws.join("credentials"), "AWS-SECRET\n").unwrap();
    let text = w.unasked("cat @ROOT/home/.aws/credentials").await;
    assert!(!text.contains("AWS-SECRET"), "{text}");
}

#[tokio::test]
async fn a_credential_behind_a_link_is_hidden_where_it_lives() {
    // Rules are on resolved paths: `~/.gnupg` linking elsewhere hides the target, by
    // either path.
    let w = world(json!({}), &[]);
    let vault = w.root().join("vault");
    std::fs::create_dir(&vault).unwrap();
    std::fs::write(vault.join("key"), "VAULT-SECRET\n").unwrap();
    std::os::unix::fs::symlink(&vault, w.root().join("home/.gnupg")).unwrap();
    let probe = "cat @ROOT/home/.gnupg/key; cat @ROOT/vault/key";
    assert!(w.approved(probe).await.contains("VAULT-SECRET"));
    let text = w.unasked(probe).await;
    assert!(!text.contains("VAULT-SECRET"), "{text}");
}

#[tokio::test]
async fn a_connection_reads_its_own_job_logs_in_the_store_and_no_other() {
    // `mcp serve` keeps each connection's job logs in a folder of its own in the store.
    let w = world(json!({}), &[]);
    let tool = RunShellCommand::new(w.env.clone());
    let mine = tool.jobs().log_dir(&w.env.session_dir, "mcp-1-1").unwrap();
    let theirs = tool.jobs().log_dir(&w.env.session_dir, "mcp-2-1").unwrap();
    std::fs::write(mine.join("1.log"), "MY-JOB-LOG\n").unwrap();
    std::fs::write(theirs.join("1.log"), "THEIR-JOB-LOG\n").unwrap();
    let command = format!("cat {}/1.log {}/1.log", mine.display(), theirs.display());
    let call = tool.build(json!({ "command": command })).unwrap();
    let mut ctx = ExecContext::new(w.env.clone());
    ctx.call_id = "mcp-1-7".to_string();
    let text = without_command(call.execute(ctx).await.llm_text());
    assert!(text.contains("MY-JOB-LOG"), "{text}");
    assert!(!text.contains("THEIR-JOB-LOG"), "{text}");
}

/// Runs `python3 -c script` with the pty's terminal as its controlling terminal and
/// standard input (set up before the sandbox, as an inherited terminal would be),
/// confined read-only or not; returns what it printed.
fn on_a_terminal(script: &str, confined: bool) -> String {
    let _terminals = super::TERMINAL_TESTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (_master, tty) = pty();
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&tty)
        .unwrap();
    let mut cmd = std::process::Command::new("/usr/bin/python3");
    cmd.arg("-c").arg(script).stdin(terminal);
    // Safety: setsid and ioctl in the child before exec, no allocation.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    if confined {
        let sandbox = PreparedSandbox::read_only(
            &SandboxSupport::detect(),
            &Hidden::default(),
            Limits::new(&Default::default()),
        )
        .unwrap();
        sandbox.install(&mut cmd);
    }
    let out = cmd.output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

const TERMINAL_PROBE: &str = r#"
import errno, fcntl, os, struct, termios
def attempt(name, f):
    try:
        f()
        print(name, "ok")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
attempt("open-tty", lambda: os.close(os.open("/dev/tty", os.O_RDONLY)))
attempt("tiocsti", lambda: fcntl.ioctl(0, termios.TIOCSTI, b"Z"))
attempt("tiocspgrp", lambda: fcntl.ioctl(0, termios.TIOCSPGRP, struct.pack("i", os.getpgrp())))
attempt("tiocsctty", lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 1))
"#;

#[test]
fn a_confined_command_cannot_type_into_or_take_its_terminal() {
    let control = on_a_terminal(TERMINAL_PROBE, false);
    // The control: on its own terminal a command may open it, take its foreground and
    // (unless the kernel refuses TIOCSTI to everyone without CAP_SYS_ADMIN) type into it.
    assert!(control.contains("open-tty ok"), "{control}");
    assert!(control.contains("tiocspgrp ok"), "{control}");
    let text = on_a_terminal(TERMINAL_PROBE, true);
    for refused in [
        "open-tty EACCES",
        "tiocsti EPERM",
        "tiocspgrp EPERM",
        "tiocsctty EPERM",
    ] {
        assert!(text.contains(refused), "{refused}:\n{text}");
    }
}

/// The limits of process `pid` as `/proc` shows them.
fn limits_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap()
}

#[tokio::test]
async fn an_unasked_command_cannot_change_toolbelt_limits_priority_or_scheduling() {
    let w = world(json!({}), &[]);
    let me = std::process::id();
    // Each sets what toolbelt already has, so a regression changes nothing here.
    let nofile = limits_of(me)
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            format!("{}:{}", f[3], f[4])
        })
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{me}/stat")).unwrap();
    let nice = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .nth(16)
        .unwrap()
        .to_string();
    let command = format!(
        "prlimit --pid {me} --nofile={nofile} || echo prlimit-refused; \
         renice -n {nice} -p {me} >/dev/null || echo renice-refused; \
         chrt -o -p 0 {me} || echo chrt-refused; \
         taskset -p $(taskset -p {me} | awk '{{print $NF}}') {me} >/dev/null || echo taskset-refused; \
         ionice -c 0 -p {me} || echo ionice-refused; \
         prlimit --nofile=64 true && ulimit -n 64 && echo own-limits-ok"
    );
    let before = limits_of(me);
    // The control is a plain child of toolbelt's: an approved command is in the PID
    // namespace approved commands share, where toolbelt has no PID to name.
    let control = std::process::Command::new("sh")
        .args(["-c", &command])
        .output()
        .unwrap();
    let control = String::from_utf8_lossy(&control.stdout).to_string();
    let approved = w.approved(&command).await;
    let text = w.unasked(&command).await;
    let shared = toolbelt_process::isolate::support().processes.is_ok();
    for name in ["prlimit", "renice", "chrt", "taskset", "ionice"] {
        let refused = format!("{name}-refused");
        assert!(!control.contains(&refused), "control {name}:\n{control}");
        assert!(text.contains(&refused), "{name}:\n{text}");
        assert_eq!(
            approved.contains(&refused),
            shared,
            "approved {name}:\n{approved}"
        );
    }
    // A command still sets its own limits.
    assert!(text.contains("own-limits-ok"), "{text}");
    assert_eq!(limits_of(me), before);
}

const NAMESPACE_PROBE: &str = r#"
import ctypes, os, threading
libc = ctypes.CDLL(None, use_errno=True)
flags = 0x10000000 | 0x04000000 | 17  # CLONE_NEWUSER | CLONE_NEWUTS | SIGCHLD
pid = libc.syscall(@CLONE, ctypes.c_ulong(flags), 0, 0, 0, 0)
if pid == 0:
    os._exit(0)
if pid > 0:
    os.waitpid(pid, 0)
print("clone-newuts", pid > 0, ctypes.get_errno() if pid < 0 else 0)
print("clone3", libc.syscall(435, 0, 0), ctypes.get_errno())
t = threading.Thread(target=print, args=("thread-ok",))
t.start()
t.join()
"#;

#[tokio::test]
async fn an_unasked_command_creates_no_namespace_and_takes_no_lock() {
    let w = world(json!({}), &[]);
    let lock = w.root().join("home/notes.txt");
    let probe = NAMESPACE_PROBE.replace("@CLONE", &libc::SYS_clone.to_string());
    let command = format!(
        "/usr/bin/python3 -c '{probe}'; unshare -U true || echo unshare-user-refused; \
         unshare -n true || echo unshare-net-refused; \
         flock -s -n {lock} echo locked || echo flock-refused",
        lock = lock.display()
    );
    let control = w.approved(&command).await;
    // A normal user makes namespaces only where user namespaces are allowed (some
    // distributions restrict them); root always can.
    if rustix::process::geteuid().is_root() {
        assert!(control.contains("clone-newuts True"), "{control}");
    }
    assert!(control.contains("locked"), "{control}");
    let text = w.unasked(&command).await;
    assert!(text.contains("clone-newuts False 1"), "{text}");
    // ENOSYS, so the C library falls back to clone: threads still start.
    assert!(text.contains("clone3 -1 38"), "{text}");
    assert!(text.contains("thread-ok"), "{text}");
    for refused in [
        "unshare-user-refused",
        "unshare-net-refused",
        "flock-refused",
    ] {
        assert!(text.contains(refused), "{refused}:\n{text}");
    }
}

#[tokio::test]
async fn an_unasked_command_runs_within_its_limits() {
    let w = world(
        json!({"tools": {"shell": {"limits": {"addressSpaceMb": 200, "cpuSeconds": 1, "fileSizeMb": 5, "processes": 64}}}}),
        &[],
    );
    let text = w.unasked("cat /proc/self/limits").await;
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    };
    assert!(
        line("Max address space").contains("209715200 209715200"),
        "{text}"
    );
    assert!(line("Max cpu time").contains("1 2 seconds"), "{text}");
    assert!(line("Max file size").contains("5242880 5242880"), "{text}");
    assert!(!line("Max processes").contains("unlimited"), "{text}");

    // Memory: a line longer than the address space ends with sort's own error.
    let text = w.unasked("head -c 300M /dev/zero | sort > /dev/null").await;
    assert!(text.contains("memory exhausted"), "{text}");
    assert!(text.contains("tools.shell.limits.addressSpaceMb"), "{text}");
    // CPU: a loop is stopped after a second of CPU time, well before the timeout.
    let started = std::time::Instant::now();
    let text = w.unasked("md5sum /dev/zero").await;
    assert!(text.contains("tools.shell.limits.cpuSeconds"), "{text}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{text}"
    );
    // Processes: a fork flood stops at the limit. The kernel never applies it to
    // root, so as root only the limit itself is checked (above).
    if !rustix::process::geteuid().is_root() {
        let text = w
            .unasked("for i in $(seq 1 20000); do sleep 30 & done; echo spawned")
            .await;
        assert!(
            text.contains("Resource temporarily unavailable") || text.contains("fork: retry"),
            "{text}"
        );
    }
}
