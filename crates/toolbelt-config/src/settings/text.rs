//! Settings text to a JSON value: strict JSON plus comments, read with `jsonc-parser`
//! (the crate `workspace_rules` also edits these files with, so both agree on what a
//! settings file is).
//!
//! Only comments are let through: a trailing comma, a missing comma, single quotes or a
//! bare word is an error, as Qwen Code reports it. `#` comments are also accepted (files
//! written for earlier toolbelt versions have them); `jsonc-parser` does not know them, so
//! they are blanked first, positions kept.

use std::borrow::Cow;

use jsonc_parser::ParseOptions;
use serde_json::{Map, Value};

/// Why a settings text is not JSON with comments, and where (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at line {line} column {column}")]
pub struct SettingsTextError {
    message: String,
    line: usize,
    column: usize,
}

impl SettingsTextError {
    /// What is wrong, without the position.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The 1-based line.
    pub fn line(&self) -> usize {
        self.line
    }
    /// The 1-based column.
    pub fn column(&self) -> usize {
        self.column
    }
}

/// JSON with comments to a value. An empty file is an empty object.
pub fn parse_settings_text(text: &[u8]) -> Result<Value, SettingsTextError> {
    let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Map::new()));
    }
    let text = std::str::from_utf8(text).map_err(|e| {
        let (line, column) = position(text, e.valid_up_to());
        SettingsTextError {
            message: "invalid UTF-8".into(),
            line,
            column,
        }
    })?;
    jsonc_parser::parse_to_serde_value(&blank_hash_comments(text), &strict()).map_err(|e| {
        SettingsTextError {
            message: e.kind().to_string(),
            line: e.line_display(),
            column: e.column_display(),
        }
    })
}

/// JSON as written, comments aside.
fn strict() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// `text` with each `#` comment (outside strings and other comments, to the end of its
/// line) turned into spaces, so line and column of what follows stay true.
fn blank_hash_comments(text: &str) -> Cow<'_, str> {
    if !text.contains('#') {
        return Cow::Borrowed(text);
    }
    #[derive(Clone, Copy, PartialEq)]
    enum In {
        Json,
        Str,
        Escape,
        Line,
        Block,
        Hash,
    }
    let mut state = In::Json;
    let mut out = String::with_capacity(text.len());
    // The character before, within one state: `/*/` opens a comment and does not close it.
    let mut prev = '\0';
    for c in text.chars() {
        let next = match (state, c) {
            (In::Json, '"') => In::Str,
            (In::Json, '#') => In::Hash,
            (In::Json, '/') if prev == '/' => In::Line,
            (In::Json, '*') if prev == '/' => In::Block,
            (In::Block, '/') if prev == '*' => In::Json,
            (In::Str, '\\') => In::Escape,
            (In::Str, '"') => In::Json,
            (In::Escape, _) => In::Str,
            (In::Line | In::Hash, '\n') => In::Json,
            _ => state,
        };
        out.push(if next == In::Hash { ' ' } else { c });
        prev = if next == state { c } else { '\0' };
        state = next;
    }
    Cow::Owned(out)
}

/// 1-based line and column of byte `offset` of `text`.
fn position(text: &[u8], offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    (line, offset - start + 1)
}
