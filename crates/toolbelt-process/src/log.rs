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

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes one command's log holds at most: 256 MiB, several times what a long build or
/// test run prints.
pub const LOG_CAP: u64 = 256 << 20;

/// Bytes all the command logs of one session hold at most: 2 GiB.
pub const SESSION_LOG_BUDGET: u64 = 2 << 30;

/// What the logs of one session may still write, shared by all of them.
#[derive(Debug)]
pub struct LogBudget(AtomicU64);

impl LogBudget {
    /// A budget of `bytes`.
    pub fn new(bytes: u64) -> Arc<LogBudget> {
        Arc::new(LogBudget(AtomicU64::new(bytes)))
    }

    /// Takes up to `wanted` bytes; answers how many were granted.
    fn take(&self, wanted: u64) -> u64 {
        let mut granted = 0;
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                granted = wanted.min(left);
                Some(left - granted)
            });
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

#[cfg(test)]
mod tests {
    use super::*;

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
