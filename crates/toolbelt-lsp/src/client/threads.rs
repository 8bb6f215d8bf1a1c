//! The threads of one client: a writer (messages to the server), a reader (its messages:
//! answers, notifications, its own requests), a reader of its stderr's tail and a waiter
//! that reaps the process. Plain threads, so a server that stops reading or writing
//! never blocks the async runtime.

use std::collections::HashSet;
use std::io::{BufReader, Read, Write};
use std::process::Child;
use std::sync::{Arc, mpsc};
use std::time::Instant;

use lsp_server::{Message, Notification, Request, Response};
use serde_json::Value;

use super::{Shared, lock};

/// How much of the server's stderr is kept for error messages.
const STDERR_TAIL: usize = 2048;

/// The work a server reported begun (`$/progress` begin) and not yet ended, whether it
/// ever reported any, whether it said in its own words that its index is ready, and when
/// it last said anything of its own (not an answer).
pub(super) struct Progress {
    pub(super) active: HashSet<String>,
    pub(super) began: bool,
    /// pyright reports no progress while it loads: its log line "Found N source files"
    /// (`window/logMessage`) comes once it has read its settings and listed the project,
    /// before which `workspace/symbol` answers an empty list.
    pub(super) announced_ready: bool,
    pub(super) last_heard: Instant,
}

impl Default for Progress {
    fn default() -> Self {
        Progress {
            active: HashSet::new(),
            began: false,
            announced_ready: false,
            last_heard: Instant::now(),
        }
    }
}

/// Whether a `window/logMessage` text is a server's own word that its project is listed
/// (pyright: "Found 12 source files", "Found 1 source file").
fn says_ready(message: &str) -> bool {
    message
        .strip_prefix("Found ")
        .and_then(|rest| rest.split_once(' '))
        .is_some_and(|(n, rest)| {
            n.bytes().all(|b| b.is_ascii_digit()) && rest.starts_with("source file")
        })
}

pub(super) fn spawn_io(
    name: &str,
    over_socket: bool,
    shared: &Arc<Shared>,
    out: mpsc::Sender<Message>,
    rx: mpsc::Receiver<Message>,
    mut writer: Box<dyn Write + Send>,
    reader: Box<dyn Read + Send>,
) -> std::io::Result<()> {
    let writer_shared = shared.clone();
    std::thread::Builder::new()
        .name(format!("lsp-write-{name}"))
        .spawn(move || {
            for message in rx {
                if let Err(e) = message.write(&mut writer) {
                    writer_shared.die(format!("cannot write to the language server: {e}"));
                    return;
                }
            }
        })?;
    let name = name.to_string();
    let shared = shared.clone();
    std::thread::Builder::new()
        .name(format!("lsp-read-{name}"))
        .spawn(move || read_loop(&name, over_socket, &shared, &out, reader))?;
    Ok(())
}

/// Keeps the tail of the server's stderr.
pub(super) fn spawn_stderr(
    name: &str,
    shared: &Arc<Shared>,
    stderr: Arc<std::fs::File>,
) -> std::io::Result<()> {
    let tail = shared.clone();
    std::thread::Builder::new()
        .name(format!("lsp-err-{name}"))
        .spawn(move || {
            // Wait for output without the lock, then read what is there under it, so the
            // waiter (which drains the rest once the server exited) never races us.
            while readable(&stderr, None) {
                let mut t = lock(&tail.stderr_tail);
                if readable(&stderr, Some(0)) && !read_some(&stderr, &mut t) {
                    return;
                }
            }
        })?;
    Ok(())
}

/// Whether `file` has something to read (or reached its end) within `timeout_ms`
/// (`None`: waits as long as it takes).
fn readable(file: &std::fs::File, timeout_ms: Option<i64>) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let timeout = timeout_ms.map(|ms| Timespec {
        tv_sec: ms / 1000,
        tv_nsec: (ms % 1000) * 1_000_000,
    });
    let mut fds = [PollFd::new(file, PollFlags::IN)];
    loop {
        match poll(&mut fds, timeout.as_ref()) {
            Ok(n) => return n > 0,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return false,
        }
    }
}

/// Reads what is there into the tail; false at the end of the output.
fn read_some(mut file: &std::fs::File, tail: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 1024];
    match file.read(&mut buf) {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            tail.extend_from_slice(&buf[..n]);
            let excess = tail.len().saturating_sub(STDERR_TAIL);
            tail.drain(..excess);
            true
        }
    }
}

/// Reads into `tail` what `file` holds now, without waiting for more.
pub(crate) fn read_available(file: &mut std::fs::File, tail: &mut Vec<u8>) {
    while readable(file, Some(0)) && read_some(file, tail) {}
}

/// Reaps the server. Its pipes are no sign of its end: a child it started may hold them
/// open, so a crash is noticed here, with the error output it wrote before it.
pub(super) fn spawn_waiter(
    name: &str,
    shared: Arc<Shared>,
    mut child: Child,
    stderr: Option<Arc<std::fs::File>>,
) -> std::io::Result<()> {
    let name = name.to_string();
    std::thread::Builder::new()
        .name(format!("lsp-wait-{name}"))
        .spawn(move || {
            let status = child.wait();
            if let Some(stderr) = &stderr {
                let mut t = lock(&shared.stderr_tail);
                while readable(stderr, Some(0)) && read_some(stderr, &mut t) {}
            }
            *lock(&shared.exited) = true;
            let how = match status {
                Ok(s) => s.to_string(),
                Err(e) => e.to_string(),
            };
            shared.die(format!("the language server `{name}` exited ({how})"));
        })?;
    Ok(())
}

fn read_loop(
    name: &str,
    over_socket: bool,
    shared: &Shared,
    out: &mpsc::Sender<Message>,
    reader: Box<dyn Read + Send>,
) {
    let mut reader = crate::framing::Bounded::new(BufReader::new(reader));
    loop {
        match Message::read(&mut reader) {
            Ok(Some(Message::Response(response))) => answer(shared, response),
            Ok(Some(Message::Notification(n))) => {
                lock(&shared.progress).last_heard = Instant::now();
                notification(shared, n);
            }
            Ok(Some(Message::Request(request))) => {
                lock(&shared.progress).last_heard = Instant::now();
                let _ = out.send(server_request(shared, request).into());
            }
            Ok(None) if over_socket => {
                return shared.die(format!(
                    "the language server `{name}` closed the connection"
                ));
            }
            Ok(None) => {
                return shared.die(format!("the language server `{name}` exited"));
            }
            Err(e) => {
                return shared.die(format!(
                    "the language server `{name}` wrote something that is not an LSP message ({e})"
                ));
            }
        }
    }
}

fn answer(shared: &Shared, response: Response) {
    let Ok(id) = response.id.to_string().parse::<i32>() else {
        return;
    };
    let Some(tx) = lock(&shared.pending).remove(&id) else {
        return;
    };
    let reply = match (response.result, response.error) {
        (_, Some(e)) => Err(format!(
            "the server answered with error {}: {}",
            e.code, e.message
        )),
        (result, None) => Ok(result.unwrap_or(Value::Null)),
    };
    let _ = tx.send(reply);
}

fn notification(shared: &Shared, n: Notification) {
    match n.method.as_str() {
        "textDocument/publishDiagnostics" => {
            let Ok(params) =
                serde_json::from_value::<lsp_types::PublishDiagnosticsParams>(n.params)
            else {
                return;
            };
            lock(&shared.diagnostics).insert(params.uri, params.diagnostics);
        }
        "$/progress" => {
            let token = match &n.params["token"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let mut progress = lock(&shared.progress);
            match n.params["value"]["kind"].as_str() {
                Some("begin") => {
                    progress.began = true;
                    progress.active.insert(token);
                }
                Some("end") => {
                    progress.active.remove(&token);
                }
                _ => return,
            }
        }
        "window/logMessage" => {
            if !n.params["message"].as_str().is_some_and(says_ready) {
                return;
            }
            lock(&shared.progress).announced_ready = true;
        }
        _ => return,
    }
    shared.changed.notify_waiters();
}

/// Answers what a server asks of its client: its settings for `workspace/configuration`,
/// and an empty success for the rest (progress tokens, capability registration).
fn server_request(shared: &Shared, request: Request) -> Response {
    let result = if request.method == "workspace/configuration" {
        let items = request
            .params
            .get("items")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let section = |i: usize| {
            let name = request.params["items"][i]["section"].as_str().unwrap_or("");
            let mut v = shared.settings.clone().unwrap_or(Value::Null);
            for part in name.split('.').filter(|p| !p.is_empty()) {
                v = v.get(part).cloned().unwrap_or(Value::Null);
            }
            v
        };
        Value::Array((0..items).map(section).collect())
    } else {
        Value::Null
    };
    Response::new_ok(request.id, result)
}

#[cfg(test)]
mod tests {
    use super::says_ready;

    #[test]
    fn pyright_s_listing_line_is_its_word_that_it_is_ready() {
        assert!(says_ready("Found 2 source files"));
        assert!(says_ready("Found 1 source file"));
        assert!(!says_ready("Found no source files"));
        assert!(!says_ready("Starting service instance \"proj\""));
    }
}
