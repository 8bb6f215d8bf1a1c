//! Markdown files that start with YAML front matter: skills (`SKILL.md`) and sub-agent
//! definitions (`.qwen/agents/*.md`).
//!
//! # Brief overview
//!
//! [`split`] finds the front matter: the file's first line is `---`, the block ends at
//! the next line that is `---` (or `...`); everything after it is the body. A file that
//! does not open with `---` has no front matter. [`parse`] splits and then reads the
//! block into any `serde` type with `serde-saphyr`, a YAML parser that reports line
//! numbers, has budgets on nesting, aliases and nodes, and returns errors rather than
//! panicking on bad input.
//!
//! Every error is a [`FrontMatterError`] that names the line in the *file* (not in the
//! block) and, when it can be told, the key (`tools[2]`, `runConfig.max_turns`), so a
//! loader can warn "`.qwen/agents/x.md`: line 4, key `tools`: ..." and go on with the
//! other files. Fields typed [`Spanned`] keep their own line, for checks made after
//! parsing (see [`Document::line_of`]).
//!
//! The input is held to [`MAX_FRONT_MATTER_BYTES`] of YAML and a small nesting budget:
//! these files come from repositories that may be hostile, and front matter is a
//! handful of keys.

use std::cell::RefCell;
use std::fmt;

use serde::de::DeserializeOwned;
pub use serde_saphyr::Spanned;

/// Largest front-matter block read (64 KiB): a definition is a handful of keys.
pub const MAX_FRONT_MATTER_BYTES: usize = 64 * 1024;

/// Deepest nesting of mappings and sequences accepted in front matter.
const MAX_DEPTH: usize = 16;

/// Most YAML nodes accepted in front matter (a few keys, lists of tool names).
const MAX_NODES: usize = 4_096;

/// A Markdown file cut at its front matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split<'a> {
    /// The YAML between the `---` lines; `None` when the file has no front matter.
    pub yaml: Option<&'a str>,
    /// The 1-based line of the file where `yaml` starts (the line after the first `---`).
    pub yaml_line: usize,
    /// What follows the closing line (the whole file when there is no front matter).
    pub body: &'a str,
    /// The 1-based line of the file where `body` starts.
    pub body_line: usize,
}

/// A parsed file: its front matter as `T` and its body.
#[derive(Debug, Clone)]
pub struct Document<'a, T> {
    /// The front matter.
    pub front_matter: T,
    /// The Markdown after the front matter, as written.
    pub body: &'a str,
    /// The 1-based line of the file where the body starts.
    pub body_line: usize,
    yaml_line: usize,
}

impl<T> Document<'_, T> {
    /// The line of the file a [`Spanned`] field of the front matter was written on.
    pub fn line_of<V>(&self, field: &Spanned<V>) -> usize {
        file_line(self.yaml_line, field.referenced.line())
    }
}

/// Why front matter could not be read: the line of the file and the key, where known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct FrontMatterError {
    /// 1-based line of the file; `None` when the error has no place (an empty file).
    pub line: Option<usize>,
    /// The key at fault, as a path (`name`, `tools[1]`, `runConfig.max_turns`).
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl FrontMatterError {
    /// An error about `key` on `line`, for checks a loader makes after parsing.
    pub fn at(line: usize, key: impl Into<String>, message: impl Into<String>) -> Self {
        FrontMatterError {
            line: Some(line),
            key: Some(key.into()),
            message: message.into(),
        }
    }
}

impl fmt::Display for FrontMatterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        if let Some(key) = &self.key {
            write!(f, "key `{key}`: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Cuts `text` at its front matter. A file whose first line (after a byte-order mark)
/// is not `---` has none; one that opens the block and never closes it is an error.
pub fn split(text: &str) -> Result<Split<'_>, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let no_front_matter = Split {
        yaml: None,
        yaml_line: 1,
        body: text,
        body_line: 1,
    };
    let Some((first, rest)) = next_line(text) else {
        return Ok(no_front_matter);
    };
    if first.trim_end() != "---" {
        return Ok(no_front_matter);
    }
    let mut offset = 0;
    let mut line = 2;
    let mut remaining = rest;
    while let Some((current, after)) = next_line(remaining) {
        let trimmed = current.trim_end();
        if trimmed == "---" || trimmed == "..." {
            return Ok(Split {
                yaml: Some(&rest[..offset]),
                yaml_line: 2,
                body: after,
                body_line: line + 1,
            });
        }
        offset += remaining.len() - after.len();
        remaining = after;
        line += 1;
    }
    Err(FrontMatterError {
        line: Some(1),
        key: None,
        message: "the front matter opened with `---` on line 1 is never closed: end it with a line that is `---`".into(),
    })
}

/// The first line of `text` (without its line ending) and the rest; `None` when empty.
fn next_line(text: &str) -> Option<(&str, &str)> {
    if text.is_empty() {
        return None;
    }
    Some(match text.find('\n') {
        Some(i) => (
            text[..i].strip_suffix('\r').unwrap_or(&text[..i]),
            &text[i + 1..],
        ),
        None => (text, ""),
    })
}

/// Splits `text` and reads its front matter as `T`. The front matter is required: a
/// file without one is an error that says how a file must start.
pub fn parse<T: DeserializeOwned>(text: &str) -> Result<Document<'_, T>, FrontMatterError> {
    let split = split(text)?;
    let Some(yaml) = split.yaml else {
        return Err(FrontMatterError {
            line: Some(1),
            key: None,
            message: "no front matter: the file must start with a `---` line, then YAML keys, then another `---` line".into(),
        });
    };
    let front_matter = parse_yaml(yaml, split.yaml_line)?;
    Ok(Document {
        front_matter,
        body: split.body,
        body_line: split.body_line,
        yaml_line: split.yaml_line,
    })
}

/// Reads a front-matter block that starts on line `first_line` of its file.
pub fn parse_yaml<T: DeserializeOwned>(
    yaml: &str,
    first_line: usize,
) -> Result<T, FrontMatterError> {
    if yaml.len() > MAX_FRONT_MATTER_BYTES {
        return Err(FrontMatterError {
            line: Some(first_line),
            key: None,
            message: format!(
                "the front matter is {} bytes; at most {MAX_FRONT_MATTER_BYTES} are read",
                yaml.len()
            ),
        });
    }
    // An empty block is an empty mapping, so a missing key is reported as missing.
    let yaml = if yaml.trim().is_empty() { "{}" } else { yaml };
    let options = serde_saphyr::options! {
        with_snippet: false,
        budget: serde_saphyr::budget! {
            max_depth: MAX_DEPTH,
            max_nodes: MAX_NODES,
            max_aliases: 64,
            max_anchors: 64,
            max_documents: 1,
        },
    };
    let failed_at: RefCell<Option<String>> = RefCell::new(None);
    let parsed = serde_saphyr::with_deserializer_from_str_with_options(yaml, options, |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = without_spanned(&e.path().to_string());
            *failed_at.borrow_mut() = Some(path);
            e.into_inner()
        })
    });
    parsed.map_err(|e| {
        let message = plain_message(&e);
        let key = failed_at
            .into_inner()
            .filter(|p| p != "." && !p.is_empty())
            .or_else(|| missing_field(&message));
        FrontMatterError {
            line: e.location().map(|l| file_line(first_line, l.line())),
            key,
            message,
        }
    })
}

/// The line of the file for line `yaml_line` (1-based) of a block starting on `first_line`.
fn file_line(first_line: usize, yaml_line: u64) -> usize {
    let yaml_line = usize::try_from(yaml_line).unwrap_or(usize::MAX).max(1);
    first_line.saturating_add(yaml_line - 1)
}

/// The parser's message without the position it appends (the caller gives the line of
/// the file, which differs from the line in the block).
fn plain_message(error: &serde_saphyr::Error) -> String {
    let text = error.to_string();
    let text = text.lines().next().unwrap_or_default().trim();
    let text = match text.rfind(" at line ") {
        Some(i) => &text[..i],
        None => text,
    };
    text.trim_end_matches(['.', ',', ' ']).to_string()
}

/// The key path without the `value` field of [`Spanned`] wrappers (`tools.value[1]` →
/// `tools[1]`), which is not part of the file.
fn without_spanned(path: &str) -> String {
    let path = path.replace(".value[", "[").replace(".value.", ".");
    match path.strip_suffix(".value") {
        Some(p) => p.to_string(),
        None => path,
    }
}

/// `missing field `name`` → `name`.
fn missing_field(message: &str) -> Option<String> {
    let rest = message.split("missing field `").nth(1)?;
    Some(rest.split('`').next()?.to_string())
}

#[cfg(test)]
mod tests;
