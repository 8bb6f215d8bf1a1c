//! Splits a when-clause into tokens, each with the byte offset where it starts.
//!
//! The lexer never fails: a character it cannot use becomes an [`TokenKind::Error`]
//! token, and the parser reports it only if it reaches it. That lets the parser's regex
//! recovery swallow stray `|` or `=` inside an unescaped regex.

/// What a token is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenKind {
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `!`
    Neg,
    /// `==`, or `===` when `triple`.
    Eq {
        /// Written with three characters.
        triple: bool,
    },
    /// `!=`, or `!==` when `triple`.
    NotEq {
        /// Written with three characters.
        triple: bool,
    },
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
    /// `=~`
    RegexOp,
    /// `/source/flags`
    RegexStr {
        /// The text between the slashes, escapes kept.
        source: String,
        /// The flag letters after the closing slash.
        flags: String,
    },
    /// `'text'` (no escapes); the lexeme without quotes.
    QuotedStr(String),
    /// A bare key or value.
    Str(String),
    /// `true`
    True,
    /// `false`
    False,
    /// `in`
    In,
    /// `not`
    Not,
    /// `&&`
    And,
    /// `||`
    Or,
    /// A character or run the lexer could not use.
    Error(LexError),
    /// End of input.
    Eof,
}

/// Why the lexer made an error token.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LexError {
    /// A lone `=`.
    LoneEquals,
    /// A lone `&`.
    LoneAmpersand,
    /// A lone `|`.
    LonePipe,
    /// `'` without its closing quote.
    UnterminatedQuote,
    /// `/` without its closing slash.
    UnterminatedRegex,
}

/// One token and where it is in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// What the token is.
    pub kind: TokenKind,
    /// Byte offset of its first character.
    pub offset: usize,
    /// Byte offset just past its last character.
    pub end: usize,
}

/// Characters that may appear in a bare key or value.
fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || "_<>-./\\:*?+[]^,#@;\"%$".contains(c)
        || (!c.is_ascii() && c.is_alphabetic())
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n' | '\u{a0}')
}

/// Tokens of `input`, always ending with [`TokenKind::Eof`].
pub fn tokenize(input: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = input.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let single = |kind| (kind, start + c.len_utf8());
        let (kind, end) = match c {
            c if is_space(c) => continue,
            '(' => single(TokenKind::LParen),
            ')' => single(TokenKind::RParen),
            '!' | '=' if next == Some('=') => {
                chars.next();
                let triple = chars.peek().map(|&(_, n)| n) == Some('=');
                if triple {
                    chars.next();
                }
                let kind = if c == '!' {
                    TokenKind::NotEq { triple }
                } else {
                    TokenKind::Eq { triple }
                };
                (kind, start + if triple { 3 } else { 2 })
            }
            '!' => single(TokenKind::Neg),
            '=' if next == Some('~') => {
                chars.next();
                (TokenKind::RegexOp, start + 2)
            }
            '=' => single(TokenKind::Error(LexError::LoneEquals)),
            '<' | '>' if next == Some('=') => {
                chars.next();
                let kind = if c == '<' {
                    TokenKind::LtEq
                } else {
                    TokenKind::GtEq
                };
                (kind, start + 2)
            }
            '<' => single(TokenKind::Lt),
            '>' => single(TokenKind::Gt),
            '&' | '|' if next == Some(c) => {
                chars.next();
                let kind = if c == '&' {
                    TokenKind::And
                } else {
                    TokenKind::Or
                };
                (kind, start + 2)
            }
            '&' => single(TokenKind::Error(LexError::LoneAmpersand)),
            '|' => single(TokenKind::Error(LexError::LonePipe)),
            '\'' => quoted(input, start, &mut chars),
            '/' => regex_literal(input, start, &mut chars),
            c if is_key_char(c) => word(input, start, c, &mut chars),
            // Anything else (`{`, `~`, a backtick) is dropped, as VS Code does.
            _ => continue,
        };
        tokens.push(Token {
            kind,
            offset: start,
            end,
        });
    }
    tokens.push(Token {
        kind: TokenKind::Eof,
        offset: input.len(),
        end: input.len(),
    });
    tokens
}

/// The characters of a token being read, with their byte offsets.
type Chars<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

/// A `'quoted'` string starting at the quote at `start`.
fn quoted(input: &str, start: usize, chars: &mut Chars<'_>) -> (TokenKind, usize) {
    match input[start + 1..].find('\'') {
        Some(len) => {
            let end = start + 1 + len + 1;
            while chars.peek().is_some_and(|&(i, _)| i < end) {
                chars.next();
            }
            let text = input[start + 1..end - 1].to_owned();
            (TokenKind::QuotedStr(text), end)
        }
        None => {
            while chars.next().is_some() {}
            (TokenKind::Error(LexError::UnterminatedQuote), input.len())
        }
    }
}

/// A key, a value or a keyword (`true`, `in`, ...) starting with `c` at `start`.
fn word(input: &str, start: usize, c: char, chars: &mut Chars<'_>) -> (TokenKind, usize) {
    let mut end = start + c.len_utf8();
    while let Some(&(i, n)) = chars.peek() {
        if !is_key_char(n) {
            break;
        }
        end = i + n.len_utf8();
        chars.next();
    }
    let kind = match &input[start..end] {
        "true" => TokenKind::True,
        "false" => TokenKind::False,
        "in" => TokenKind::In,
        "not" => TokenKind::Not,
        word => TokenKind::Str(word.to_owned()),
    };
    (kind, end)
}

/// A `/source/flags` literal starting at the `/` at `start`.
fn regex_literal(
    input: &str,
    start: usize,
    chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>,
) -> (TokenKind, usize) {
    let mut in_class = false;
    let mut escaped = false;
    while let Some((i, c)) = chars.next() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '[' {
            in_class = true;
        } else if c == ']' {
            in_class = false;
        } else if c == '/' && !in_class {
            let source = input[start + 1..i].to_owned();
            let mut end = i + 1;
            while let Some(&(j, f)) = chars.peek() {
                if !"igsmyu".contains(f) {
                    break;
                }
                end = j + 1;
                chars.next();
            }
            let flags = input[i + 1..end].to_owned();
            return (TokenKind::RegexStr { source, flags }, end);
        }
    }
    (TokenKind::Error(LexError::UnterminatedRegex), input.len())
}
