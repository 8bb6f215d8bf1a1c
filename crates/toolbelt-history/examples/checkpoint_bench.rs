#![allow(clippy::unwrap_used, clippy::expect_used, clippy::too_many_lines)]
//! The cost of a checkpoint (issue 34), for BENCHMARKS.md: on a generated workspace of
//! 15,000 files, one checkpoint after one file changed and one after nothing changed,
//! with inotify and with a walk; the store's size after 100 edits of a 1 MiB file; and
//! in the same run Qwen Code's way, a shadow git repository (`git add -A && git
//! commit`) on the same trees, when `git` is installed.
//!
//! Usage: `checkpoint_bench [FILES] [RUNS] [oneshot]` (default 15000 files, 30 runs
//! each). With `oneshot`, only what a one-shot process (`toolbelt tools call`) pays: a
//! fresh history on the project's store, its checkpoints before and after one file
//! changed (the "after" both as a walk and as an edit tool's, which looks only at the
//! file it names), with the project's index file ("new") and without it ("old"),
//! against `git status` on the same tree (a real repository) in the same run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolbelt_config::settings::Settings;
use toolbelt_core::{Kind, WorkspaceRoots};
use toolbelt_engine::{checkpoint::CheckpointCall, checkpoint::Checkpoints};
use toolbelt_history::{History, HistoryConfig, Phase};

/// Text that compresses as source code does (about 3:1 with zstd).
fn text(seed: u64, bytes: usize) -> String {
    let words = [
        "fn", "let", "match", "self", "value", "return", "Some", "None", "impl", "struct", "pub",
        "use", "=>", "{", "}", "(", ")", ";",
    ];
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = String::with_capacity(bytes + 80);
    while out.len() < bytes {
        for _ in 0..10 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.push_str(words[(x % words.len() as u64) as usize]);
            out.push(' ');
        }
        out.push_str(&format!("// {x:x}\n"));
    }
    out
}

fn workspace(root: &Path, files: usize) {
    for i in 0..files {
        // 15 top directories, 10 below each, 100 files in each of those.
        let dir = root.join(format!("pkg{:02}/mod{:02}", i / 1000, (i / 100) % 10));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i:05}.rs")), text(i as u64, 1500)).unwrap();
    }
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
}

fn history(root: &Path, store: PathBuf, watch: bool) -> History {
    History::open(HistoryConfig {
        store_dir: store,
        roots: WorkspaceRoots::new([root]).unwrap(),
        settings: Arc::new(Settings::default()),
        session: "bench".into(),
        size_cap: 10 << 20,
        max_files: 100_000,
        exclude: Vec::new(),
        watch,
        watch_min_files: 0,
        work_dir: Default::default(),
    })
}

fn median(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (ms(v[v.len() / 2]), ms(v[(v.len() * 9) / 10]))
}

fn du(path: &Path) -> u64 {
    let out = Command::new("du").args(["-sk"]).arg(path).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

fn git(git_dir: &Path, root: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg(format!("--git-dir={}", git_dir.display()))
        .arg(format!("--work-tree={}", root.display()))
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.invalid",
            "-c",
            "core.autocrlf=false",
        ])
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// Qwen Code 0.24.4's checkpoint: `git add .` and `git commit --allow-empty` in a
/// shadow repository whose work tree is the project.
fn shadow_commit(git_dir: &Path, root: &Path) -> Duration {
    let t = Instant::now();
    git(git_dir, root, &["add", "-A"]);
    git(
        git_dir,
        root,
        &[
            "commit",
            "-q",
            "--allow-empty",
            "--no-verify",
            "-m",
            "checkpoint",
        ],
    );
    t.elapsed()
}

fn have_git() -> bool {
    Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn bench_checkpoints(files: usize, runs: usize, watch: bool, label: &str) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    workspace(&root, files);
    let h = history(&root, dir.path().join("store"), watch);
    let t = Instant::now();
    h.checkpoint_now(Phase::Before, "bench", "first", None)
        .unwrap();
    println!(
        "{label}: first checkpoint of {files} files: {:.0} ms",
        t.elapsed().as_secs_f64() * 1000.0
    );
    let mut one = Vec::new();
    let mut none = Vec::new();
    for i in 0..runs {
        let f = root.join(format!(
            "pkg{:02}/mod{:02}/f{:05}.rs",
            (i * 7919 % files) / 1000,
            ((i * 7919 % files) / 100) % 10,
            i * 7919 % files
        ));
        let mut body = std::fs::read_to_string(&f).unwrap();
        body.push_str(&format!("// edit {i}\n"));
        std::fs::write(&f, body).unwrap();
        let t = Instant::now();
        h.checkpoint_now(Phase::Before, "bench", "one", None)
            .unwrap();
        one.push(t.elapsed());
        let t = Instant::now();
        h.checkpoint_now(Phase::Before, "bench", "none", None)
            .unwrap();
        none.push(t.elapsed());
    }
    let (m1, p1) = median(one);
    let (m0, p0) = median(none);
    println!("{label}: one file changed: median {m1:.2} ms, p90 {p1:.2} ms");
    println!("{label}: nothing changed:  median {m0:.2} ms, p90 {p0:.2} ms");
    h.flush();
}

fn bench_shadow_git(files: usize, runs: usize) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    workspace(&root, files);
    let git_dir = dir.path().join("shadow.git");
    git(&git_dir, &root, &["init", "-q"]);
    let t = shadow_commit(&git_dir, &root);
    println!(
        "shadow git: first commit of {files} files: {:.0} ms",
        t.as_secs_f64() * 1000.0
    );
    let mut one = Vec::new();
    let mut none = Vec::new();
    for i in 0..runs {
        let n = i * 7919 % files;
        let f = root.join(format!(
            "pkg{:02}/mod{:02}/f{n:05}.rs",
            n / 1000,
            (n / 100) % 10
        ));
        let mut body = std::fs::read_to_string(&f).unwrap();
        body.push_str(&format!("// edit {i}\n"));
        std::fs::write(&f, body).unwrap();
        one.push(shadow_commit(&git_dir, &root));
        none.push(shadow_commit(&git_dir, &root));
    }
    let (m1, p1) = median(one);
    let (m0, p0) = median(none);
    println!("shadow git: one file changed: median {m1:.2} ms, p90 {p1:.2} ms");
    println!("shadow git: nothing changed:  median {m0:.2} ms, p90 {p0:.2} ms");
}

/// 100 edits of a 1 MiB file, a checkpoint (or a shadow commit) after each.
fn bench_size(git_too: bool) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let file = root.join("big.rs");
    let mut lines: Vec<String> = text(7, 1 << 20).lines().map(str::to_string).collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    let store = dir.path().join("store");
    let h = history(&root, store.clone(), true);
    let git_dir = dir.path().join("shadow.git");
    if git_too {
        git(&git_dir, &root, &["init", "-q"]);
    }
    for i in 0..100 {
        let at = (i * 104_729) % lines.len();
        lines[at] = format!("// edited line {i}");
        std::fs::write(&file, lines.join("\n")).unwrap();
        h.checkpoint_now(Phase::Before, "bench", "edit", None)
            .unwrap();
        if git_too {
            shadow_commit(&git_dir, &root);
        }
    }
    h.flush();
    let size = std::fs::metadata(&file).unwrap().len();
    println!(
        "100 edits of a {:.2} MiB file: store {:.2} MiB",
        size as f64 / 1048576.0,
        du(&store) as f64 / 1048576.0
    );
    if git_too {
        println!(
            "100 edits of a {:.2} MiB file: shadow git {:.2} MiB (loose objects, as Qwen Code leaves them)",
            size as f64 / 1048576.0,
            du(&git_dir) as f64 / 1048576.0
        );
    }
}

/// One one-shot call's checkpoints, as a new `tools call` process takes them: the
/// history opened afresh (no inotify, the index seeded from the last checkpoint), the
/// checkpoint before the call, one file changed, the one after it by a walk (a shell
/// command's); then the file changed again and an edit tool's "after", which looks only
/// at the file it names. Returns the three times.
fn oneshot_call(
    root: &Path,
    store: &Path,
    f: &Path,
    tag: &str,
    runtime: &tokio::runtime::Runtime,
) -> [Duration; 3] {
    let t = Instant::now();
    let h = history(root, store.to_path_buf(), false);
    h.checkpoint_now(Phase::Before, "bench", "call", None)
        .unwrap();
    let before = t.elapsed();
    let mut body = std::fs::read_to_string(f).unwrap();
    body.push_str(&format!("// edit {tag}\n"));
    std::fs::write(f, body).unwrap();
    let t = Instant::now();
    h.checkpoint_now(Phase::After, "bench", "call", None)
        .unwrap();
    let after = t.elapsed();
    let call = CheckpointCall {
        call_id: format!("edit-{tag}"),
        tool: "edit".into(),
        kind: Kind::Edit,
        changes_files: true,
        paths: vec![f.to_path_buf()],
        only_paths: true,
    };
    let mut body = std::fs::read_to_string(f).unwrap();
    body.push_str(&format!("// edit {tag} again\n"));
    std::fs::write(f, body).unwrap();
    let t = Instant::now();
    runtime.block_on(h.after_call(&call));
    let named = t.elapsed();
    h.flush();
    [before, after, named]
}

/// What a one-shot process pays (see [`oneshot_call`]), each round twice: "new" as
/// toolbelt is, "old" with the project's index file removed first, so the process seeds
/// from the last checkpoint's tree objects and walks every directory, as before the
/// index file; `git status` runs on the same tree after each round.
fn bench_oneshot(files: usize, runs: usize) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    workspace(&root, files);
    let store = dir.path().join("store");
    let git_dir = root.join(".git");
    let git_too = have_git();
    if git_too {
        git(&git_dir, &root, &["init", "-q"]);
        git(&git_dir, &root, &["add", "-A"]);
        git(&git_dir, &root, &["commit", "-q", "-m", "init"]);
    }
    // The session before: its last checkpoint is what the one-shot processes start from.
    let h = history(&root, store.clone(), false);
    h.checkpoint_now(Phase::Before, "bench", "session", None)
        .unwrap();
    h.flush();
    drop(h);
    let mut times: [Vec<[Duration; 3]>; 2] = [Vec::new(), Vec::new()];
    let mut status = Vec::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for i in 0..runs {
        let n = i * 7919 % files;
        let f = root.join(format!(
            "pkg{:02}/mod{:02}/f{n:05}.rs",
            n / 1000,
            (n / 100) % 10
        ));
        // Alternate which goes first, so neither always follows the other's writes.
        for k in 0..2 {
            let old = (i + k) % 2 == 1;
            if old {
                let _ = std::fs::remove_file(store.join("index"));
            }
            let tag = format!("{i}-{}", if old { "old" } else { "new" });
            times[usize::from(old)].push(oneshot_call(&root, &store, &f, &tag, &runtime));
        }
        if git_too {
            let t = Instant::now();
            let out = Command::new("git")
                .arg(format!("--git-dir={}", git_dir.display()))
                .arg(format!("--work-tree={}", root.display()))
                .args(["status", "--porcelain"])
                .output()
                .unwrap();
            assert!(out.status.success());
            status.push(t.elapsed());
        }
    }
    let what = [
        "checkpoint before the call (fresh process)",
        "checkpoint after it, by a walk (a shell command's)",
        "an edit tool's checkpoint after (the file it names)",
    ];
    for (m, label) in [(0, "new"), (1, "old")] {
        for (j, w) in what.iter().enumerate() {
            let (med, p90) = median(times[m].iter().map(|t| t[j]).collect());
            println!("one-shot, {label}: {w}: median {med:.2} ms, p90 {p90:.2} ms");
        }
    }
    if git_too {
        let (mg, pg) = median(status);
        println!("git status --porcelain, same tree: median {mg:.2} ms, p90 {pg:.2} ms");
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let files: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(15_000);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(30);
    if args.next().as_deref() == Some("oneshot") {
        bench_oneshot(files, runs);
        return;
    }
    bench_checkpoints(files, runs, true, "toolbelt (inotify)");
    bench_checkpoints(files, runs, false, "toolbelt (walk)");
    let git = have_git();
    if git {
        bench_shadow_git(files, runs.min(15));
    } else {
        println!("shadow git: not measured (git is not installed)");
    }
    bench_size(git);
}
