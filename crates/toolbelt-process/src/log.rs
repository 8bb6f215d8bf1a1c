//! The most a child's log file holds.
//!
//! A foreground command's output spills to a log once it no longer fits in memory, a
//! background job's output goes to a log as it comes, and an MCP server's standard error
//! is appended to a log of its own. Each would otherwise grow for as long as the process
//! prints (`yes` fills a disk within minutes), whoever asked for it, and a command that
//! runs unasked (a read-only `yes`) could do it without anyone's approval. So a log
//! takes at most its own cap, and, where the caller gives one, what is left of a budget
//! shared with the other logs of the session ([`LogBudget`]). What comes after is
//! counted, not written, and a last line says how much was left out.
//!
//! The logs of commands that ran unasked also share a smaller budget of their own
//! ([`UNASKED_LOG_BUDGET`], through [`LogBudget::within`]): nobody chose to spend disk on
//! them.
//!
//! A background job kept past toolbelt's exit cannot be capped by a thread of toolbelt's:
//! once toolbelt is gone nothing would read the pipe. Its output goes through a small
//! writer process of its own instead ([`spawn_log_writer`]), which stays as long as the
//! job writes. Limiting the job's file size (`RLIMIT_FSIZE`) was the other way, and the
//! worse one: the kernel kills the job (`SIGXFSZ`) at its first write past the cap, and
//! the limit holds for every file the job writes, not only its log.

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes one command's log holds at most: 256 MiB, several times what a long build or
/// test run prints.
pub const LOG_CAP: u64 = 256 << 20;

/// Bytes all the command logs of one session hold at most: 2 GiB.
pub const SESSION_LOG_BUDGET: u64 = 2 << 30;

/// Bytes the logs of a session's unasked commands hold together at most: 512 MiB (they
/// count against [`SESSION_LOG_BUDGET`] too).
pub const UNASKED_LOG_BUDGET: u64 = 512 << 20;

/// What the logs of one session may still write, shared by all of them.
#[derive(Debug)]
pub struct LogBudget {
    left: AtomicU64,
    /// A budget this one is part of: what is taken here is taken there too.
    within: Option<Arc<LogBudget>>,
}

impl LogBudget {
    /// A budget of `bytes`.
    pub fn new(bytes: u64) -> Arc<LogBudget> {
        Arc::new(LogBudget {
            left: AtomicU64::new(bytes),
            within: None,
        })
    }

    /// A budget of `bytes` that is part of `outer`: a write takes from both.
    pub fn within(outer: &Arc<LogBudget>, bytes: u64) -> Arc<LogBudget> {
        Arc::new(LogBudget {
            left: AtomicU64::new(bytes),
            within: Some(outer.clone()),
        })
    }

    /// Takes up to `wanted` bytes; answers how many were granted.
    pub fn take(&self, wanted: u64) -> u64 {
        let mut granted = 0;
        let _ = self
            .left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                granted = wanted.min(left);
                Some(left - granted)
            });
        if let Some(outer) = &self.within {
            let also = outer.take(granted);
            // What the outer budget refused is given back here.
            self.left.fetch_add(granted - also, Ordering::Relaxed);
            granted = also;
        }
        granted
    }
}

/// A log that takes at most `cap` bytes (and what its budget grants), then counts what
/// it leaves out.
pub struct CappedLog<W: Write> {
    inner: W,
    cap: u64,
    budget: Option<Arc<LogBudget>>,
    written: u64,
    left_out: u64,
}

impl<W: Write> CappedLog<W> {
    /// A log over `inner` of at most `cap` bytes, within `budget` when there is one.
    pub fn new(inner: W, cap: u64, budget: Option<Arc<LogBudget>>) -> Self {
        CappedLog {
            inner,
            cap,
            budget,
            written: 0,
            left_out: 0,
        }
    }

    /// Writes what still fits of `chunk`.
    pub fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        let room = self.cap.saturating_sub(self.written);
        let wanted = room.min(chunk.len() as u64);
        let granted = match &self.budget {
            Some(budget) => budget.take(wanted),
            None => wanted,
        };
        let n = usize::try_from(granted).unwrap_or(chunk.len());
        self.inner.write_all(&chunk[..n])?;
        self.written += granted;
        self.left_out += (chunk.len() - n) as u64;
        Ok(())
    }

    /// Bytes that did not fit.
    pub fn left_out(&self) -> u64 {
        self.left_out
    }

    /// Ends the log: the note when something was left out, then a flush.
    pub fn finish(mut self) -> io::Result<()> {
        if self.left_out > 0 {
            write!(
                self.inner,
                "\n[toolbelt: this log stops after its first {} bytes; the {} bytes of output after them were not saved]\n",
                self.written, self.left_out
            )?;
        }
        self.inner.flush()
    }
}

/// Copies a child's output from `pipe` into `log` (a [`CappedLog`]) on a thread of its
/// own, until every process holding the pipe's write end has closed it. Each chunk is
/// written as it comes, so a read of the log sees the output so far; a log that cannot
/// be written (a full disk) still drains the pipe, so the child never blocks on it. The
/// receiver completes when the copy is done.
pub fn copy_to_log(
    mut pipe: io::PipeReader,
    mut log: CappedLog<std::fs::File>,
) -> io::Result<tokio::sync::oneshot::Receiver<()>> {
    let (done, copied) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("toolbelt-log".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            let mut writable = true;
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if writable && log.write(&buf[..n]).is_err() {
                            writable = false;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            if writable {
                let _ = log.finish();
            }
            let _ = done.send(());
        })
        .map(|_| copied)
}

/// Logs to remove when toolbelt ends (unasked commands' logs: nobody asked for them to
/// stay).
static REMOVE_AT_EXIT: std::sync::Mutex<Vec<std::path::PathBuf>> =
    std::sync::Mutex::new(Vec::new());

/// Removes the log at `path` when toolbelt ends ([`remove_logs_at_exit`]).
pub fn remove_at_exit(path: &std::path::Path) {
    if let Ok(mut paths) = REMOVE_AT_EXIT.lock() {
        paths.push(path.to_path_buf());
    }
}

/// Removes the logs given to [`remove_at_exit`]: every ending of the binary calls it,
/// after it ended what could still write them.
pub fn remove_logs_at_exit() {
    let paths = REMOVE_AT_EXIT
        .lock()
        .map(|mut p| std::mem::take(&mut *p))
        .unwrap_or_default();
    for path in paths {
        let _ = std::fs::remove_file(path);
    }
}

/// The writer of a kept job's log: at most `$1` bytes of its input, then the rest read
/// and counted (so the job never blocks or dies of a closed pipe), then the note.
/// `head` may read a little past the cap in one gulp, hence "at least".
const LOG_WRITER: &str = "head -c \"$1\"; rest=$(wc -c); \
    if [ \"$rest\" -gt 0 ]; then printf '\\n[toolbelt: this log stops after its first %s bytes; at least %s bytes of output after them were not saved]\\n' \"$1\" \"$rest\"; fi";

/// Starts the writer of a kept job's log: a process that copies what is written to the
/// returned pipe into `file`, at most `cap` bytes, for as long as anything holds the
/// pipe open, with or without toolbelt. It carries `owner`'s marker (it is kept, or
/// ended, with the job); spawn it before the job, whose shell must be the owner's
/// leader. A caller that drops the child leaves its reaping to tokio.
pub fn spawn_log_writer(
    file: std::fs::File,
    cap: u64,
    owner: &crate::Owner,
) -> io::Result<(io::PipeWriter, tokio::process::Child)> {
    let (reader, writer) = io::pipe()?;
    let mut command = crate::GroupCommand::new("/bin/sh", owner);
    command
        .args(["-c", LOG_WRITER, "toolbelt-log", &cap.to_string()])
        .stdin(reader)
        .stdout(file)
        .stderr(std::process::Stdio::null());
    let child = command.spawn(false)?;
    Ok((writer, child))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_within_another_takes_from_both_and_gives_back_what_the_outer_refused() {
        let outer = LogBudget::new(100);
        let inner = LogBudget::within(&outer, 60);
        assert_eq!(inner.take(50), 50);
        assert_eq!(outer.take(30), 30, "20 left outside");
        assert_eq!(inner.take(50), 10, "its own 10");
        let other = LogBudget::within(&outer, 60);
        assert_eq!(other.take(60), 10, "the outer's last 10");
        assert_eq!(outer.take(1), 0);
        assert_eq!(
            other.left.load(Ordering::Relaxed),
            50,
            "the refused part given back"
        );
    }

    #[tokio::test]
    async fn a_writer_caps_a_log_and_drains_the_rest_without_its_starter() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.log");
        let owner = crate::Owner::new();
        let (mut pipe, mut writer) =
            spawn_log_writer(std::fs::File::create(&path).unwrap(), 1000, &owner).unwrap();
        // More than a pipe holds: the writer must drain it for this to finish.
        for _ in 0..20 {
            pipe.write_all(&[b'x'; 10_000]).unwrap();
        }
        drop(pipe);
        assert!(
            writer.wait().await.unwrap().success(),
            "it ends at end-of-file"
        );
        let log = std::fs::read_to_string(&path).unwrap();
        let (kept, note) = log.split_at(1000);
        assert_eq!(kept, "x".repeat(1000));
        assert!(
            note.starts_with("\n[toolbelt: this log stops after its first 1000 bytes; at least "),
            "{note}"
        );
    }

    #[test]
    fn a_log_keeps_its_first_bytes_and_says_how_many_it_left_out() {
        let mut out = Vec::new();
        let mut log = CappedLog::new(&mut out, 10, None);
        for chunk in [&b"0123456"[..], b"789abcdef", b"ghij"] {
            log.write(chunk).unwrap();
        }
        assert_eq!(log.left_out(), 10);
        log.finish().unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "0123456789\n[toolbelt: this log stops after its first 10 bytes; \
             the 10 bytes of output after them were not saved]\n"
        );
    }

    #[test]
    fn a_log_within_its_cap_is_the_output_exactly() {
        let mut out = Vec::new();
        let mut log = CappedLog::new(&mut out, 10, Some(LogBudget::new(10)));
        log.write(b"0123456789").unwrap();
        assert_eq!(log.left_out(), 0);
        log.finish().unwrap();
        assert_eq!(out, b"0123456789");
    }

    #[test]
    fn logs_sharing_a_budget_stop_when_it_is_spent_whatever_their_own_caps() {
        let budget = LogBudget::new(15);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let mut first = CappedLog::new(&mut a, 10, Some(budget.clone()));
        first.write(b"0123456789abc").unwrap();
        first.finish().unwrap();
        let mut second = CappedLog::new(&mut b, 10, Some(budget.clone()));
        second.write(b"0123456789").unwrap();
        assert_eq!(second.left_out(), 5);
        second.finish().unwrap();
        assert!(a.starts_with(
            b"0123456789\n[toolbelt: this log stops after its first 10 bytes; the 3 bytes"
        ));
        assert_eq!(
            String::from_utf8(b).unwrap(),
            "01234\n[toolbelt: this log stops after its first 5 bytes; \
             the 5 bytes of output after them were not saved]\n"
        );
        // Spent: a third log takes nothing.
        let mut c = Vec::new();
        let mut third = CappedLog::new(&mut c, 10, Some(budget));
        third.write(b"x").unwrap();
        assert_eq!(third.left_out(), 1);
    }
}
