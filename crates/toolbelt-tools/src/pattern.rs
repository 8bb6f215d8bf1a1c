//! Compiling globs and regular expressions that come from the model, within bounds.
//!
//! Every pattern a tool compiles from its arguments (the `glob` pattern, `grep_search`'s
//! regex and file filter, `list_directory`'s and `read_many_files`' include and exclude
//! lists) goes through here, so one place decides what is too big:
//!
//! - **Length** before anything is parsed: [`MAX_GLOB_CHARS`] for a glob (a path is at
//!   most 4096 bytes on Linux, so a longer glob cannot mean anything) and
//!   [`MAX_REGEX_CHARS`] for a regex; at most [`MAX_GLOBS`] globs in one list.
//! - **Compiled size**: globs become regexes inside `globset`, whose own limit is 10 MiB.
//!   `Glob::compile_matcher` *panics* past it (a 140,000-character pattern did), so a
//!   glob is never compiled that way: every matcher here is a `GlobSet`, whose build
//!   returns the error instead. A search regex gets [`REGEX_SIZE_LIMIT`] for the compiled
//!   program and [`REGEX_DFA_LIMIT`] for the lazy DFA's cache *per searching thread*
//!   (`grep-regex` allows 100 MiB and 1,000 MiB by default, and the search runs on up to
//!   twelve threads).
//!
//! Error messages quote at most [`QUOTE_CHARS`] characters of a pattern, so a huge one
//! does not come back to the model whole.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use toolbelt_core::ToolError;

/// Longest glob accepted, in characters.
pub(crate) const MAX_GLOB_CHARS: usize = 4096;
/// Longest regular expression accepted, in characters.
pub(crate) const MAX_REGEX_CHARS: usize = 8192;
/// Most globs in one list (`ignore`, `include`, `exclude`, `paths`).
pub(crate) const MAX_GLOBS: usize = 1000;
/// Compiled size of a search regex (its NFA), in bytes.
pub(crate) const REGEX_SIZE_LIMIT: usize = 10 * 1024 * 1024;
/// Lazy DFA cache of a search regex, per thread, in bytes.
pub(crate) const REGEX_DFA_LIMIT: usize = 10 * 1024 * 1024;
/// Characters of a pattern quoted in an error message.
pub(crate) const QUOTE_CHARS: usize = 120;

/// How a glob is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GlobOptions {
    pub case_insensitive: bool,
    /// `*` stays within one path component.
    pub literal_separator: bool,
    /// `\` escapes the next character (otherwise it is literal).
    pub backslash_escape: bool,
}

impl GlobOptions {
    /// Case-sensitive, `*` within one component, `\` escapes: how listing tools match.
    pub(crate) const PATHS: GlobOptions = GlobOptions {
        case_insensitive: false,
        literal_separator: true,
        backslash_escape: true,
    };
}

/// `pattern` for an error message: whole when short, else its head and its length.
pub(crate) fn quote(pattern: &str) -> String {
    let count = pattern.chars().count();
    if count <= QUOTE_CHARS {
        return format!("'{pattern}'");
    }
    let head: String = pattern.chars().take(QUOTE_CHARS).collect();
    format!("'{head}...' ({count} characters)")
}

/// The error for a pattern over a length limit.
fn too_long(what: &str, pattern: &str, limit: usize) -> ToolError {
    ToolError::invalid_params(format!(
        "the {what} {} is too long: at most {limit} characters are accepted.",
        quote(pattern)
    ))
}

/// One glob, bounded. `what` names it in messages ("glob pattern", "exclude pattern").
pub(crate) fn glob(pattern: &str, what: &str, options: GlobOptions) -> Result<GlobSet, ToolError> {
    globs(&[pattern], what, options)
}

/// Several globs as one set (a path matches when any glob does), bounded.
pub(crate) fn globs(
    patterns: &[&str],
    what: &str,
    options: GlobOptions,
) -> Result<GlobSet, ToolError> {
    if patterns.len() > MAX_GLOBS {
        return Err(ToolError::invalid_params(format!(
            "{} {what}s were given; at most {MAX_GLOBS} are accepted.",
            patterns.len()
        )));
    }
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        if pattern.chars().count() > MAX_GLOB_CHARS {
            return Err(too_long(what, pattern, MAX_GLOB_CHARS));
        }
        let glob = GlobBuilder::new(pattern)
            .case_insensitive(options.case_insensitive)
            .literal_separator(options.literal_separator)
            .backslash_escape(options.backslash_escape)
            .build()
            .map_err(|e| {
                ToolError::invalid_params(format!(
                    "invalid {what} {}: {}",
                    quote(pattern),
                    cut(&e.kind().to_string())
                ))
            })?;
        set.add(glob);
    }
    // The one fallible compilation: past globset's size limit this is an error, where
    // `compile_matcher` would panic.
    set.build().map_err(|e| {
        ToolError::invalid_params(format!(
            "the {what}{} too complex to compile ({}); use a simpler pattern.",
            if patterns.len() == 1 { " is" } else { "s are" },
            cut(&e.to_string())
        ))
    })
}

/// A search regex, bounded in length and compiled size.
pub(crate) fn regex(pattern: &str, case_insensitive: bool) -> Result<RegexMatcher, ToolError> {
    if pattern.chars().count() > MAX_REGEX_CHARS {
        return Err(too_long("regular expression", pattern, MAX_REGEX_CHARS));
    }
    RegexMatcherBuilder::new()
        .case_insensitive(case_insensitive)
        .line_terminator(Some(b'\n'))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_LIMIT)
        .build(pattern)
        .map_err(|e| {
            ToolError::invalid_params(format!(
                "invalid regular expression {}: {}",
                quote(pattern),
                cut(&e.to_string())
            ))
        })
}

/// An engine's message, cut: some quote the whole (compiled) pattern.
fn cut(message: &str) -> String {
    const MAX: usize = 600;
    if message.chars().count() <= MAX {
        return message.to_string();
    }
    let head: String = message.chars().take(MAX).collect();
    format!("{head}...")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_past_the_compiled_size_limit_is_an_error_not_a_panic() {
        // Under the length limit, but compiled past globset's 10 MiB: `compile_matcher`
        // panics on this one.
        let pattern = "{a,b}[!a]".repeat(MAX_GLOB_CHARS / 9);
        let err = glob(&pattern, "glob pattern", GlobOptions::PATHS);
        if let Err(e) = err {
            assert!(e.message.len() < 1200, "{}", e.message);
        }
        let huge = "a*".repeat(70_000);
        let e = glob(&huge, "glob pattern", GlobOptions::PATHS).unwrap_err();
        assert!(e.message.contains("too long"), "{}", e.message);
        assert!(e.message.contains("140000 characters"), "{}", e.message);
    }

    #[test]
    fn regex_length_and_size_are_bounded() {
        let e = regex(&"a".repeat(MAX_REGEX_CHARS + 1), false).unwrap_err();
        assert!(e.message.contains("too long"), "{}", e.message);
        // Short, but its compiled program is far over the limit.
        let e = regex(r"\w{1000}\w{1000}\w{1000}", false).unwrap_err();
        assert!(
            e.message.contains("invalid regular expression"),
            "{}",
            e.message
        );
        assert!(e.message.len() < 1000, "{}", e.message);
    }

    #[test]
    fn too_many_globs_are_refused() {
        let many = vec!["*.rs"; MAX_GLOBS + 1];
        let e = globs(&many, "exclude pattern", GlobOptions::PATHS).unwrap_err();
        assert!(e.message.contains("at most 1000"), "{}", e.message);
    }
}
