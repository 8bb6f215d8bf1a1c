//! Recursive descent over the tokens of [`super::lexer`]:
//!
//! ```text
//! or      ::= and ('||' and)*
//! and     ::= term ('&&' term)*
//! term    ::= '!' (KEY | 'true' | 'false' | '(' or ')') | primary
//! primary ::= 'true' | 'false' | '(' or ')' | KEY '=~' REGEX
//!           | KEY [('==' | '!=' | '<' | '<=' | '>' | '>=' | 'in' | 'not' 'in') value]
//! ```

use super::lexer::{LexError, Token, TokenKind, tokenize};
use super::{CompareOp, Expr, WhenRegex};

/// Parentheses nest at most this deep, so hostile input cannot overflow the stack.
const MAX_DEPTH: usize = 64;

/// How to parse.
#[derive(Debug, Clone, Copy, Default)]
pub struct ParseOptions {
    /// After `=~`, accept an unescaped regex (`/src//`) by joining the tokens up to the
    /// next `&&`, `||` or unbalanced `)`, and a quoted `'/re/i'`. VS Code's `Parser` does
    /// this; manifests (`ContextKeyExpr.deserialize`) do not.
    pub regex_recovery: bool,
}

/// A clause that does not parse, with the byte offset where it went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct WhenError {
    /// Byte offset into the clause.
    pub offset: usize,
    /// What went wrong.
    pub kind: WhenErrorKind,
}

/// What went wrong in a clause; messages follow VS Code's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WhenErrorKind {
    /// The clause is the empty string.
    #[error("Empty context key expression")]
    Empty,
    /// The clause ended where more was needed.
    #[error("Unexpected end of expression")]
    UnexpectedEnd,
    /// A token where it cannot be.
    #[error("Unexpected token '{token}' at offset {offset}")]
    UnexpectedToken {
        /// The token's text.
        token: String,
        /// Its byte offset.
        offset: usize,
    },
    /// A token after a complete expression.
    #[error(
        "Unexpected token '{token}' at offset {offset}. Did you forget to put && or || before the token?"
    )]
    Leftover {
        /// The token's text.
        token: String,
        /// Its byte offset.
        offset: usize,
    },
    /// A `(` not closed.
    #[error("Expected ')' but got '{token}' at offset {offset}")]
    ExpectedRParen {
        /// The token found instead.
        token: String,
        /// Its byte offset.
        offset: usize,
    },
    /// `not` not followed by `in`.
    #[error("Expected 'in' after 'not' at offset {offset}")]
    ExpectedIn {
        /// Byte offset of the token after `not`.
        offset: usize,
    },
    /// `=~` not followed by a `/regex/`.
    #[error("Expected a regular expression after '=~' at offset {offset}")]
    ExpectedRegex {
        /// Byte offset of the token after `=~`.
        offset: usize,
    },
    /// A regex the engine refused.
    #[error("Invalid regular expression /{pattern}/ at offset {offset}: {message}")]
    InvalidRegex {
        /// The regex source.
        pattern: String,
        /// Byte offset of the regex.
        offset: usize,
        /// The engine's message.
        message: String,
    },
    /// A character the lexer could not use.
    #[error("Unexpected '{token}' at offset {offset}.{}", lex_hint(.error))]
    Lex {
        /// The text of the bad token.
        token: String,
        /// Its byte offset.
        offset: usize,
        /// What was wrong.
        error: LexError,
    },
    /// Parentheses nested too deeply.
    #[error("Expression nested too deeply at offset {offset}")]
    TooDeep {
        /// Byte offset of the `(` too many.
        offset: usize,
    },
}

fn lex_hint(error: &LexError) -> &'static str {
    match error {
        LexError::LoneEquals => " Did you mean == or =~?",
        LexError::LoneAmpersand => " Did you mean &&?",
        LexError::LonePipe => " Did you mean ||?",
        LexError::UnterminatedQuote => " Missing closing quote (').",
        LexError::UnterminatedRegex => {
            " Did you forget to escape the '/' (slash) character? Put two backslashes before it to escape, e.g., '\\\\/'."
        }
    }
}

/// Parses a clause the way manifests are read: a regex after `=~` must be a proper
/// `/…/` literal.
pub fn parse(input: &str) -> Result<Expr, WhenError> {
    parse_with(input, ParseOptions::default())
}

/// Parses a clause with `options`.
pub fn parse_with(input: &str, options: ParseOptions) -> Result<Expr, WhenError> {
    if input.is_empty() {
        return Err(WhenError {
            offset: 0,
            kind: WhenErrorKind::Empty,
        });
    }
    let mut parser = Parser {
        input,
        tokens: tokenize(input),
        pos: 0,
        depth: 0,
        options,
    };
    let expr = parser.or()?;
    let token = parser.peek();
    if token.kind != TokenKind::Eof {
        return Err(parser.error_at(token, true));
    }
    Ok(expr)
}

struct Parser<'a> {
    input: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
    options: ParseOptions,
}

impl Parser<'_> {
    fn peek(&self) -> Token {
        // The last token is always Eof and is never consumed.
        let i = self.pos.min(self.tokens.len().saturating_sub(1));
        self.tokens.get(i).cloned().unwrap_or(Token {
            kind: TokenKind::Eof,
            offset: self.input.len(),
            end: self.input.len(),
        })
    }

    fn advance(&mut self) -> Token {
        let token = self.peek();
        if token.kind != TokenKind::Eof {
            self.pos += 1;
        }
        token
    }

    fn text(&self, token: &Token) -> String {
        self.input
            .get(token.offset..token.end)
            .unwrap_or_default()
            .to_owned()
    }

    /// The error for meeting `token`: its lexer error if it is one, else "unexpected".
    fn error_at(&self, token: Token, leftover: bool) -> WhenError {
        let offset = token.offset;
        let text = self.text(&token);
        let kind = match token.kind {
            TokenKind::Eof => WhenErrorKind::UnexpectedEnd,
            TokenKind::Error(error) => WhenErrorKind::Lex {
                token: text,
                offset,
                error,
            },
            _ if leftover => WhenErrorKind::Leftover {
                token: text,
                offset,
            },
            _ => WhenErrorKind::UnexpectedToken {
                token: text,
                offset,
            },
        };
        WhenError { offset, kind }
    }

    fn or(&mut self) -> Result<Expr, WhenError> {
        let mut children = vec![self.and()?];
        while self.peek().kind == TokenKind::Or {
            self.advance();
            children.push(self.and()?);
        }
        Ok(Expr::or(children))
    }

    fn and(&mut self) -> Result<Expr, WhenError> {
        let mut children = vec![self.term()?];
        while self.peek().kind == TokenKind::And {
            self.advance();
            children.push(self.term()?);
        }
        Ok(Expr::and(children))
    }

    fn term(&mut self) -> Result<Expr, WhenError> {
        if self.peek().kind != TokenKind::Neg {
            return self.primary();
        }
        self.advance();
        let token = self.peek();
        match &token.kind {
            TokenKind::Str(key) => {
                self.advance();
                Ok(Expr::not(key))
            }
            TokenKind::True => {
                self.advance();
                Ok(Expr::False)
            }
            TokenKind::False => {
                self.advance();
                Ok(Expr::True)
            }
            TokenKind::LParen => Ok(self.parenthesized()?.negate()),
            _ => Err(self.error_at(token, false)),
        }
    }

    fn parenthesized(&mut self) -> Result<Expr, WhenError> {
        let open = self.advance();
        if self.depth >= MAX_DEPTH {
            return Err(WhenError {
                offset: open.offset,
                kind: WhenErrorKind::TooDeep {
                    offset: open.offset,
                },
            });
        }
        self.depth += 1;
        let expr = self.or();
        self.depth -= 1;
        let expr = expr?;
        let close = self.peek();
        match close.kind {
            TokenKind::RParen => {
                self.advance();
                Ok(expr)
            }
            TokenKind::Error(_) | TokenKind::Eof => Err(self.error_at(close, false)),
            _ => Err(WhenError {
                offset: close.offset,
                kind: WhenErrorKind::ExpectedRParen {
                    token: self.text(&close),
                    offset: close.offset,
                },
            }),
        }
    }

    fn primary(&mut self) -> Result<Expr, WhenError> {
        let token = self.peek();
        let key = match &token.kind {
            TokenKind::True => {
                self.advance();
                return Ok(Expr::True);
            }
            TokenKind::False => {
                self.advance();
                return Ok(Expr::False);
            }
            TokenKind::LParen => return self.parenthesized(),
            TokenKind::Str(key) => key.clone(),
            _ => return Err(self.error_at(token, false)),
        };
        self.advance();
        let op = self.peek();
        let compare = |op| Some(op);
        let comparison = match op.kind {
            TokenKind::RegexOp => {
                self.advance();
                return self.regex(&key);
            }
            TokenKind::Eq { .. } | TokenKind::NotEq { .. } => {
                self.advance();
                let negated = matches!(op.kind, TokenKind::NotEq { .. });
                let (value, keyword) = self.value();
                let expr = match keyword {
                    Some(b) => {
                        if b {
                            Expr::defined(&key)
                        } else {
                            Expr::not(&key)
                        }
                    }
                    None => Expr::equals(&key, &value),
                };
                return Ok(if negated { expr.negate() } else { expr });
            }
            TokenKind::In => {
                self.advance();
                let (list_key, _) = self.value();
                return Ok(Expr::In { key, list_key });
            }
            TokenKind::Not => {
                self.advance();
                let next = self.peek();
                if next.kind != TokenKind::In {
                    return Err(WhenError {
                        offset: next.offset,
                        kind: WhenErrorKind::ExpectedIn {
                            offset: next.offset,
                        },
                    });
                }
                self.advance();
                let (list_key, _) = self.value();
                return Ok(Expr::NotIn { key, list_key });
            }
            TokenKind::Gt => compare(CompareOp::Greater),
            TokenKind::GtEq => compare(CompareOp::GreaterEquals),
            TokenKind::Lt => compare(CompareOp::Smaller),
            TokenKind::LtEq => compare(CompareOp::SmallerEquals),
            _ => None,
        };
        match comparison {
            Some(op) => {
                self.advance();
                let (value, _) = self.value();
                Ok(Expr::compare(&key, op, &value))
            }
            None => Ok(Expr::defined(&key)),
        }
    }

    /// A right-hand side; anything that is not one is `''` and is left for the caller.
    /// The second part is the boolean when the value was a bare `true`/`false`.
    fn value(&mut self) -> (String, Option<bool>) {
        let token = self.peek();
        let value = match token.kind {
            TokenKind::Str(s) | TokenKind::QuotedStr(s) => (s, None),
            TokenKind::True => ("true".to_owned(), Some(true)),
            TokenKind::False => ("false".to_owned(), Some(false)),
            TokenKind::In => ("in".to_owned(), None),
            _ => return (String::new(), None),
        };
        self.advance();
        value
    }

    fn regex(&mut self, key: &str) -> Result<Expr, WhenError> {
        let token = self.peek();
        let (source, flags) = match &token.kind {
            TokenKind::RegexStr { source, flags } if self.clean_end(1) => {
                self.advance();
                (source.clone(), flags.clone())
            }
            TokenKind::QuotedStr(text) if self.options.regex_recovery => {
                self.advance();
                let inner = text.strip_prefix('/').and_then(|t| t.rsplit_once('/'));
                match inner {
                    Some((source, flags)) => {
                        let flags = if flags.contains('i') { "i" } else { "" };
                        (source.to_owned(), flags.to_owned())
                    }
                    None => (text.clone(), String::new()),
                }
            }
            _ if self.options.regex_recovery && self.text(&token).starts_with('/') => {
                match self.recover_regex() {
                    Some(regex) => regex,
                    None => return Err(self.error_at(token, false)),
                }
            }
            TokenKind::Error(_) => return Err(self.error_at(token, false)),
            _ => {
                return Err(WhenError {
                    offset: token.offset,
                    kind: WhenErrorKind::ExpectedRegex {
                        offset: token.offset,
                    },
                });
            }
        };
        match WhenRegex::new(&source, &flags) {
            Ok(regex) => Ok(Expr::Regex {
                key: key.to_owned(),
                regex,
            }),
            Err(message) => Err(WhenError {
                offset: token.offset,
                kind: WhenErrorKind::InvalidRegex {
                    pattern: source,
                    offset: token.offset,
                    message: message.to_string(),
                },
            }),
        }
    }

    /// Whether the token `ahead` places on ends a regex (`&&`, `||`, `)`, end), or recovery
    /// is off and the literal must be taken as it is.
    fn clean_end(&self, ahead: usize) -> bool {
        if !self.options.regex_recovery {
            return true;
        }
        let i = (self.pos + ahead).min(self.tokens.len().saturating_sub(1));
        self.tokens.get(i).is_none_or(|t| {
            matches!(
                t.kind,
                TokenKind::And | TokenKind::Or | TokenKind::RParen | TokenKind::Eof
            )
        })
    }

    /// Joins the raw text from the current token up to `&&`, `||`, an unbalanced `)` or
    /// the end, and splits it at its last `/` into source and flags; `None` when there is
    /// no closing `/`.
    fn recover_regex(&mut self) -> Option<(String, String)> {
        let start = self.peek().offset;
        let mut end = start;
        let mut depth = 0usize;
        loop {
            let token = self.peek();
            match token.kind {
                TokenKind::And | TokenKind::Or | TokenKind::Eof => break,
                TokenKind::RParen if depth == 0 => break,
                TokenKind::RParen => depth -= 1,
                TokenKind::LParen => depth += 1,
                _ => {}
            }
            end = token.end;
            self.advance();
        }
        let text = self.input.get(start + 1..end).unwrap_or_default();
        let (source, flags) = text.rsplit_once('/')?;
        let flags: String = flags.chars().filter(|c| "igsmyu".contains(*c)).collect();
        Some((source.to_owned(), flags))
    }
}
