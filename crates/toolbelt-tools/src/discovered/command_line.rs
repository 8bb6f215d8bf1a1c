//! How `tools.discoveryCommand` and `tools.callCommand` become a program and its arguments.
//!
//! The line is split into words the way a POSIX shell splits them (quotes, backslashes)
//! and run without a shell, as Qwen Code does. A shell would add what a settings file
//! should not get by accident: globbing, variables, several commands. Yet a line such as
//! `touch x; echo []` reads like a shell command, and run as one program it would pass
//! `x;` as an argument to `touch` and not run the second command at all. So shell syntax
//! outside quotes is an error that says what was found and how to ask for a shell
//! explicitly (`sh -c '...'`), which then works as written.

/// Why [`split_command`] refused a command line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandLineError {
    /// Shell syntax outside quotes (what was found), and the line quoted for `sh -c`.
    #[error(
        "{syntax} is shell syntax, but the command runs without a shell (one program and \
         its arguments). To run it through a shell, write: sh -c {quoted}"
    )]
    ShellSyntax {
        /// What was found, described.
        syntax: String,
        /// The whole line, quoted for a shell.
        quoted: String,
    },
    /// No words at all.
    #[error("the command is empty")]
    Empty,
    /// A quote that is not closed.
    #[error("unbalanced quotes in the command line")]
    UnbalancedQuotes,
}

/// The words of `command`, or why it cannot run without a shell.
pub fn split_command(command: &str) -> Result<Vec<String>, CommandLineError> {
    if let Some(syntax) = shell_syntax(command) {
        let quoted = shlex::try_quote(command)
            .map(|q| q.into_owned())
            .unwrap_or_else(|_| format!("'{command}'"));
        return Err(CommandLineError::ShellSyntax { syntax, quoted });
    }
    match shlex::split(command) {
        Some(argv) if !argv.is_empty() => Ok(argv),
        Some(_) => Err(CommandLineError::Empty),
        None => Err(CommandLineError::UnbalancedQuotes),
    }
}

/// The first piece of shell syntax outside single quotes, described: operators and
/// redirections, subshells, substitutions and variables (also inside double quotes,
/// where a shell expands them), comments and `~`.
fn shell_syntax(command: &str) -> Option<String> {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
    }
    let mut quote = Quote::None;
    let mut word_start = true;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match quote {
            Quote::Single => {
                if c == '\'' {
                    quote = Quote::None;
                }
                continue;
            }
            Quote::Double => {
                match c {
                    '"' => quote = Quote::None,
                    '\\' => {
                        chars.next();
                    }
                    '$' => return Some("`$` (a variable or a command substitution)".into()),
                    '`' => return Some("`` ` `` (a command substitution)".into()),
                    _ => {}
                }
                continue;
            }
            Quote::None => {}
        }
        let at_word_start = word_start;
        word_start = c.is_whitespace();
        match c {
            '\'' => quote = Quote::Single,
            '"' => quote = Quote::Double,
            '\\' => {
                chars.next();
            }
            ';' | '|' | '&' => return Some(format!("`{c}` (a command separator)")),
            '<' | '>' => return Some(format!("`{c}` (a redirection)")),
            '(' | ')' => return Some(format!("`{c}` (a subshell)")),
            '$' => return Some("`$` (a variable or a command substitution)".into()),
            '`' => return Some("`` ` `` (a command substitution)".into()),
            '\n' => return Some("a line break (a command separator)".into()),
            '#' if at_word_start => return Some("`#` (a comment)".into()),
            '~' if at_word_start => return Some("`~` (the home directory)".into()),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_command_lines_split_into_words() {
        for (line, words) in [
            (
                "python3 tools.py discover",
                vec!["python3", "tools.py", "discover"],
            ),
            ("'my tool' --x \"a b\"", vec!["my tool", "--x", "a b"]),
            ("echo 'a;b|c$d'", vec!["echo", "a;b|c$d"]),
            ("echo a\\;b", vec!["echo", "a;b"]),
            (
                "tool --pattern=a#b x~y",
                vec!["tool", "--pattern=a#b", "x~y"],
            ),
            (
                "sh -c 'touch x; echo []'",
                vec!["sh", "-c", "touch x; echo []"],
            ),
        ] {
            assert_eq!(split_command(line).unwrap(), words, "{line}");
        }
    }

    #[test]
    fn shell_syntax_is_an_error_that_shows_the_shell_form() {
        for (line, found) in [
            ("touch x; echo []", "`;`"),
            ("a | b", "`|`"),
            ("a && b", "`&`"),
            ("a > out", "`>`"),
            ("a < in", "`<`"),
            ("(a)", "`(`"),
            ("echo $(id)", "`$`"),
            ("echo \"$HOME_UNSET\"", "`$`"),
            ("echo `id`", "command substitution"),
            ("a\nb", "line break"),
            ("a # comment", "`#`"),
            ("~/bin/tool", "`~`"),
        ] {
            let err = split_command(line).unwrap_err();
            assert!(
                matches!(err, CommandLineError::ShellSyntax { .. }),
                "{err:?}"
            );
            let err = err.to_string();
            assert!(err.contains(found), "{line}: {err}");
            assert!(err.contains("sh -c "), "{line}: {err}");
        }
        assert_eq!(split_command("  "), Err(CommandLineError::Empty));
        assert_eq!(
            split_command("echo 'open"),
            Err(CommandLineError::UnbalancedQuotes)
        );
        let err = split_command("touch x; echo []").unwrap_err().to_string();
        assert!(err.ends_with("sh -c 'touch x; echo []'"), "{err}");
    }
}
