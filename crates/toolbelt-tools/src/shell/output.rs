//! Bounded capture of a command's output.
//!
//! A command can print gigabytes; the model can read a few thousand lines. So the capture
//! keeps a fixed-size head and a fixed-size tail in memory and, as soon as anything would
//! be dropped from the middle, spills the *whole* stream to a log file (head and tail so
//! far, then every later chunk), whose path goes into the result so the model can page
//! through it with `read_file` or search it with `grep_search`. Memory stays at a few
//! megabytes whatever the command prints.
//!
//! Text for the model is decoded lossily (invalid UTF-8 becomes U+FFFD, never an error),
//! stripped of ANSI escapes and carriage-return redraws, and cut to the session's output
//! budget with a note at the top (users of Codex complained that a note buried in the
//! middle is missed) and a marker where lines were left out. Output with NUL bytes in its
//! first 4 KiB is binary: it is summarised, never dumped.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use toolbelt_core::OutputPolicy;

use std::sync::Arc;

use toolbelt_process::log::{CappedLog, LogBudget};

/// How much of the start of the stream is sniffed for binary content.
const SNIFF_LEN: u64 = 4096;
/// Bounds of the in-memory head and tail, whatever the budget says.
const MIN_KEEP: usize = 64 * 1024;
const MAX_KEEP: usize = 4 * 1024 * 1024;

/// What is told the path of a log when it is created.
type LogCreated = Box<dyn FnOnce(&std::path::Path) + Send>;

/// The output of one command, as it arrives.
pub(crate) struct OutputCapture {
    head: Vec<u8>,
    tail: Vec<u8>,
    keep: usize,
    total_bytes: u64,
    total_newlines: u64,
    binary: bool,
    log_path: PathBuf,
    log: Option<CappedLog<BufWriter<File>>>,
    log_cap: u64,
    log_budget: Arc<LogBudget>,
    /// Bytes the log left out (past its cap), known once it is finished.
    log_left_out: u64,
    log_error: Option<String>,
    /// Whether bytes were dropped from memory (the log then holds the only full copy).
    dropped: bool,
    /// Told the log's path once it is created.
    on_log_created: Option<LogCreated>,
}

/// What the model and the result get once the command is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CapturedOutput {
    /// ANSI-free text within the budget (or a summary for binary output).
    pub text: String,
    pub total_bytes: u64,
    /// Where the whole stream is, when it did not all fit.
    pub log_path: Option<PathBuf>,
    pub truncated: bool,
    pub binary: bool,
}

impl OutputCapture {
    /// A capture whose head and tail together hold a little more than the policy's
    /// character budget (as bytes, up to four per character), spilling to `log_path`
    /// (at most `log_cap` bytes of it, and what `log_budget` grants: see
    /// [`toolbelt_process::log`]).
    pub(crate) fn new(
        policy: &OutputPolicy,
        log_path: PathBuf,
        log_cap: u64,
        log_budget: Arc<LogBudget>,
    ) -> Self {
        let keep = policy.max_chars.saturating_mul(4).clamp(MIN_KEEP, MAX_KEEP);
        OutputCapture {
            head: Vec::new(),
            tail: Vec::new(),
            keep,
            total_bytes: 0,
            total_newlines: 0,
            binary: false,
            log_path,
            log: None,
            log_cap,
            log_budget,
            log_left_out: 0,
            log_error: None,
            dropped: false,
            on_log_created: None,
        }
    }

    /// The same capture, calling `f` with the log's path once the log is created.
    pub(crate) fn on_log_created(
        mut self,
        f: impl FnOnce(&std::path::Path) + Send + 'static,
    ) -> Self {
        self.on_log_created = Some(Box::new(f));
        self
    }

    pub(crate) fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    pub(crate) fn is_binary(&self) -> bool {
        self.binary
    }

    /// The bytes kept in memory so far, with a marker where the middle was left out (the
    /// start of a job's log when a foreground command moves to the background).
    pub(crate) fn kept_bytes(&self) -> Vec<u8> {
        let tail_start = self.tail.len().saturating_sub(self.keep);
        let mut bytes = self.head.clone();
        if self.dropped || tail_start > 0 {
            bytes.extend_from_slice(b"\n[... part of the output left out ...]\n");
        }
        bytes.extend_from_slice(&self.tail[tail_start..]);
        bytes
    }

    /// Takes the next chunk of the stream.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if self.total_bytes < SNIFF_LEN {
            let sniff = (SNIFF_LEN - self.total_bytes) as usize;
            if chunk[..chunk.len().min(sniff)].contains(&0) {
                self.binary = true;
            }
        }
        self.total_bytes += chunk.len() as u64;
        self.total_newlines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        if let Some(log) = &mut self.log
            && let Err(e) = log.write(chunk)
        {
            self.log_error = Some(e.to_string());
            self.log = None;
        }
        let room = self.keep.saturating_sub(self.head.len());
        let (to_head, rest) = chunk.split_at(room.min(chunk.len()));
        self.head.extend_from_slice(to_head);
        if rest.is_empty() {
            return;
        }
        self.tail.extend_from_slice(rest);
        // Compact only when the tail is twice its bound: amortised, no per-chunk memmove.
        if self.tail.len() > 2 * self.keep {
            if !self.dropped && self.log.is_none() {
                self.open_log();
            }
            self.dropped = true;
            let cut = self.tail.len() - self.keep;
            self.tail.drain(..cut);
        }
    }

    /// Creates the log with everything seen so far; later chunks are appended by `push`.
    fn open_log(&mut self) {
        if self.log.is_some() || self.log_error.is_some() {
            return;
        }
        let opened = self
            .log_path
            .parent()
            .map_or(Ok(()), toolbelt_config::store_files::create_dir_all)
            .and_then(|()| toolbelt_config::store_files::create(&self.log_path));
        match opened {
            Ok(file) => {
                if let Some(created) = self.on_log_created.take() {
                    created(&self.log_path);
                }
                let mut log = CappedLog::new(
                    BufWriter::with_capacity(256 * 1024, file),
                    self.log_cap,
                    Some(self.log_budget.clone()),
                );
                let written = log.write(&self.head).and_then(|()| log.write(&self.tail));
                match written {
                    Ok(()) => self.log = Some(log),
                    Err(e) => self.log_error = Some(e.to_string()),
                }
            }
            Err(e) => self.log_error = Some(e.to_string()),
        }
    }

    /// Ends the stream: flushes the log and renders the text for the model.
    pub(crate) fn finish(mut self, policy: &OutputPolicy) -> CapturedOutput {
        let tail_start = self.tail.len().saturating_sub(self.keep);
        let tail = &self.tail[tail_start..];
        if self.binary {
            self.open_log();
            let log_path = self.flush_log();
            let text = match &log_path {
                Some(p) => format!(
                    "[Binary output: {} bytes, not shown. Saved to {}.]",
                    self.total_bytes,
                    p.display()
                ),
                None => format!(
                    "[Binary output: {} bytes, not shown.{}]",
                    self.total_bytes,
                    self.log_note()
                ),
            };
            return CapturedOutput {
                text,
                total_bytes: self.total_bytes,
                log_path,
                truncated: true,
                binary: true,
            };
        }
        let whole_in_memory = !self.dropped && tail_start == 0;
        let mut text = clean_text(&String::from_utf8_lossy(&self.head));
        if !whole_in_memory {
            text.push('\n');
        }
        text.push_str(&clean_text(&decode_tail(tail)));
        let text = text.trim_end_matches('\n').to_string();
        if whole_in_memory && policy.fits(&text) {
            let log_path = self.flush_log();
            return CapturedOutput {
                text,
                total_bytes: self.total_bytes,
                log_path,
                truncated: false,
                binary: false,
            };
        }
        self.open_log();
        let log_path = self.flush_log();
        let text = cut_to_budget(
            &text,
            policy,
            self.total_bytes,
            self.total_newlines,
            log_path.as_deref(),
            self.log_left_out,
            &self.log_note(),
        );
        CapturedOutput {
            text,
            total_bytes: self.total_bytes,
            log_path,
            truncated: true,
            binary: false,
        }
    }

    fn flush_log(&mut self) -> Option<PathBuf> {
        let log = self.log.take()?;
        self.log_left_out = log.left_out();
        match log.finish() {
            Ok(()) => Some(self.log_path.clone()),
            Err(e) => {
                self.log_error = Some(e.to_string());
                None
            }
        }
    }

    fn log_note(&self) -> String {
        match &self.log_error {
            Some(e) => format!(
                " The full output could not be saved to {}: {e}.",
                self.log_path.display()
            ),
            None => String::new(),
        }
    }
}

/// The tail may start in the middle of a UTF-8 sequence; skip its continuation bytes
/// rather than showing a replacement character.
fn decode_tail(tail: &[u8]) -> String {
    let start = tail
        .iter()
        .take(3)
        .take_while(|&&b| b & 0xC0 == 0x80)
        .count();
    String::from_utf8_lossy(&tail[start..]).into_owned()
}

/// Head and tail of `text` within the policy, with a note on top and a marker between.
fn cut_to_budget(
    text: &str,
    policy: &OutputPolicy,
    total_bytes: u64,
    total_newlines: u64,
    log_path: Option<&Path>,
    log_left_out: u64,
    log_note: &str,
) -> String {
    let max_chars = policy.max_chars.min(text.len());
    let max_lines = policy.max_lines;
    let head_chars = max_chars / 5;
    let head_lines = (max_lines / 5).max(1);
    let tail_chars = max_chars - head_chars;
    let tail_lines = max_lines.saturating_sub(head_lines).max(1);
    let head = take_head(text, head_chars, head_lines);
    let tail = take_tail(&text[head.len()..], tail_chars, tail_lines);
    let where_ = match log_path {
        Some(_) if log_left_out >= total_bytes => {
            "None of the output was saved: the logs of this session reached their limit."
                .to_string()
        }
        Some(p) if log_left_out > 0 => format!(
            "The first {} bytes of the output are saved in {} (the {log_left_out} bytes after them were not: the log's limit); read it with read_file (offset and limit) or search it with grep_search.",
            total_bytes - log_left_out,
            p.display()
        ),
        Some(p) => format!(
            "The full output is saved in {}; read it with read_file (offset and limit) or search it with grep_search.",
            p.display()
        ),
        None => format!("The full output was not saved.{log_note}"),
    };
    format!(
        "[Output truncated: {total_bytes} bytes, {} lines in all; showing the first and last lines. {where_}]\n{head}\n[... middle of the output omitted ...]\n{tail}",
        total_newlines + 1
    )
}

fn take_head(text: &str, max_chars: usize, max_lines: usize) -> &str {
    let (mut lines, mut end) = (0, 0);
    for (n, (pos, c)) in text.char_indices().enumerate() {
        if n >= max_chars {
            break;
        }
        if c == '\n' {
            lines += 1;
            if lines >= max_lines {
                break;
            }
        }
        end = pos + c.len_utf8();
    }
    &text[..end]
}

fn take_tail(text: &str, max_chars: usize, max_lines: usize) -> &str {
    let (mut lines, mut start) = (0, text.len());
    for (n, (pos, c)) in text.char_indices().rev().enumerate() {
        if n >= max_chars {
            break;
        }
        if c == '\n' {
            lines += 1;
            if lines >= max_lines {
                break;
            }
        }
        start = pos;
    }
    &text[start..]
}

/// Removes ANSI escape sequences and resolves carriage-return redraws (a progress bar
/// keeps only its last state), and turns `\r\n` into `\n`.
pub(crate) fn clean_text(text: &str) -> String {
    let stripped = strip_ansi(text);
    if !stripped.contains('\r') {
        return stripped;
    }
    let mut out = String::with_capacity(stripped.len());
    for (i, line) in stripped.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        out.push_str(line.rsplit('\r').next().unwrap_or(line));
    }
    out
}

/// Removes CSI (`ESC [ … final`), OSC (`ESC ] … BEL` or `ESC \`), DCS/SOS/PM/APC strings
/// and two-character escapes.
pub(crate) fn strip_ansi(text: &str) -> String {
    if !text.contains('\u{1b}') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            Some(']' | 'P' | 'X' | '^' | '_') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            // Character-set selection takes one more character.
            Some('(' | ')' | '*' | '+') => {
                chars.next();
            }
            _ => {}
        }
    }
    out
}

/// Decodes a stream chunk by chunk for live display, carrying an incomplete UTF-8
/// sequence over to the next chunk.
#[derive(Default)]
pub(crate) struct LiveDecoder {
    carry: Vec<u8>,
}

impl LiveDecoder {
    pub(crate) fn decode(&mut self, chunk: &[u8]) -> String {
        self.carry.extend_from_slice(chunk);
        let valid = match std::str::from_utf8(&self.carry) {
            Ok(_) => self.carry.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => self.carry.len(),
        };
        let text = String::from_utf8_lossy(&self.carry[..valid]).into_owned();
        self.carry.drain(..valid);
        strip_ansi(&text)
    }
}

#[cfg(test)]
mod tests;
