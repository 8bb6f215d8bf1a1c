use std::collections::HashSet;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use super::*;

/// A `sleep` in a session of its own (out of our group, as `setsid` leaves it) whose
/// environment carries `marker`.
fn marked_sleep(marker: &str) -> Child {
    use std::os::unix::process::CommandExt;
    Command::new("sleep")
        .arg("300")
        .env(OWNER_VAR, marker)
        .process_group(0)
        .spawn()
        .unwrap()
}

fn alive(child: &Child) -> bool {
    procfs::stat(child.id()).is_some_and(|p| p.is_alive())
}

/// Waits until `/proc` shows the environment the child was given (right after
/// `spawn` it may still show ours, before `exec`).
fn until_marked(child: &Child, marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !procfs::has_env(child.id(), OWNER_VAR, marker) {
        assert!(Instant::now() < deadline, "the marker never showed");
        std::thread::yield_now();
    }
}

fn random_token() -> String {
    let mut bytes = [0u8; 16];
    let mut f = std::fs::File::open("/dev/urandom").unwrap();
    std::io::Read::read_exact(&mut f, &mut bytes).unwrap();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_sweep_ends_its_token_spares_kept_markers_and_other_tokens() {
    let token = random_token();
    let other = random_token();
    let mut ours = marked_sleep(&format!("{token}.1"));
    let mut kept = marked_sleep(&format!("{token}.2"));
    // Not ours: another toolbelt's token, and one that merely starts like ours.
    let mut foreign = marked_sleep(&format!("{other}.1"));
    let mut lookalike = marked_sleep(&format!("{token}x.1"));
    for (child, marker) in [
        (&ours, format!("{token}.1")),
        (&kept, format!("{token}.2")),
        (&foreign, format!("{other}.1")),
        (&lookalike, format!("{token}x.1")),
    ] {
        until_marked(child, &marker);
    }
    let keep: HashSet<String> = [format!("{token}.2")].into();

    // Nothing started before toolbelt is its: a start time in the future spares all.
    assert_eq!(sweep(&token, u64::MAX, &keep, Duration::from_secs(2)), 0);
    assert!(alive(&ours));

    let ended = sweep(&token, 0, &keep, Duration::from_secs(2));
    assert_eq!(ended, 1);
    ours.wait().unwrap();
    for child in [&kept, &foreign, &lookalike] {
        assert!(alive(child), "{} was ended", child.id());
    }
    for child in [&mut kept, &mut foreign, &mut lookalike] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

#[test]
fn a_process_below_a_marked_one_is_ended_even_without_the_marker() {
    let token = random_token();
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    // The child clears its environment: only the tree ties it to the marked shell.
    let mut shell = Command::new("sh")
        .args([
            "-c",
            &format!("env -i sleep 300 & echo $! > {}; wait", pid_file.display()),
        ])
        .env(OWNER_VAR, format!("{token}.7"))
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let pid: u32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .filter(|t| t.ends_with('\n'))
            .and_then(|t| t.trim().parse().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "no pid written");
        std::thread::yield_now();
    };
    until_marked(&shell, &format!("{token}.7"));
    assert!(sweep(&token, 0, &HashSet::new(), Duration::from_secs(2)) >= 2);
    shell.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while procfs::stat(pid).is_some_and(|p| p.is_alive()) {
        assert!(
            Instant::now() < deadline,
            "the unmarked child {pid} survived"
        );
        std::thread::yield_now();
    }
}

#[test]
fn a_guardian_without_a_proper_token_does_nothing() {
    assert_eq!(run(&[]), 2);
    assert_eq!(run(&["".into(), "0".into()]), 2);
    assert_eq!(run(&["not-hex-not-hex-not-hex".into(), "0".into()]), 2);
}

#[test]
fn the_instance_token_is_32_hex_digits_and_in_every_marker() {
    let token = instance_token();
    assert_eq!(token.len(), 32);
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
    let owner = crate::Owner::new();
    assert!(owner.marker().starts_with(&format!("{token}.")));
    // One owner's marker does not name another's: each ends in its own random part.
    let other = crate::Owner::new();
    let last = |m: &str| m.rsplit('.').next().unwrap().to_string();
    assert_eq!(last(owner.marker()).len(), 16);
    assert_ne!(last(owner.marker()), last(other.marker()));
    assert_eq!(owner.marker().split('.').count(), 3);
}
