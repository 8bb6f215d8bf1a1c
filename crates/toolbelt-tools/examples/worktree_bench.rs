//! The cost of making a worktree (issue 45): `toolbelt_tools::worktree::create` and
//! `populate` (everything `--worktree`, `enter_worktree` and a sub-agent's isolation do
//! before work starts) against `git worktree add -b` alone, on the same repository in
//! the same run, rounds interleaved so both see the same machine.
//!
//! `cargo run --release -p toolbelt-tools --example worktree_bench [files] [rounds]`
//! (default 15,000 files in 150 directories, 20 rounds; `bench/worktree.sh` runs it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use toolbelt_tools::worktree::{self, NameRequest};

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let files: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(15_000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let line = "fn item() -> usize { 42 } // some code-like text to give files a size\n";
    for i in 0..files {
        let d = repo.join(format!("pkg{}/src", i % 150));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(format!("f{i}.rs")), line.repeat(20)).unwrap();
    }
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    let who = [
        "-c",
        "user.name=bench",
        "-c",
        "user.email=bench@example.com",
    ];
    git(
        &repo,
        &[&who[..], &["commit", "-q", "-m", "files"]].concat(),
    );
    let repo = repo.canonicalize().unwrap();
    let plain_dir = dir.path().join("plain");
    std::fs::create_dir(&plain_dir).unwrap();
    let (mut plain, mut ours) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        // git alone: the same checkout, a new branch, nothing else.
        let path = plain_dir.join(format!("p{round}"));
        let branch = format!("plain-{round}");
        let started = Instant::now();
        git(
            &repo,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &branch,
                path.to_str().unwrap(),
                "main",
            ],
        );
        plain.push(started.elapsed());
        // toolbelt: name checks, the folder, the branch check, the checkout, the
        // exclude line, the hooks path.
        let started = Instant::now();
        let made = worktree::create(&repo, &NameRequest::Named(format!("b{round}"))).unwrap();
        let skipped = worktree::populate::populate(&made, &[]);
        ours.push(started.elapsed());
        assert!(skipped.is_empty(), "{skipped:?}");
        git(
            &repo,
            &["worktree", "remove", "--force", path.to_str().unwrap()],
        );
        git(
            &repo,
            &["worktree", "remove", "--force", made.path.to_str().unwrap()],
        );
    }
    let (p, o) = (median(plain), median(ours));
    println!("{files} files, {rounds} rounds (medians)");
    println!("git worktree add -b        {}", ms(p));
    println!("toolbelt worktree::create  {}", ms(o));
    println!(
        "ratio                      {:.3}",
        o.as_secs_f64() / p.as_secs_f64()
    );
}
