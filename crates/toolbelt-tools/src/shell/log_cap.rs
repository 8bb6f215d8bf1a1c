//! The most one command's log file holds.
//!
//! A foreground command's output spills to a log once it no longer fits in memory, and a
//! background job's output goes to a log as it comes. Either would otherwise grow for as
//! long as the command prints (`yes` fills a disk within minutes), whoever asked for it.
//! So a log holds the first [`LOG_CAP`] bytes; what comes after is counted, not written,
//! and a last line says how much was left out. A foreground command's last lines are
//! still in its result (they come from memory, not from the log).
//!
//! A background job's output reaches its log through a pipe that a thread of toolbelt's
//! copies ([`copy_to_log`]). A job kept past toolbelt's exit
//! (`tools.shell.killBackgroundOnExit: false`) writes its log itself, uncapped: once
//! toolbelt is gone nothing would read the pipe, and the job would die of SIGPIPE.

use std::io::{self, Read, Write};

/// Bytes a command's log holds at most: 256 MiB, several times what a long build or test
/// run prints.
pub(crate) const LOG_CAP: u64 = 256 << 20;

/// A log that takes at most `cap` bytes, then counts what it leaves out.
pub(crate) struct CappedLog<W: Write> {
    inner: W,
    cap: u64,
    written: u64,
    left_out: u64,
}

impl<W: Write> CappedLog<W> {
    pub(crate) fn new(inner: W, cap: u64) -> Self {
        CappedLog {
            inner,
            cap,
            written: 0,
            left_out: 0,
        }
    }

    /// Writes what still fits of `chunk`.
    pub(crate) fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        let room = self.cap.saturating_sub(self.written);
        let n = usize::try_from(room).unwrap_or(usize::MAX).min(chunk.len());
        self.inner.write_all(&chunk[..n])?;
        self.written += n as u64;
        self.left_out += (chunk.len() - n) as u64;
        Ok(())
    }

    /// Bytes that did not fit.
    pub(crate) fn left_out(&self) -> u64 {
        self.left_out
    }

    /// Ends the log: the note when something was left out, then a flush.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        if self.left_out > 0 {
            write!(
                self.inner,
                "\n[toolbelt: this log stops after its first {} bytes; the {} bytes of output after them were not saved]\n",
                self.cap, self.left_out
            )?;
        }
        self.inner.flush()
    }
}

/// Copies a job's output from `pipe` into `log` (capped at `cap`) on a thread of its own,
/// until every process holding the pipe's write end has closed it. Each chunk is written
/// as it comes, so a read of the log sees the output so far. The receiver completes when
/// the copy is done (the job's end waits for it, so its log is whole when it reads as
/// ended).
pub(crate) fn copy_to_log(
    mut pipe: io::PipeReader,
    log: std::fs::File,
    cap: u64,
) -> io::Result<tokio::sync::oneshot::Receiver<()>> {
    let (done, copied) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("toolbelt-job-log".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let mut log = CappedLog::new(log, cap);
            let mut buf = vec![0u8; 64 * 1024];
            let mut writable = true;
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        // A log that cannot be written (a full disk) still drains the
                        // pipe, so the job never blocks on it.
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
        let mut log = CappedLog::new(&mut out, 10);
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
        let mut log = CappedLog::new(&mut out, 10);
        log.write(b"0123456789").unwrap();
        assert_eq!(log.left_out(), 0);
        log.finish().unwrap();
        assert_eq!(out, b"0123456789");
    }
}
