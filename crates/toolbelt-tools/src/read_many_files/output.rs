//! The result of `read_many_files` as it is assembled: each file's text or attached
//! data within the output budget, and the report of what was left out and why.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use toolbelt_core::Part;

use super::MAX_INLINE;
use crate::file_type::{self, TextEncoding};

/// The result being assembled, and what is left of the output budget.
pub(super) struct Output {
    pub(super) text: String,
    pub(super) media: Vec<Part>,
    pub(super) chars_left: usize,
    pub(super) lines_left: usize,
    pub(super) report: Report,
}

impl Output {
    /// An image, audio, video or PDF file, attached whole when it is small enough.
    pub(super) fn add_media(&mut self, path: &Path, shown: String, mime: String) {
        let report = &mut self.report;
        match std::fs::metadata(path) {
            Ok(m) if m.len() > MAX_INLINE => report.skipped.push((
                shown,
                format!(
                    "{mime} of {} bytes, over the {MAX_INLINE}-byte limit",
                    m.len()
                ),
            )),
            _ => match std::fs::read(path) {
                Ok(data) => {
                    self.text.push_str(&format!(
                        "--- {shown} ---\n\n[{mime}, {} bytes, attached]\n\n",
                        data.len()
                    ));
                    report.read.push(path.to_path_buf());
                    self.media.push(Part::InlineData {
                        mime_type: mime,
                        data,
                        display_name: Some(shown),
                    });
                }
                Err(e) => report.skipped.push((shown, e.to_string())),
            },
        }
    }

    /// A text file, as much of it as the budget leaves room for.
    pub(super) fn add_text(&mut self, path: &Path, shown: String, encoding: TextEncoding) {
        if self.chars_left == 0 || self.lines_left < 4 {
            self.report.did_not_fit.push(shown);
            return;
        }
        match read_text(path, encoding, self.chars_left, self.lines_left - 3) {
            Ok(chunk) => {
                self.text.push_str(&format!("--- {shown} ---\n\n"));
                self.text.push_str(&chunk.text);
                if chunk.complete {
                    self.text.push_str("\n\n");
                } else {
                    self.text.push_str(&format!(
                        "\n[... the output budget ran out after {} lines; read the rest with read_file and offset {}]\n\n",
                        chunk.lines, chunk.lines
                    ));
                    self.chars_left = 0;
                }
                self.chars_left = self
                    .chars_left
                    .saturating_sub(chunk.text.len() + shown.len() + 10);
                self.lines_left = self.lines_left.saturating_sub(chunk.lines + 3);
                self.report.read.push(path.to_path_buf());
            }
            Err(e) => self.report.skipped.push((shown, e.to_string())),
        }
    }
}

/// What happened to the files that are not in the output, for the model.
#[derive(Default)]
pub(super) struct Report {
    pub(super) read: Vec<PathBuf>,
    pub(super) skipped: Vec<(String, String)>,
    pub(super) did_not_fit: Vec<String>,
    pub(super) missing: Vec<String>,
    /// The note saying that permission rules left paths out, if they did.
    pub(super) withheld: Option<String>,
}

impl Report {
    pub(super) fn notes(&self) -> String {
        let mut notes = Vec::new();
        if !self.missing.is_empty() {
            notes.push(format!("Not found: {}.", self.missing.join(", ")));
        }
        if !self.did_not_fit.is_empty() {
            notes.push(format!(
                "Not included because the output budget ran out ({} file(s)); read them with read_file: {}",
                self.did_not_fit.len(),
                self.did_not_fit.join(", ")
            ));
        }
        if !self.skipped.is_empty() {
            let list: Vec<String> = self
                .skipped
                .iter()
                .map(|(p, why)| format!("{p} ({why})"))
                .collect();
            notes.push(format!("Skipped: {}.", list.join(", ")));
        }
        notes.extend(self.withheld.clone());
        notes.join("\n")
    }
}

/// A text file's lines within the budget.
struct TextChunk {
    text: String,
    lines: usize,
    complete: bool,
}

fn read_text(
    path: &Path,
    encoding: file_type::TextEncoding,
    max_chars: usize,
    max_lines: usize,
) -> std::io::Result<TextChunk> {
    let mut chunk = TextChunk {
        text: String::new(),
        lines: 0,
        complete: true,
    };
    let reader: Box<dyn BufRead> = match encoding {
        file_type::TextEncoding::Utf8 { .. } => {
            Box::new(BufReader::new(std::fs::File::open(path)?))
        }
        file_type::TextEncoding::Utf16Le | file_type::TextEncoding::Utf16Be => {
            // Never more than a budget can show: the first 64 MiB.
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(
                &mut std::io::Read::take(std::fs::File::open(path)?, crate::file_change::MAX_HELD),
                &mut bytes,
            )?;
            let codec = if encoding == file_type::TextEncoding::Utf16Le {
                encoding_rs::UTF_16LE
            } else {
                encoding_rs::UTF_16BE
            };
            Box::new(std::io::Cursor::new(
                codec.decode(&bytes).0.into_owned().into_bytes(),
            ))
        }
    };
    let mut reader = reader;
    let mut buf = Vec::new();
    // A longer line is past the budget whatever follows in it (see `read_line_capped`).
    let keep = max_chars.saturating_add(8);
    loop {
        buf.clear();
        if crate::read_file::read_line_capped(&mut reader, &mut buf, keep)? == 0 {
            break;
        }
        let raw = if chunk.lines == 0 {
            buf.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&buf)
        } else {
            &buf[..]
        };
        let line = String::from_utf8_lossy(raw);
        let line = line.trim_end_matches(['\n', '\r']);
        if chunk.lines >= max_lines || chunk.text.len() + line.len() + 1 > max_chars {
            chunk.complete = false;
            break;
        }
        if chunk.lines > 0 {
            chunk.text.push('\n');
        }
        chunk.text.push_str(line);
        chunk.lines += 1;
    }
    Ok(chunk)
}
