//! The one output-limit policy: how much text of a result reaches the model.
//!
//! Qwen Code let each tool cut its own output and users paid for the inconsistencies
//! (a shell default that ignored the setting, tools that did not cut at all). Here the
//! budget is one value: tools read it to bound their work (lines to read, matches to
//! collect), and the scheduler applies [`OutputPolicy::limit`] to every text part, keeping
//! head and tail and saving the whole text to a file whose path the model is given.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use toolbelt_config::settings::Settings;

/// Default character budget of one text part (Qwen Code's `truncateToolOutputThreshold`).
pub const DEFAULT_MAX_CHARS: usize = 25_000;
/// Default line budget of one text part (Qwen Code's `truncateToolOutputLines`).
pub const DEFAULT_MAX_LINES: usize = 1_000;

/// How much text of a result the model reads, and where the rest goes: a text part over
/// either budget keeps its head (a fifth) and tail around a marker naming the spill file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputPolicy {
    /// Characters (Unicode scalar values) one text part may have; `usize::MAX` for none.
    pub max_chars: usize,
    /// Lines one text part may have; `usize::MAX` for none.
    pub max_lines: usize,
    /// Where the full text of a cut part is saved.
    pub spill_dir: PathBuf,
}

/// A text after the policy: what the model reads, and where the whole is if it was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitedText {
    /// The text the model reads: the original, or head, marker and tail.
    pub text: String,
    /// Whether the text was cut.
    pub truncated: bool,
    /// The file holding the whole text; `None` when nothing was cut or saving it failed (the
    /// marker then says why).
    pub spill_path: Option<PathBuf>,
}

static SPILL_COUNTER: AtomicU64 = AtomicU64::new(0);

impl OutputPolicy {
    /// A policy with these budgets (`usize::MAX` for none), spilling to `spill_dir`.
    pub fn new(max_chars: usize, max_lines: usize, spill_dir: PathBuf) -> Self {
        OutputPolicy {
            max_chars,
            max_lines,
            spill_dir,
        }
    }

    /// `tools.truncateToolOutputThreshold` and `tools.truncateToolOutputLines`; a value
    /// of zero or less means no limit, as in Qwen Code.
    pub fn from_settings(settings: &Settings, spill_dir: PathBuf) -> Self {
        let tools = &settings.tools;
        let pick = |v: Option<i64>, default: usize| match v {
            None => default,
            Some(n) if n <= 0 => usize::MAX,
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        };
        OutputPolicy {
            max_chars: pick(tools.truncate_tool_output_threshold, DEFAULT_MAX_CHARS),
            max_lines: pick(tools.truncate_tool_output_lines, DEFAULT_MAX_LINES),
            spill_dir,
        }
    }

    /// Whether `text` fits the budget as it is.
    pub fn fits(&self, text: &str) -> bool {
        // Byte length bounds the char count from above: most texts are decided without
        // counting characters.
        (text.len() <= self.max_chars || text.chars().count() <= self.max_chars)
            && (self.max_lines == usize::MAX || line_count(text) <= self.max_lines)
    }

    /// Cuts `text` to the budget, keeping its head and tail around a marker, and saves
    /// the whole text under `spill_dir` (the file name starts with `label`).
    pub fn limit(&self, text: String, label: &str) -> LimitedText {
        if self.fits(&text) {
            return LimitedText {
                text,
                truncated: false,
                spill_path: None,
            };
        }
        let spill = self.spill(&text, label);
        let (head, tail, omitted_lines) = self.head_and_tail(&text);
        let total_lines = line_count(&text);
        let where_ = match &spill {
            Ok(path) => format!(
                "The full output ({total_lines} lines) is saved in {}; read it with read_file (offset and limit) or search it with grep_search.",
                path.display()
            ),
            Err(e) => format!("The full output ({total_lines} lines) could not be saved: {e}."),
        };
        let text = format!(
            "{head}\n\n[... {omitted_lines} lines omitted: output exceeded the limit of {} characters or {} lines. {where_} ...]\n\n{tail}",
            self.max_chars, self.max_lines
        );
        LimitedText {
            text,
            truncated: true,
            spill_path: spill.ok(),
        }
    }

    /// Applies [`OutputPolicy::limit`] to every text part of a result. Inline data is
    /// left alone (its size is capped by the tool that reads it).
    pub fn limit_result(&self, mut result: crate::ToolResult, label: &str) -> crate::ToolResult {
        for part in &mut result.llm_content {
            if let crate::Part::Text { text } = part
                && !self.fits(text)
            {
                *text = self.limit(std::mem::take(text), label).text;
            }
        }
        result
    }

    /// Head and tail within the budget: a fifth of it for the head, the rest for the
    /// tail, where errors and summaries usually are.
    fn head_and_tail<'t>(&self, text: &'t str) -> (&'t str, &'t str, usize) {
        let lines_budget = self.max_lines.min(text.len() + 1);
        let chars_budget = self.max_chars.min(text.len() + 1);
        let head_lines = (lines_budget / 5).max(1);
        let tail_lines = lines_budget.saturating_sub(head_lines).max(1);
        let head_chars = chars_budget / 5;
        let tail_chars = chars_budget.saturating_sub(head_chars);

        let head = take_head(text, head_lines, head_chars);
        let rest = &text[head.len()..];
        let tail = take_tail(rest, tail_lines, tail_chars);
        let omitted = &rest[..rest.len() - tail.len()];
        (head.trim_end_matches('\n'), tail, line_count(omitted))
    }

    fn spill(&self, text: &str, label: &str) -> std::io::Result<PathBuf> {
        toolbelt_config::store_files::create_dir_all(&self.spill_dir)?;
        let n = SPILL_COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("{}-{}-{n}.txt", safe_file_stem(label), std::process::id());
        let path = self.spill_dir.join(name);
        toolbelt_config::store_files::write(&path, text.as_bytes())?;
        Ok(path)
    }
}

fn line_count(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    if text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    }
}

/// The longest prefix of at most `lines` lines and `chars` characters, cut at a char
/// boundary.
fn take_head(text: &str, lines: usize, chars: usize) -> &str {
    let mut seen_lines = 0;
    for (count, (i, c)) in text.char_indices().enumerate() {
        if count >= chars {
            return &text[..i];
        }
        if c == '\n' {
            seen_lines += 1;
            if seen_lines >= lines {
                return &text[..=i];
            }
        }
    }
    text
}

/// The longest suffix of at most `lines` lines and `chars` characters.
fn take_tail(text: &str, lines: usize, chars: usize) -> &str {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut seen_lines = 0;
    for (count, (i, c)) in body.char_indices().rev().enumerate() {
        if count >= chars {
            return &text[i + c.len_utf8()..];
        }
        if c == '\n' {
            seen_lines += 1;
            if seen_lines >= lines {
                return &text[i + 1..];
            }
        }
    }
    text
}

/// A file name stem from an arbitrary label: no separators, no traversal.
pub fn safe_file_stem(label: &str) -> String {
    let stem: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    if stem.is_empty() {
        "output".to_string()
    } else {
        stem
    }
}

/// A default spill directory for callers without a session (tests, one-off calls).
pub fn default_spill_dir() -> PathBuf {
    std::env::temp_dir().join("toolbelt-output")
}

impl Default for OutputPolicy {
    fn default() -> Self {
        OutputPolicy::new(DEFAULT_MAX_CHARS, DEFAULT_MAX_LINES, default_spill_dir())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn policy(chars: usize, lines: usize, dir: &Path) -> OutputPolicy {
        OutputPolicy::new(chars, lines, dir.to_path_buf())
    }

    #[test]
    fn text_within_budget_is_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let out = policy(100, 10, dir.path()).limit("a\nb\nc".into(), "t");
        assert_eq!(
            out,
            LimitedText {
                text: "a\nb\nc".into(),
                truncated: false,
                spill_path: None
            }
        );
    }

    #[test]
    fn too_many_lines_keeps_head_and_tail_and_spills_the_whole() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let out = policy(100_000, 10, dir.path()).limit(text.clone(), "run_shell_command");
        assert!(out.truncated);
        assert!(out.text.starts_with("line 1\nline 2\n"), "{}", out.text);
        assert!(out.text.ends_with("line 100\n"), "{}", out.text);
        assert!(!out.text.contains("line 50\n"));
        assert!(out.text.contains("lines omitted"));
        let spilled = std::fs::read_to_string(out.spill_path.unwrap()).unwrap();
        assert_eq!(spilled, text);
    }

    #[test]
    fn too_many_chars_in_one_line_is_cut_at_char_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let text = "é".repeat(1000);
        let out = policy(100, 1000, dir.path()).limit(text, "x");
        assert!(out.truncated);
        let kept = out.text.chars().filter(|&c| c == 'é').count();
        assert!(kept <= 100, "kept {kept}");
        assert!(kept >= 90, "kept {kept}");
    }

    #[test]
    fn settings_zero_means_unlimited() {
        let mut settings = Settings::default();
        settings.tools.truncate_tool_output_threshold = Some(0);
        settings.tools.truncate_tool_output_lines = Some(-1);
        let p = OutputPolicy::from_settings(&settings, PathBuf::from("/tmp"));
        assert_eq!((p.max_chars, p.max_lines), (usize::MAX, usize::MAX));
        assert!(p.fits(&"x\n".repeat(100_000)));
    }

    #[test]
    fn spill_names_are_safe() {
        assert_eq!(safe_file_stem("../../etc/passwd"), "______etc_passwd");
        assert_eq!(safe_file_stem(""), "output");
    }
}
