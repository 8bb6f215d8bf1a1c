//! How a file name is written in a listing the model reads.
//!
//! A name may hold any byte but `/` and NUL: a newline in a name would start a new
//! line of `glob`'s list or forge a `--- path ---` header in `read_many_files`; an
//! escape sequence would colour a terminal; a right-to-left override would show the
//! name reversed. Every listing (`list_directory`, `glob`, `grep_search`,
//! `read_many_files`) writes names through [`escaped`].
//!
//! The rule is Git's (`core.quotePath`): an ordinary name is written as it is, so the
//! model can pass it back unchanged; a name with a control character, an invisible
//! direction or line-separator character, or bytes that are not UTF-8 is written in
//! double quotes with C-style escapes (`"a\nb"`, `"\x1b[31m"`, `"\xff"`, `"\u{202e}"`),
//! and `"` and `\` inside it are escaped too, so a quoted name is never ambiguous.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use toolbelt_core::WorkspaceRoots;

/// Characters that are shown escaped besides the control characters: they change how
/// the text around them is displayed without being visible.
fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}' | '\u{feff}'
    )
}

fn needs_escape(c: char) -> bool {
    c.is_control() || is_invisible_format(c)
}

/// A path for a listing: as it is when ordinary, else quoted with escapes.
pub(crate) fn escaped(path: &Path) -> String {
    escaped_os(path.as_os_str())
}

/// `real` relative to the workspace root that holds it (the path itself when outside
/// every root), escaped: [`WorkspaceRoots::display_relative`] for listings.
pub(crate) fn escaped_relative(roots: &WorkspaceRoots, real: &Path) -> String {
    match roots
        .root_of(real)
        .and_then(|root| real.strip_prefix(root).ok())
    {
        Some(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Some(rel) => escaped(rel),
        None => escaped(real),
    }
}

/// A name (or any OS string) for a listing, by the same rule as [`escaped`].
pub(crate) fn escaped_os(name: &OsStr) -> String {
    let bytes = name.as_bytes();
    if let Ok(text) = std::str::from_utf8(bytes)
        && !text.chars().any(needs_escape)
    {
        return text.to_string();
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_ascii_control() => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                c if needs_escape(c) => {
                    let _ = write!(out, "\\u{{{:x}}}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::*;

    #[test]
    fn names_are_escaped_only_when_they_need_it() {
        let cases: &[(&[u8], &str)] = &[
            (b"src/main.rs", "src/main.rs"),
            (b"with space.txt", "with space.txt"),
            ("caf\u{e9}.md".as_bytes(), "caf\u{e9}.md"),
            (br"back\slash", r"back\slash"),
            (b"a\nb", r#""a\nb""#),
            (b"tab\there", r#""tab\there""#),
            (b"\x1b[31mred", r#""\x1b[31mred""#),
            (b"del\x7f", r#""del\x7f""#),
            (b"bad\xffutf8", r#""bad\xffutf8""#),
            ("evil\u{202e}txt.exe".as_bytes(), r#""evil\u{202e}txt.exe""#),
            (b"quote\"and\\\n", r#""quote\"and\\\n""#),
            ("line\u{2028}sep".as_bytes(), r#""line\u{2028}sep""#),
        ];
        for (raw, shown) in cases {
            assert_eq!(escaped_os(OsStr::from_bytes(raw)), *shown, "{raw:?}");
        }
    }
}
