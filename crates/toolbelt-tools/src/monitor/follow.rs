//! Following a monitor's output: its job writes to a log file (the shell's background
//! machinery); this task reads the file as it grows, cuts it into lines and hands each
//! to the [`MonitorTable`], and ends the job when a limit is reached.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use super::table::{MAX_LINE_CHARS, MonitorTable};
use crate::shell::background::JobStatus;

/// How often a quiet log is looked at again.
const POLL: Duration = Duration::from_millis(50);
/// Output after which a monitor is ended, whatever its limits: the log is on disk.
pub(super) const MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Bytes of one line kept (a line longer than this is cut).
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4;

/// When a monitor ends on its own.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// Lines (delivered or dropped) after which it is ended.
    pub max_events: u64,
    /// Quiet time after which it is ended.
    pub idle: Duration,
}

/// Follows job `id`'s log until the job ends or a limit ends it, then records the end.
pub(super) async fn follow(
    table: Arc<MonitorTable>,
    id: String,
    log: std::path::PathBuf,
    limits: Limits,
) {
    let why = match read_lines(&table, &id, &log, limits).await {
        Ok(why) => why,
        Err(e) => {
            stop(&table, &id).await;
            format!("its output could not be read ({e}), so it was ended")
        }
    };
    table.ended(&id, &why);
}

async fn stop(table: &MonitorTable, id: &str) {
    if let Some(jobs) = table.jobs() {
        jobs.stop(id).await;
    }
}

fn status(table: &MonitorTable, id: &str) -> JobStatus {
    table
        .jobs()
        .and_then(|jobs| jobs.get(id))
        .map_or(JobStatus::Stopped, |job| job.status)
}

fn ended_by(status: JobStatus) -> String {
    match status {
        JobStatus::Exited {
            code: Some(code), ..
        } => format!("the command exited with code {code}"),
        JobStatus::Exited {
            signal: Some(signal),
            ..
        } => format!("the command was ended by signal {signal}"),
        JobStatus::Exited { .. } => "the command ended".to_string(),
        JobStatus::Stopped | JobStatus::Running => {
            "stopped (task_stop or the end of the session)".to_string()
        }
    }
}

/// Reads the log to its end and past it while the job runs; returns why it stopped.
async fn read_lines(
    table: &MonitorTable,
    id: &str,
    log: &Path,
    limits: Limits,
) -> std::io::Result<String> {
    let mut file = tokio::fs::File::open(log).await?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = LineSplitter::default();
    let mut last_output = Instant::now();
    let mut bytes: u64 = 0;
    let mut finished: Option<JobStatus> = None;
    loop {
        let n = file.read(&mut buf).await?;
        if n > 0 {
            last_output = Instant::now();
            bytes += n as u64;
            for line in lines.push(&buf[..n]) {
                if table.line(id, &line, Instant::now()) >= limits.max_events {
                    stop(table, id).await;
                    return Ok(format!("it reached max_events ({})", limits.max_events));
                }
            }
            if bytes > MAX_BYTES {
                stop(table, id).await;
                return Ok(format!("it printed more than {MAX_BYTES} bytes"));
            }
            continue;
        }
        if let Some(done) = finished {
            if let Some(line) = lines.rest() {
                table.line(id, &line, Instant::now());
            }
            return Ok(ended_by(done));
        }
        let now = status(table, id);
        if now != JobStatus::Running {
            // Read once more: what it wrote before it ended is still to come.
            finished = Some(now);
            continue;
        }
        if last_output.elapsed() >= limits.idle {
            stop(table, id).await;
            return Ok(format!(
                "no output for {} ms (idle_timeout_ms)",
                limits.idle.as_millis()
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Cuts bytes into lines, keeping at most [`MAX_LINE_BYTES`] of one.
#[derive(Default)]
struct LineSplitter {
    current: Vec<u8>,
    cut: bool,
}

impl LineSplitter {
    fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        for piece in bytes.split_inclusive(|b| *b == b'\n') {
            let (body, complete) = match piece.strip_suffix(b"\n") {
                Some(body) => (body, true),
                None => (piece, false),
            };
            let room = MAX_LINE_BYTES.saturating_sub(self.current.len());
            if body.len() > room {
                self.cut = true;
            }
            self.current
                .extend_from_slice(&body[..body.len().min(room)]);
            if complete {
                out.push(self.finish());
            }
        }
        out
    }

    fn finish(&mut self) -> String {
        let mut line = String::from_utf8_lossy(&self.current)
            .trim_end_matches('\r')
            .to_string();
        if self.cut {
            line.push_str(" [line cut]");
        }
        self.current.clear();
        self.cut = false;
        line
    }

    /// The last line, when the output did not end with a newline.
    fn rest(&mut self) -> Option<String> {
        (!self.current.is_empty()).then(|| self.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_split_across_reads_and_bounded() {
        let mut s = LineSplitter::default();
        assert_eq!(s.push(b"one\ntw"), vec!["one"]);
        assert_eq!(s.push(b"o\r\nthree"), vec!["two"]);
        assert_eq!(s.rest().as_deref(), Some("three"));
        assert_eq!(s.rest(), None);
        let long = vec![b'x'; MAX_LINE_BYTES * 3];
        assert!(s.push(&long).is_empty());
        assert!(s.current.len() <= MAX_LINE_BYTES);
        let line = s.push(b"\n").remove(0);
        assert!(
            line.ends_with(" [line cut]"),
            "{}",
            &line[line.len() - 20..]
        );
        assert_eq!(line.len(), MAX_LINE_BYTES + " [line cut]".len());
    }
}
