//! One shell word as written: what the shell does to it before the program sees it.
//!
//! Rules and the read-only check judge the words a program receives. That is only
//! possible when the word is a literal once quotes are removed: `'rm'`, `r"m"`, `\rm`
//! and `$'\x72m'` are all `rm`, but `$x`, `${x}`, `` `x` ``, `/usr/bin/[r]m` or
//! `{rm,x}` become something only the running shell knows. [`shape`] says which, so a
//! caller can refuse to vouch for what it cannot read (and name why).

/// What the shell makes of a word besides removing its quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WordShape {
    /// Quote removal alone gives the word ([`super::unquote`] is exact for it).
    Literal,
    /// Unquoted `*`, `?`, `[…]`, an extended glob or a `{a,b}` brace list: the word
    /// becomes the names of files (or several words).
    Pattern,
    /// A parameter, command or arithmetic expansion (`$x`, `${x}`, `$(…)`, `` `…` ``,
    /// `$((…))`), unquoted or inside double quotes.
    Expansion,
}

impl WordShape {
    /// A phrase for messages: "a variable or command expansion", "a glob pattern".
    pub(crate) fn describe(self) -> &'static str {
        match self {
            WordShape::Literal => "a literal word",
            WordShape::Pattern => "a glob or brace pattern (it becomes file names)",
            WordShape::Expansion => "an expansion (its value is only known when it runs)",
        }
    }
}

/// The shape of the word `raw`, as written in the command (quotes kept).
pub(crate) fn shape(raw: &str) -> WordShape {
    let bytes = raw.as_bytes();
    let mut pattern = false;
    let mut i = 0;
    let mut in_double = false;
    // Each check below looks ahead; these keep the whole scan linear in the word (a
    // word of fifty thousand `{` or `[` must not cost fifty thousand scans).
    let last_bracket = bytes.iter().rposition(|b| *b == b']');
    let mut braces_judged_to = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'\\' => i += 1,
            b'\'' if !in_double => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'\'' {
                    i += 1;
                }
            }
            b'"' => in_double = !in_double,
            b'`' => return WordShape::Expansion,
            // Process substitution: `<(…)` and `>(…)` become a descriptor's path.
            b'<' | b'>' if !in_double && bytes.get(i + 1) == Some(&b'(') => {
                return WordShape::Expansion;
            }
            b'$' => match bytes.get(i + 1) {
                // `$'…'` is ANSI-C quoting and `$"…"` a translated string: quotes.
                Some(b'\'') if !in_double => {
                    i += 2;
                    while i < bytes.len() && bytes[i] != b'\'' {
                        if bytes[i] == b'\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                }
                Some(b'"') if !in_double => {}
                Some(c) if c.is_ascii_alphanumeric() || b"_{(@*#?$!-".contains(c) => {
                    return WordShape::Expansion;
                }
                _ => {}
            },
            b'*' | b'?' if !in_double => pattern = true,
            // A `[` is a bracket expression only with a `]` after it (`[` and `[[` alone
            // are the test commands).
            b'[' if !in_double && last_bracket.is_some_and(|last| last > i) => pattern = true,
            b'{' if !in_double && i >= braces_judged_to => match braces_expand(&bytes[i..]) {
                (true, _) => pattern = true,
                // A later `{` before the same `}` holds less: it does not expand either.
                (false, end) => braces_judged_to = i + end,
            },
            _ => {}
        }
        i += 1;
    }
    if pattern {
        WordShape::Pattern
    } else {
        WordShape::Literal
    }
}

/// Whether the text from an unquoted `{` holds a `,` or `..` before its `}`: a brace
/// expansion (`{a,b}`, `{1..3}`), which turns one word into several; and where that `}`
/// is (the end of the text when there is none).
fn braces_expand(from_brace: &[u8]) -> (bool, usize) {
    let Some(end) = from_brace.iter().position(|b| *b == b'}') else {
        return (false, from_brace.len());
    };
    let inner = &from_brace[1..end];
    let expands = inner.contains(&b',') || inner.windows(2).any(|w| w == b"..");
    (expands, end)
}

/// Whether a pattern word could expand to a name that starts with `-` (and so be read
/// as an option): its first character is a glob character, not a literal.
pub(crate) fn pattern_may_start_with_dash(raw: &str) -> bool {
    matches!(
        raw.as_bytes().first(),
        Some(b'*' | b'?' | b'[' | b'{' | b'@' | b'+' | b'!')
    )
}

/// The text of an ANSI-C quoted string (`$'…'`) from just after its opening quote;
/// `chars` is left after the closing quote. Escapes as bash's `ansicstr` reads them.
pub(crate) fn ansi_c(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, out: &mut String) {
    while let Some(c) = chars.next() {
        match c {
            '\'' => return,
            '\\' => ansi_c_escape(chars, out),
            other => out.push(other),
        }
    }
}

fn ansi_c_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, out: &mut String) {
    let Some(c) = chars.next() else {
        out.push('\\');
        return;
    };
    let simple = match c {
        'a' => Some('\x07'),
        'b' => Some('\x08'),
        'e' | 'E' => Some('\x1b'),
        'f' => Some('\x0c'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'v' => Some('\x0b'),
        '\\' | '\'' | '"' | '?' => Some(c),
        _ => None,
    };
    if let Some(s) = simple {
        out.push(s);
        return;
    }
    match c {
        '0'..='7' => {
            let mut value = c.to_digit(8).unwrap_or(0);
            for _ in 0..2 {
                match chars.peek().and_then(|d| d.to_digit(8)) {
                    Some(d) => {
                        value = value * 8 + d;
                        chars.next();
                    }
                    None => break,
                }
            }
            push_code(out, value & 0xff);
        }
        'x' => push_hex(chars, out, 2, "\\x"),
        'u' => push_hex(chars, out, 4, "\\u"),
        'U' => push_hex(chars, out, 8, "\\U"),
        'c' => match chars.next() {
            Some(ctl) => push_code(out, u32::from(ctl) & 0x1f),
            None => out.push_str("\\c"),
        },
        other => {
            // bash keeps an unknown escape as written.
            out.push('\\');
            out.push(other);
        }
    }
}

fn push_hex(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    out: &mut String,
    max: usize,
    written: &str,
) {
    let mut value = 0u32;
    let mut digits = 0;
    while digits < max {
        match chars.peek().and_then(|d| d.to_digit(16)) {
            Some(d) => {
                value = value * 16 + d;
                digits += 1;
                chars.next();
            }
            None => break,
        }
    }
    if digits == 0 {
        out.push_str(written);
    } else {
        push_code(out, value);
    }
}

fn push_code(out: &mut String, value: u32) {
    out.push(char::from_u32(value).unwrap_or(char::REPLACEMENT_CHARACTER));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::command_parse::unquote;

    #[test]
    fn shapes_of_words() {
        for (raw, want) in [
            ("rm", WordShape::Literal),
            ("'rm'", WordShape::Literal),
            ("r\"m\"", WordShape::Literal),
            ("\\rm", WordShape::Literal),
            ("$'\\x72m'", WordShape::Literal),
            ("'$x'", WordShape::Literal),
            ("\\$x", WordShape::Literal),
            ("a$", WordShape::Literal),
            ("$x", WordShape::Expansion),
            ("\"$x\"", WordShape::Expansion),
            ("${x}", WordShape::Expansion),
            ("r$(echo m)", WordShape::Expansion),
            ("`echo rm`", WordShape::Expansion),
            ("$((1))", WordShape::Expansion),
            ("<(echo rm)", WordShape::Expansion),
            ("/usr/bin/[r]m", WordShape::Pattern),
            ("r?", WordShape::Pattern),
            ("{rm,x}", WordShape::Pattern),
            ("r{m,}", WordShape::Pattern),
            ("\"[r]m\"", WordShape::Literal),
            ("'*'", WordShape::Literal),
            ("{}", WordShape::Literal),
            ("[", WordShape::Literal),
            ("[[", WordShape::Literal),
        ] {
            assert_eq!(shape(raw), want, "{raw}");
        }
    }

    #[test]
    fn ansi_c_strings_are_read_as_bash_reads_them() {
        for (raw, want) in [
            ("$'\\x72m'", "rm"),
            ("$'\\162m'", "rm"),
            ("$'\\u0072m'", "rm"),
            ("$'\\U00000072m'", "rm"),
            ("$'r\\m'", "r\\m"),
            ("$'a\\'b'", "a'b"),
            ("$'\\cA'", "\u{1}"),
            ("r$'m'", "rm"),
        ] {
            assert_eq!(unquote(raw), want, "{raw}");
        }
    }
}
