//! A matcher group's `matcher`, as Qwen Code reads it (and as Claude Code's files write
//! it).
//!
//! - `""`, `"*"` and `".*"` (and no matcher) match everything.
//! - The matcher is first compared exactly, with the target and with each of its
//!   aliases (a tool's display name and the names its permission rules accept, such as
//!   Claude Code's `Bash`, `Edit`, `Write`).
//! - Unless it starts with `^` or `(`, it is a `|`-list: split on each `|` that is not
//!   escaped and not inside `[...]` or a group, entries trimmed (an escaped space at an
//!   edge is kept); an entry that is `*`, `.*` or exactly the target or an alias matches.
//!   Otherwise the non-empty entries, joined by `|`, are one unanchored regular
//!   expression tried on the target (so a stray `|` never makes a matcher match
//!   everything, and a matcher of only `|` matches nothing).
//! - A matcher that starts with `^` or `(` is one regular expression, as written.
//!
//! Aliases are only compared exactly: a regular expression sees the runtime name, so
//! `mcp__server__.*` matches the MCP tools of `server` (toolbelt names them
//! `mcp__<server>__<tool>`, as Claude Code does). Regular expressions are `fancy-regex`
//! (look-around, as in `^(?!write_file).*$`), with bounded size and backtracking.

use fancy_regex::{Regex, RegexBuilder};

/// The longest matcher accepted, in characters.
const MAX_MATCHER_CHARS: usize = 4096;
/// Compiled size of a matcher's regular expression, in bytes.
const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Backtracking steps of one match (look-around, back-references).
const BACKTRACK_LIMIT: usize = 100_000;

/// A compiled matcher.
#[derive(Debug, Clone)]
pub(crate) struct Matcher {
    /// As written.
    text: String,
    how: How,
}

#[derive(Debug, Clone)]
enum How {
    All,
    /// Exact entries (the whole matcher, or its `|`-list entries) and the expression of
    /// the non-empty ones, if any.
    Entries {
        exact: Vec<String>,
        regex: Option<Regex>,
    },
}

impl Matcher {
    /// Compiles a matcher; the error says why it is not a valid regular expression.
    pub(crate) fn parse(text: &str) -> Result<Matcher, String> {
        if text.chars().count() > MAX_MATCHER_CHARS {
            return Err(format!(
                "is {} characters long; at most {MAX_MATCHER_CHARS} are accepted",
                text.chars().count()
            ));
        }
        let trimmed = text.trim();
        if matches!(trimmed, "" | "*" | ".*") {
            return Ok(Matcher {
                text: text.to_string(),
                how: How::All,
            });
        }
        let (mut exact, pattern) = if trimmed.starts_with('^') || trimmed.starts_with('(') {
            (Vec::new(), Some(text.to_string()))
        } else {
            let entries: Vec<String> = split_top_level(text)
                .into_iter()
                .map(trim_entry)
                .filter(|e| !e.is_empty())
                .map(str::to_string)
                .collect();
            if entries.iter().any(|e| e == "*" || e == ".*") {
                return Ok(Matcher {
                    text: text.to_string(),
                    how: How::All,
                });
            }
            let pattern = (!entries.is_empty()).then(|| entries.join("|"));
            (entries, pattern)
        };
        exact.insert(0, text.to_string());
        let regex = match pattern {
            Some(pattern) => Some(compile(&pattern).map_err(|e| {
                format!(
                    "{} is not a valid regular expression: {e}",
                    crate::config::quoted(text)
                )
            })?),
            None => None,
        };
        Ok(Matcher {
            text: text.to_string(),
            how: How::Entries { exact, regex },
        })
    }

    /// The matcher as written.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Whether it matches everything.
    pub(crate) fn matches_all(&self) -> bool {
        matches!(self.how, How::All)
    }

    /// Whether it matches `target` (or one of `aliases`, exactly). A regular expression
    /// that gives up (too much backtracking) counts as a match: the hook is the person's
    /// check, and it runs rather than being skipped.
    pub(crate) fn matches(&self, target: &str, aliases: &[String]) -> bool {
        match &self.how {
            How::All => true,
            How::Entries { exact, regex } => {
                exact
                    .iter()
                    .any(|e| e == target || aliases.iter().any(|a| a == e))
                    || regex
                        .as_ref()
                        .is_some_and(|r| r.is_match(target).unwrap_or(true))
            }
        }
    }
}

fn compile(pattern: &str) -> Result<Regex, fancy_regex::Error> {
    RegexBuilder::new(pattern)
        .delegate_size_limit(REGEX_SIZE_LIMIT)
        .delegate_dfa_size_limit(REGEX_SIZE_LIMIT)
        .backtrack_limit(BACKTRACK_LIMIT)
        .build()
}

/// Splits on each `|` that is not escaped, not inside `[...]` and not inside a group.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut depth = 0usize;
    let mut in_class = false;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' if !in_class => {
                in_class = true;
                // `[]...]` and `[^]...]`: the first `]` is a literal.
                if chars.peek().is_some_and(|(_, c)| *c == '^') {
                    chars.next();
                }
                if chars.peek().is_some_and(|(_, c)| *c == ']') {
                    chars.next();
                }
            }
            ']' if in_class => in_class = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => depth = depth.saturating_sub(1),
            '|' if !in_class && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// Trims the spaces around a list entry, but not an escaped space at its end.
fn trim_entry(entry: &str) -> &str {
    let mut entry = entry.trim_start();
    while let Some(last) = entry.chars().next_back().filter(|c| c.is_whitespace()) {
        let body = &entry[..entry.len() - last.len_utf8()];
        // An odd number of backslashes before the space escapes it.
        let slashes = body.chars().rev().take_while(|c| *c == '\\').count();
        if slashes % 2 == 1 {
            break;
        }
        entry = body;
    }
    entry
}

#[cfg(test)]
mod tests;
