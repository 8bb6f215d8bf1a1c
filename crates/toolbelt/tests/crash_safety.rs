#![allow(clippy::too_many_lines)]
//! A `write_file` killed with SIGKILL in the middle of writing leaves the old content
//! or the new one, never a mix: the real binary, a real kill.
//!
//! Synchronisation is on the file system, not on time: the test watches the child and
//! kills it the moment its temporary file exists (on some runs only once it is partly
//! written), so the kill lands between the start of the write and the rename. Where the
//! file system has `O_TMPFILE` the temporary file has no name while it is written; the
//! test finds it among the child's open files (`/proc/<pid>/fd`, "... (deleted)") and
//! then also checks that the kill left nothing behind in the directory.

// A test crate: a panic in a helper is a test failure, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};

/// Prefix of the temporary file `write_file` writes next to `big.txt`.
const TEMP_PREFIX: &str = ".big.txt.toolbelt-";

/// The child's temporary file, if it has one: its size and whether it is unnamed.
fn temp_file(pid: u32, dir: &Path) -> Option<(u64, bool)> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    for fd in fds.flatten() {
        let Ok(target) = std::fs::read_link(fd.path()) else {
            continue;
        };
        let target = target.to_string_lossy().into_owned();
        if target.starts_with(&*dir.to_string_lossy()) && target.ends_with(" (deleted)") {
            let size = std::fs::metadata(fd.path()).map(|m| m.len()).unwrap_or(0);
            return Some((size, true));
        }
    }
    let named = std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        e.file_name()
            .to_string_lossy()
            .starts_with(TEMP_PREFIX)
            .then(|| e.metadata().map(|m| m.len()).unwrap_or(0))
    });
    named.map(|size| (size, false))
}

fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(TEMP_PREFIX))
        .collect()
}

fn remove_temp_files(dir: &Path) {
    for name in temp_files(dir) {
        std::fs::remove_file(dir.join(name)).unwrap();
    }
}

#[test]
fn sigkill_during_write_file_leaves_old_or_new_content() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let target = ws.join("big.txt");
    let old: String = (0..50_000).map(|i| format!("old line {i}\n")).collect();
    let new: String = (0..400_000).map(|i| format!("new line {i}\n")).collect();
    let args_path = dir.path().join("args.json");
    let args = serde_json::json!({"file_path": target, "content": new});
    std::fs::write(&args_path, serde_json::to_vec(&args).unwrap()).unwrap();

    let mut killed_mid_write = 0;
    let mut killed_partly_written = 0;
    let mut killed_unnamed = 0;
    let mut finished = 0;
    let started = std::time::Instant::now();
    for attempt in 0..40 {
        if killed_mid_write >= 4 && killed_partly_written >= 1 {
            break;
        }
        std::fs::write(&target, &old).unwrap();
        remove_temp_files(&ws);
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .args(["tools", "call", "write_file", "-", "--yes"])
            .current_dir(&ws)
            .env("TOOLBELT_HOME", dir.path().join("home"))
            .stdin(File::open(&args_path).unwrap())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Odd attempts wait until the temporary file has some bytes, even ones kill as
        // soon as it exists.
        let want_bytes = attempt % 2 == 1;
        let mut seen = None;
        loop {
            if let Some((size, unnamed)) = temp_file(child.id(), &ws)
                && (!want_bytes || size > 0)
            {
                child.kill().unwrap();
                seen = Some((size, unnamed));
                break;
            }
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::yield_now();
        }
        let status = child.wait().unwrap();
        eprintln!(
            "attempt {attempt}: seen {seen:?} status {status} at {:?}",
            started.elapsed()
        );
        let content = std::fs::read(&target).unwrap();
        assert!(
            content == old.as_bytes() || content == new.as_bytes(),
            "attempt {attempt}: the file is neither the old nor the new content ({} bytes; old {}, new {})",
            content.len(),
            old.len(),
            new.len()
        );
        match seen {
            Some((size, unnamed)) if !status.success() => {
                if unnamed {
                    // The data had no name: the kill freed it and left nothing.
                    assert_eq!(temp_files(&ws), Vec::<String>::new(), "attempt {attempt}");
                    killed_unnamed += 1;
                }
                killed_mid_write += 1;
                if size > 0 && size < new.len() as u64 {
                    killed_partly_written += 1;
                }
            }
            _ => finished += 1,
        }
    }
    assert!(
        killed_mid_write >= 4,
        "only {killed_mid_write} kills landed during the write ({finished} runs finished first)"
    );
    assert!(
        killed_partly_written >= 1,
        "no kill landed while the temporary file was partly written"
    );
    eprintln!("{killed_unnamed} kills landed while the temporary file had no name");
    // After all that, a normal write still works and replaces the content.
    std::fs::write(&target, &old).unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(["tools", "call", "write_file", "-", "--yes"])
        .current_dir(&ws)
        .env("TOOLBELT_HOME", dir.path().join("home"))
        .stdin(File::open(&args_path).unwrap())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(std::fs::read(&target).unwrap(), new.as_bytes());
}
