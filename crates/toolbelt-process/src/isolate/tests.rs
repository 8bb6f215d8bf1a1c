//! The isolation of every child, with real processes: each test runs `sh` through
//! [`GroupCommand`] and asserts what the kernel let it do.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::process::{Output, Stdio};

use super::*;
use crate::{GroupCommand, Owner, procfs};

fn run(script: &str, isolation: Isolation) -> Output {
    let owner = Owner::new();
    let mut command = GroupCommand::new("sh", &owner);
    command
        .args(["-c", script])
        .isolation(isolation)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn_std().unwrap();
    child.wait_with_output().unwrap()
}

/// Field 6 of `/proc/<pid>/stat`, the session.
fn session_of(pid: u32) -> u32 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &text[text.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(3).unwrap().parse().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Whether the machine grants a layer; where it does not, the test says so and is
/// skipped, except under CI as root, where the kernel always grants it (a skip there
/// would hide a regression).
fn granted(layer: &Result<(), IsolationRefused>) -> bool {
    match layer {
        Ok(()) => true,
        Err(why) => {
            let ci_root = std::env::var_os("CI").is_some() && rustix::process::geteuid().is_root();
            assert!(!ci_root, "CI runs as root, where {why:?} must not happen");
            eprintln!("skipped: {why}");
            false
        }
    }
}

const ALL: [Isolation; 3] = [
    Isolation::SessionOnly,
    Isolation::Processes,
    Isolation::Sealed,
];

#[test]
fn every_child_leads_a_new_session_without_a_terminal() {
    for isolation in ALL {
        let owner = Owner::new();
        let mut command = GroupCommand::new("sh", &owner);
        command
            .args([
                "-c",
                "if (: <>/dev/tty) 2>/dev/null; then echo opened; else echo refused; fi",
            ])
            .isolation(isolation)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let child = command.spawn_std().unwrap();
        let pid = child.id();
        // The leader (the command, or the relay in front of its namespace) leads its
        // own session and group: nothing it does reaches toolbelt's terminal.
        let stat = procfs::stat(pid).unwrap();
        assert_eq!((stat.pgid, session_of(pid)), (pid, pid), "{isolation:?}");
        let out = child.wait_with_output().unwrap();
        assert_eq!(stdout(&out), "refused", "{isolation:?}");
    }
}

#[test]
fn a_descriptor_toolbelt_inherited_is_not_passed_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inherited");
    let file = std::fs::File::create(&path).unwrap();
    // `dup` gives a descriptor without close-on-exec, as a parent's leftover would be.
    let inherited = rustix::io::dup(&file).unwrap();
    let fd = inherited.as_raw_fd();
    for isolation in ALL {
        let out = run(&format!("echo leaked >&{fd} && echo wrote"), isolation);
        assert_ne!(stdout(&out), "wrote", "{isolation:?}");
    }
    let mut written = String::new();
    std::fs::File::open(&path)
        .unwrap()
        .read_to_string(&mut written)
        .unwrap();
    assert_eq!(written, "");
}

#[test]
fn exit_codes_and_signals_come_through_the_relay() {
    for isolation in ALL {
        assert_eq!(run("exit 3", isolation).status.code(), Some(3));
        // A signal from outside the namespace (here the shell's own `kill` of an
        // un-namespaced command; for the namespaced ones a kill from this process).
        if isolation == Isolation::SessionOnly {
            let killed = run("kill -TERM $$", isolation).status;
            assert_eq!(killed.signal(), Some(libc::SIGTERM));
        }
    }
}

/// The PID namespace where this machine grants it (CI runs as root, where it always
/// does); elsewhere the test says what it could not check.
#[test]
fn a_command_sees_and_signals_only_its_own_namespace() {
    if !granted(&support().processes) {
        return;
    }
    let me = std::process::id();
    let script = format!(
        "tr '\\0' ' ' < /proc/1/cmdline; echo; test -e /proc/{me} && echo sees-parent; \
         kill -0 {me} 2>/dev/null && echo signals-parent; ls /proc | grep -c '^[0-9]'"
    );
    let out = run(&script, Isolation::Processes);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0].trim(), "cat", "PID 1 is the holder: {lines:?}");
    assert!(!lines.contains(&"sees-parent"), "{lines:?}");
    assert!(!lines.contains(&"signals-parent"), "{lines:?}");
    // The holder, this command and the commands of tests running beside it: nothing of
    // the machine's other processes.
    let count: u32 = lines[1].trim().parse().unwrap();
    assert!(count <= 40, "{count} processes visible");
}

/// Where toolbelt is privileged an approved command starts from the thread that joined
/// the shared namespace (`isolate/spawner.rs`): toolbelt's own child, forked once, with
/// no relay between, in the holder's namespace, in toolbelt's working directory; and the
/// holder is started there, without a relay either.
#[test]
fn an_approved_command_of_a_privileged_toolbelt_is_forked_once_into_the_namespace() {
    if !granted(&support().processes) || !rustix::process::geteuid().is_root() {
        return;
    }
    let owner = Owner::new();
    let mut command = GroupCommand::new("sh", &owner);
    command
        .args(["-c", "pwd; read -r _ || true"])
        .isolation(Isolation::Processes)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = command.spawn_std().unwrap();
    let pid = child.id();
    let stat = procfs::stat(pid).unwrap();
    assert_eq!(stat.ppid, std::process::id(), "a relay stands between");
    assert_eq!(stat.pgid, pid, "it leads its own group");
    let ns = |p: &str| std::fs::read_link(format!("/proc/{p}/ns/pid")).unwrap();
    assert_ne!(
        ns(&pid.to_string()),
        ns("self"),
        "not in the shared namespace"
    );
    // The holder too: `cat` forked once from that thread, PID 1 and toolbelt's child.
    let [relay, init] = shared::holder_pids().expect("a holder runs");
    assert_eq!(relay, init, "the holder has a relay");
    assert_eq!(procfs::stat(init).unwrap().ppid, std::process::id());
    assert_eq!(
        ns(&pid.to_string()),
        ns(&init.to_string()),
        "not the holder's namespace"
    );
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        std::env::current_dir().unwrap().display().to_string()
    );
}

#[test]
fn approved_commands_share_one_namespace_and_see_each_other() {
    if !granted(&support().processes) {
        return;
    }
    let token = format!("tb-shared-{}", std::process::id());
    let first = run(
        &format!("(setsid bash -c 'exec -a {token} sleep 1000' >/dev/null 2>&1 & echo $!)"),
        Isolation::Processes,
    );
    let inner: u32 = stdout(&first).parse().unwrap();
    // What a later command was told (`$!`) names the same process for it.
    let host = host_pid(inner).expect("the daemon is in the shared namespace");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    // It is that process (once its `exec`s are done).
    while !std::fs::read(format!("/proc/{host}/cmdline"))
        .unwrap()
        .starts_with(token.as_bytes())
    {
        assert!(std::time::Instant::now() < deadline, "not the daemon");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let second = run(
        &format!("kill {inner} && echo killed"),
        Isolation::Processes,
    );
    assert_eq!(stdout(&second), "killed");
    while procfs::stat(host).is_some_and(|p| p.is_alive()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the daemon outlived its kill"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn a_daemon_a_sealed_command_leaves_dies_with_it() {
    if !granted(&support().sealed) {
        return;
    }
    let token = format!("tb-daemon-{}", std::process::id());
    // Double-forked, in a session of its own, renamed: nothing a marker scan relies on.
    // It waits until the daemon runs (the pattern does not match the `grep` itself).
    let (head, last) = token.split_at(token.len() - 1);
    let script = format!(
        "(setsid bash -c 'exec -a {token} sleep 1000' >/dev/null 2>&1 &); \
         until grep -l '{head}[{last}]' /proc/[0-9]*/cmdline >/dev/null 2>&1; do :; done; echo started"
    );
    let out = run(&script, Isolation::Sealed);
    assert_eq!(stdout(&out), "started");
    // The command is the namespace's init: when it exits the kernel ends the namespace
    // before it can be reaped, so no process of that name is left on the machine.
    let left = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| c.starts_with(token.as_bytes()))
        .count();
    assert_eq!(left, 0);
}

#[test]
fn a_sealed_command_has_no_network() {
    if !granted(&support().sealed) {
        return;
    }
    let out = run(
        "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '",
        Isolation::Sealed,
    );
    assert_eq!(stdout(&out), "lo");
    let unsealed = run(
        "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '",
        Isolation::Processes,
    );
    assert_ne!(stdout(&unsealed), "", "control");
}

/// Unasked commands join one network namespace made once (none is made per command),
/// not toolbelt's, while each keeps a PID namespace of its own.
#[test]
fn sealed_commands_share_one_offline_network_namespace_not_their_processes() {
    if !granted(&support().sealed) {
        return;
    }
    let ids = "readlink /proc/self/ns/net /proc/self/ns/pid";
    let first = stdout(&run(ids, Isolation::Sealed));
    let second = stdout(&run(ids, Isolation::Sealed));
    let (net1, pid1) = first.split_once('\n').unwrap();
    let (net2, pid2) = second.split_once('\n').unwrap();
    assert_eq!(
        net1, net2,
        "one network namespace for every unasked command"
    );
    assert_ne!(pid1, pid2, "a PID namespace per command");
    let ours = std::fs::read_link("/proc/self/ns/net").unwrap();
    assert_ne!(net1, ours.to_string_lossy(), "not toolbelt's network");
}

#[test]
fn terminating_the_group_ends_the_command_through_its_namespace() {
    let owner = Owner::new();
    let mut command = GroupCommand::new("sh", &owner);
    command
        .args(["-c", "echo up; exec sleep 1000"])
        .stdout(Stdio::piped());
    let mut child = command.spawn_std().unwrap();
    let mut first = [0u8; 3];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    crate::signal_group(child.id(), rustix::process::Signal::TERM);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM));
}

#[test]
fn no_copy_of_toolbelt_is_inside_the_namespace() {
    if !granted(&support().sealed) {
        return;
    }
    // A process forked from toolbelt without `exec` would hold its environment and
    // memory (the model's key), readable through `/proc/N/environ` and `mem` (root may
    // read them even from a process that is not dumpable). Every process of the
    // namespace must be the command's: none shows this test binary's command line.
    let exe = std::env::current_exe().unwrap();
    let name = exe.file_name().unwrap().to_string_lossy().to_string();
    let out = run(
        "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done",
        Isolation::Sealed,
    );
    let text = stdout(&out);
    assert!(text.contains("sh -c"), "{text}");
    assert!(!text.contains(&name), "a copy of {name} is inside: {text}");
}

/// The shared namespace's holder (`cat` with an empty environment) is toolbelt's own: no
/// sweep for a call's leftovers reads its environment (each read of an empty one waits
/// out `procfs::environ`'s 50 ms window: the end of the session's first command paid it).
#[test]
fn a_sweep_for_leftovers_never_reads_the_holders_environment() {
    if !granted(&support().processes) {
        return;
    }
    let out = run("true", Isolation::Processes);
    assert!(out.status.success());
    let holder = holder_pids().expect("an approved command started the holder");
    let owner = Owner::born_before_everything();
    let _ = owner.processes();
    let read = procfs::ENVIRON_READ
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    assert!(
        !read.iter().any(|pid| holder.contains(pid)),
        "the holder {holder:?} was read: {read:?}"
    );
}

/// An approved command asks only for its own layer: the sealed set's probe (a user and
/// network namespace made and torn down) is not paid by a process whose commands are all
/// approved. Run in a child process (this test binary, one test), whose probes start
/// unasked.
#[test]
fn an_approved_command_probes_only_its_own_layer() {
    if std::env::var_os("ISOLATE_PROBE_CHILD").is_some() {
        let out = run("echo ran", Isolation::Processes);
        assert_eq!(stdout(&out), "ran");
        assert!(
            PROCESSES_GRANTED.get().is_some(),
            "its own layer was probed"
        );
        assert!(
            SEALED_GRANTED.get().is_none(),
            "the sealed set was probed too"
        );
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "isolate::tests::an_approved_command_probes_only_its_own_layer",
            "--exact",
            "--nocapture",
        ])
        .env("ISOLATE_PROBE_CHILD", "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the child failed:\n{text}");
    assert!(text.contains("1 passed"), "the child ran no test:\n{text}");
}
