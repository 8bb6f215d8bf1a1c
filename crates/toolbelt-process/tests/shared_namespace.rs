//! The shared PID namespace of approved commands ends, and everything in it with it,
//! when its holder's pipe closes: what happens when toolbelt ends, however it ends.
//! Its own test binary, since it ends the namespace other tests would be using.

#![allow(clippy::unwrap_used)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use toolbelt_process::isolate::{end_shared_namespace, host_pid, support};
use toolbelt_process::{GroupCommand, Isolation, Owner, procfs};

#[test]
fn a_hidden_daemon_ends_with_the_namespace() {
    if let Err(why) = &support().processes {
        let ci_root = std::env::var_os("CI").is_some() && rustix::process::geteuid().is_root();
        assert!(!ci_root, "CI runs as root, where {why:?} must not happen");
        eprintln!("skipped: {why}");
        return;
    }
    let owner = Owner::new();
    let token = format!("tb-hidden-{}", std::process::id());
    // Double-forked, its own session, no environment (so no owner marker), not dumpable
    // (so its environment cannot be read by another user), renamed.
    let script = format!(
        "(env -i setsid python3 -c 'import ctypes,sys,time; ctypes.CDLL(None).prctl(4,0,0,0,0); \
         time.sleep(1000)' {token} >/dev/null 2>&1 & echo $!)"
    );
    let mut command = GroupCommand::new("sh", &owner);
    command
        .args(["-c", &script])
        .isolation(Isolation::Processes)
        .stdout(Stdio::piped());
    let out = command.spawn_std().unwrap().wait_with_output().unwrap();
    let inner: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let host = host_pid(inner).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read(format!("/proc/{host}/cmdline"))
        .unwrap()
        .windows(token.len())
        .any(|w| w == token.as_bytes())
    {
        assert!(Instant::now() < deadline, "the daemon did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    end_shared_namespace();
    while procfs::stat(host).is_some_and(|p| p.is_alive()) {
        assert!(
            Instant::now() < deadline,
            "the daemon outlived its namespace"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
