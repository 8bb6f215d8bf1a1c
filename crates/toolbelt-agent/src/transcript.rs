//! Saved sessions: every run's conversation as a JSONL file under
//! `<toolbelt home>/sessions/<project>/<ID>.jsonl`, and loading one back so a later run
//! continues it.
//!
//! # Format (version 1)
//!
//! One JSON object per line, each with a `type`:
//!
//! ```text
//! {"type":"session","version":1,"id":"0b6c5f1e-8f0a-4c51-9d1e-2a7f3c9b4d10","cwd":"/src/app","model":"qwen3","started":"2026-11-23T17:15:00.123Z","parent":null}
//! {"type":"user","content":[{"text":"what does the readme say?"}]}
//! {"type":"assistant","text":"","tool_calls":[{"id":"c1","name":"read_file","arguments":"{\"absolute_path\":\"/src/app/README.md\"}"}]}
//! {"type":"tool","call_id":"c1","text":"hello","is_error":false}
//! {"type":"assistant","text":"It says hello.","tool_calls":[]}
//! ```
//!
//! After `/compress`, one line replaces everything before it with the new history (the
//! summary, an acknowledgement, the messages kept word for word), and later messages
//! follow it as usual:
//!
//! ```text
//! {"type":"compressed","history":[{"type":"user","content":[{"text":"[Summary ...]"}]},{"type":"assistant","text":"Understood.","tool_calls":[]}]}
//! ```
//!
//! The header comes first; then every message of the conversation as the model saw it,
//! in order, except the system prompt: that is rebuilt by each run (the tools, the
//! approval mode and the context files may have changed since), so a resumed session
//! speaks to the model as a new run would, with the old conversation in between. Images
//! in user messages are base64 (`{"image":{"mime_type":"image/png","data":"..."}}`).
//! Tool results are what the model read, never run again: loading a file gives back
//! exactly the history that was sent. A result line has the text, `is_error`, and the
//! images the tool returned (`"images":[{"mime_type":"image/png","data":"..."}]`, left
//! out when there are none). A line written before these fields existed loads with
//! `is_error` read from its text (`Error: ` at the start, as the wire formats then
//! guessed) and no images: that version sent its images in a user message after the
//! results, which is saved as such and loads as it was.
//!
//! # Choices
//!
//! - **One line per message, written as it happens** (one `write` of the whole line, no
//!   buffering), so a crash keeps everything up to the message it was writing; a last
//!   line cut short is skipped with a warning. No `fsync`: the file survives a crash of
//!   toolbelt, not necessarily of the machine, which would cost a disk flush per message.
//! - **A continued session is a new file** whose header names its `parent`, and which
//!   starts with a copy of the parent's history (with any repair, below, written out).
//!   Each file is whole on its own (loading never follows a chain), an old file is never
//!   rewritten (a crashed session stays as it was), and two runs continuing the same
//!   session fork instead of interleaving their lines in one file. The cost is disk
//!   space: each continuation repeats the history.
//! - **A continuation keeps its session's ID**, as Qwen Code and Claude Code do: an SDK
//!   that resumed session `X` sees `X` again and can resume `X` once more. Its file is
//!   `<X>.<n>.jsonl` (n = 1, 2, ...; the first run's is `<X>.jsonl`), and `X` loads the
//!   highest `n`. A session with an ID from before IDs were UUIDs
//!   (`20261123T171500.123Z-1a2b3c4d`) still loads; its continuation takes a new UUID,
//!   so what clients see is a UUID from then on.
//! - **A tool call without a result** (the run ended mid-call) is answered on load with an
//!   error result saying the session ended before it finished: model servers reject a
//!   call without a result, and running it again could repeat a side effect. The
//!   results of one model turn are saved together, in call order, once its last call
//!   has finished (the order the model must see them in); a crash while a turn's calls
//!   run therefore answers all of them with that error, also those that had finished.
//! - **Damage is an error naming the file and line**, except an unterminated last line
//!   (a crash while writing), which is a warning. A line in the middle is never skipped:
//!   dropping an assistant message would leave its results answering nothing.
//! - **IDs** are random UUIDs (version 4): SDK clients refuse anything else. Listings
//!   sort sessions by the start time in their newest file's header. An ID given by a
//!   person (or an old one) is checked to be a plain name (letters, digits, `.`, `_`,
//!   `-`, starting with a letter or digit), so it can never name a path outside the
//!   sessions directory.
//! - **A compression is one line**, written with one `write` as every line is: a crash
//!   while writing it leaves a cut last line, skipped with a warning, and the session
//!   loads with its history before the compression. The replaced messages stay in the
//!   file above it (an old line is never rewritten), so nothing said is lost from the
//!   record; loading uses only what follows the last compression. A toolbelt from before
//!   this line existed refuses such a file as damaged rather than misreading it.
//! - **Permissions**: tool output may hold secrets, so the directories are created 0700
//!   and the files 0600.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use toolbelt_model::Message;

use record::{ContentRecord, Line};

/// The version this code writes and reads.
pub const FORMAT_VERSION: u64 = 1;

/// What answers a call the session did not see finish.
pub const UNFINISHED_CALL_TEXT: &str = "Error: the session ended before this tool call finished, so its result is unknown (it may or may not have taken effect). Check the current state before relying on it.";

/// How many IDs an "unknown session" error lists.
const LATEST_SHOWN: usize = 5;

/// Why a session could not be saved or read back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptError {
    /// Reading or writing the file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// A line that is not a record of the session.
    #[error("{}:{line}: {reason}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The header names a format version this build does not read.
    #[error(
        "{}: session format version {found}; this toolbelt reads version {FORMAT_VERSION}",
        path.display()
    )]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version its header names.
        found: String,
    },
    /// An id given to `--resume` that is not a UUID.
    #[error("not a session ID: {0:?} (IDs are UUIDs; `toolbelt --resume` lists them)")]
    InvalidId(String),
    /// No session with this id.
    #[error("no session {id:?} in {}; {}", dir.display(), latest_text(latest))]
    UnknownId {
        /// The id asked for.
        id: String,
        /// Where sessions were looked for.
        dir: PathBuf,
        /// The ids of the latest sessions, for the message.
        latest: Vec<String>,
    },
    /// The project has no saved session (`--continue`).
    #[error("no saved session for this project (in {})", dir.display())]
    NoSessions {
        /// Where sessions were looked for.
        dir: PathBuf,
    },
}

fn latest_text(latest: &[String]) -> String {
    if latest.is_empty() {
        "this project has no saved sessions".to_string()
    } else {
        format!("the latest: {}", latest.join(", "))
    }
}

/// The first line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionHeader {
    /// The format version ([`FORMAT_VERSION`]).
    pub version: u64,
    /// The session's id (a UUID, also the file name).
    pub id: String,
    /// The directory the session ran in.
    pub cwd: PathBuf,
    /// The model it talked to.
    pub model: String,
    /// UTC, RFC 3339 with milliseconds.
    pub started: String,
    /// The session this one continues, if any.
    #[serde(default)]
    pub parent: Option<String>,
}

impl SessionHeader {
    /// The header of a run that continues `parent`: its ID when that is a UUID (see the
    /// module documentation), else a fresh one.
    pub fn continuing(cwd: PathBuf, model: String, parent: &SessionHeader) -> Self {
        let mut header = SessionHeader::new(cwd, model, Some(parent.id.clone()));
        if is_uuid(&parent.id) {
            header.id = parent.id.clone();
        }
        header
    }

    /// A header for a session starting now, with a fresh ID.
    pub fn new(cwd: PathBuf, model: String, parent: Option<String>) -> Self {
        let now = SystemTime::now();
        SessionHeader {
            version: FORMAT_VERSION,
            id: new_id(),
            cwd,
            model,
            started: rfc3339(now),
            parent,
        }
    }
}

/// A session read back.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSession {
    /// The file read.
    pub path: PathBuf,
    /// Its first line.
    pub header: SessionHeader,
    /// The conversation without the system prompt, every tool call answered.
    pub messages: Vec<Message>,
    /// What was repaired or skipped, each naming the file (and line).
    pub warnings: Vec<String>,
    /// The first line of the first prompt in the file, also when a compression has
    /// since replaced it in `messages` (for listings).
    pub first_prompt: Option<String>,
}

/// Reads a session file's bytes. Never panics, whatever the bytes.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<LoadedSession, TranscriptError> {
    let corrupt = |line: usize, reason: String| TranscriptError::Corrupt {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let terminated = bytes.last() == Some(&b'\n');
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    if terminated {
        lines.pop();
    }
    let count = lines.len();
    let Some(first) = lines.first().filter(|_| !bytes.is_empty()) else {
        return Err(corrupt(1, "an empty file, no session header".to_string()));
    };
    let header = read_header(path, first)?;
    let mut warnings = Vec::new();
    let mut messages = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    let mut first_prompt = None;
    for (index, raw) in lines.into_iter().enumerate().skip(1) {
        let number = index + 1;
        let unterminated_last = number == count && !terminated;
        let parsed = read_record(raw);
        let line = match parsed {
            Ok(Some(line)) => line,
            Ok(None) => continue,
            Err(_) if unterminated_last => {
                warnings.push(format!(
                    "{}:{number}: incomplete last line skipped (the run ended while writing it)",
                    path.display()
                ));
                break;
            }
            Err(reason) => return Err(corrupt(number, reason)),
        };
        if first_prompt.is_none()
            && let Line::User { content } = &line
        {
            // The person's words: a SessionStart hook's context comes first in the
            // prompt, and would stand for the session in every listing.
            first_prompt = content.iter().find_map(|c| match c {
                ContentRecord::Text(t) if !toolbelt_engine::hooks::is_context_block(t) => {
                    t.lines().next().map(str::to_string)
                }
                _ => None,
            });
        }
        let lines = match line {
            Line::Compressed { history } => {
                // What came before is replaced, answered calls or not.
                messages.clear();
                pending.clear();
                history
            }
            line => vec![line],
        };
        for line in lines {
            let message = line.into_message().map_err(|r| corrupt(number, r))?;
            add_message(path, message, &mut messages, &mut pending, &mut warnings)
                .map_err(|r| corrupt(number, r))?;
        }
    }
    answer_unfinished(path, &mut pending, &mut messages, &mut warnings);
    Ok(LoadedSession {
        path: path.to_path_buf(),
        header,
        messages,
        warnings,
        first_prompt,
    })
}

/// The session header, the file's first line.
fn read_header(path: &Path, first: &[u8]) -> Result<SessionHeader, TranscriptError> {
    let corrupt = |reason: String| TranscriptError::Corrupt {
        path: path.to_path_buf(),
        line: 1,
        reason,
    };
    let text = std::str::from_utf8(first).map_err(|e| corrupt(format!("not UTF-8: {e}")))?;
    match check_header(text) {
        Ok(h) => Ok(h),
        Err(HeaderProblem::Version(found)) => Err(TranscriptError::UnsupportedVersion {
            path: path.to_path_buf(),
            found,
        }),
        Err(HeaderProblem::Bad(reason)) => Err(corrupt(reason)),
    }
}

/// One record line: `None` for a blank line, `Err` with why it is not a record.
fn read_record(raw: &[u8]) -> Result<Option<Line>, String> {
    let text = std::str::from_utf8(raw).map_err(|e| format!("not UTF-8: {e}"))?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str::<Line>(text)
        .map(Some)
        .map_err(|e| format!("not a session record: {e}"))
}

/// Adds one message read back, checking that a tool result answers a call left open.
fn add_message(
    path: &Path,
    message: Message,
    messages: &mut Vec<Message>,
    pending: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    match &message {
        Message::Tool { call_id, .. } => {
            let Some(at) = pending.iter().position(|p| p == call_id) else {
                return Err(format!(
                    "a result for tool call {call_id:?}, which no assistant message left unanswered"
                ));
            };
            pending.remove(at);
        }
        other => {
            answer_unfinished(path, pending, messages, warnings);
            if let Message::Assistant { tool_calls, .. } = other {
                *pending = tool_calls.iter().map(|c| c.id.clone()).collect();
            }
        }
    }
    messages.push(message);
    Ok(())
}

enum HeaderProblem {
    /// A header of another version (the version as written).
    Version(String),
    Bad(String),
}

/// Line 1: a header of a version this code reads.
fn check_header(text: &str) -> Result<SessionHeader, HeaderProblem> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| HeaderProblem::Bad(format!("not a session header: {e}")))?;
    if value.get("type").and_then(|t| t.as_str()) != Some("session") {
        return Err(HeaderProblem::Bad(
            "not a session header (line 1 must have \"type\":\"session\")".to_string(),
        ));
    }
    match value.get("version") {
        Some(v) if v.as_u64() == Some(FORMAT_VERSION) => {}
        Some(v) => return Err(HeaderProblem::Version(v.to_string())),
        None => return Err(HeaderProblem::Version("(none)".to_string())),
    }
    match serde_json::from_value::<Line>(value) {
        Ok(Line::Session(h)) => Ok(h),
        Ok(_) => Err(HeaderProblem::Bad("not a session header".to_string())),
        Err(e) => Err(HeaderProblem::Bad(format!(
            "a session header with a bad field: {e}"
        ))),
    }
}

fn answer_unfinished(
    path: &Path,
    pending: &mut Vec<String>,
    messages: &mut Vec<Message>,
    warnings: &mut Vec<String>,
) {
    if pending.is_empty() {
        return;
    }
    warnings.push(format!(
        "{}: the session ended before {} tool call(s) finished ({}); each is answered with an error, none is run again",
        path.display(),
        pending.len(),
        pending.join(", ")
    ));
    for call_id in pending.drain(..) {
        messages.push(Message::Tool {
            call_id,
            text: UNFINISHED_CALL_TEXT.to_string(),
            is_error: true,
            images: Vec::new(),
        });
    }
}

/// An open session file; each message is one line, written at once.
#[derive(Debug)]
pub struct SessionWriter {
    id: String,
    path: PathBuf,
    file: Mutex<File>,
    /// How many model answers were written.
    answers: AtomicUsize,
    /// `answers` when [`SessionWriter::discard_unless_answered`] was called; `usize::MAX`
    /// until then (the file is always kept).
    answers_at_start: AtomicUsize,
}

impl Drop for SessionWriter {
    /// A run that never got a model's answer (no server, a refused key, a prompt a hook
    /// blocked, a session opened and closed) is no conversation to resume: its file goes.
    fn drop(&mut self) {
        let start = self.answers_at_start.load(Ordering::SeqCst);
        if start != usize::MAX && self.answers.load(Ordering::SeqCst) == start {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl SessionWriter {
    /// The session's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The file written to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// From now on the file is removed when the writer is dropped (its run ended)
    /// unless a model's answer was written after this call. Called once the continued
    /// conversation is copied in.
    pub fn discard_unless_answered(&self) {
        self.answers_at_start
            .store(self.answers.load(Ordering::SeqCst), Ordering::SeqCst);
    }

    /// Appends one message (the system prompt is not saved, see the module docs).
    pub fn append(&self, message: &Message) -> Result<(), TranscriptError> {
        match Line::from_message(message) {
            Some(line) => self.write_line(&line),
            None => Ok(()),
        }
    }

    /// Records that `history` replaces the conversation so far (`/compress`), in one
    /// line; the messages before it stay in the file.
    pub fn replace_history(&self, history: &[Message]) -> Result<(), TranscriptError> {
        let history = history.iter().filter_map(Line::from_message).collect();
        self.write_line(&Line::Compressed { history })
    }

    fn write_line(&self, line: &Line) -> Result<(), TranscriptError> {
        let io = |source| TranscriptError::Io {
            path: self.path.clone(),
            source,
        };
        let mut text = serde_json::to_string(line).map_err(|e| io(std::io::Error::other(e)))?;
        text.push('\n');
        let mut file = match self.file.lock() {
            Ok(f) => f,
            Err(poisoned) => poisoned.into_inner(),
        };
        file.write_all(text.as_bytes()).map_err(io)?;
        file.flush().map_err(io)?;
        if matches!(line, Line::Assistant { .. }) {
            self.answers.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// A fresh session ID: a random (version 4) UUID, the form SDK clients require.
fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// `2026-11-23T17:15:00.123Z`.
fn rfc3339(now: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(now).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

mod record;
mod store;

pub use store::{SessionStore, is_uuid, valid_id};

#[cfg(test)]
mod tests;
