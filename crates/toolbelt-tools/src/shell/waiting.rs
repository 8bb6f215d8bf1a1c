//! Commands that wait for input they will never get, and commands that never end.
//!
//! A foreground command has no terminal (it runs under `setsid`) and an empty, closed
//! standard input. A command that asks anyway either fails at once (`read` gets
//! end-of-file, Python raises `EOFError`, sudo says "a terminal is required") or prints
//! its prompt and waits for ever (a script that loops on its prompt, a tool that opened
//! something else to read). Either way the model learned nothing but "exit 1" or "timed
//! out", so the result names what was waited for and how to avoid it.
//!
//! Two questions are asked of the *tail* of the output (the last few KiB, ANSI-free):
//!
//! - [`input_wait`]: does it show a prompt, or a program saying it could not read one?
//!   The foreground loop asks it when the output has been quiet for
//!   `tools.shell.inputWaitMs` (the command is then ended: it waits for ever) and once the
//!   command ended (the result gets a note).
//! - [`ready_line`]: did the output settle on a line saying the command is serving
//!   ("listening on", "ready", "watching", "Local:")? Asked after
//!   `tools.shell.readySettleMs` of quiet: such a command is moved to the background
//!   rather than killed at its timeout, as Claude Code does with dev servers.
//!
//! Both are heuristics over text, so they look only at the last lines, and a prompt
//! must be the unfinished last line (no newline after it): a log line that happens to
//! contain "password" does not end anything.

use std::time::Duration;

use tokio::time::Instant;
use toolbelt_config::settings::ShellSettings;

use super::command_parse::ParsedCommand;
use super::output::clean_text;

/// How much of the end of the output the questions look at.
pub(crate) const TAIL_BYTES: usize = 4096;

/// What a command waited for, and how the model can avoid the wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InputWait {
    /// What it waited for ("a password (sudo)").
    pub what: String,
    /// How to run it without waiting.
    pub avoid: &'static str,
}

/// Messages programs print when they could not read input, each with what it was and
/// the way around it. Matched case-insensitively anywhere in the tail.
const MESSAGES: &[(&str, &str, &str)] = &[
    (
        "waiting for your editor",
        "an editor (git)",
        "pass the message with -m or -F, or set GIT_EDITOR=true to keep the prepared one",
    ),
    (
        "aborting commit due to empty commit message",
        "an editor for the commit message (git)",
        "pass the message with -m \"...\" (or -F file); --no-edit keeps a prepared one",
    ),
    (
        "there was a problem with the editor",
        "an editor (git)",
        "pass the message with -m or -F, or --no-edit; GIT_EDITOR=true keeps the prepared text",
    ),
    (
        "toolbelt: no editor",
        "an editor for the rebase todo list (git rebase -i)",
        "set GIT_SEQUENCE_EDITOR to a command that edits the todo file (e.g. a sed script), or rebase without -i",
    ),
    (
        "[sudo] password",
        "a password (sudo)",
        "toolbelt cannot type a password: do it without sudo, or ask the person to run it",
    ),
    (
        "sudo: a terminal is required",
        "a password (sudo)",
        "toolbelt cannot type a password: do it without sudo, or ask the person to run it",
    ),
    (
        "sudo: a password is required",
        "a password (sudo)",
        "toolbelt cannot type a password: do it without sudo, or ask the person to run it",
    ),
    (
        "enter passphrase",
        "a key passphrase",
        "use a key without a passphrase or one loaded in an agent (ssh-agent), or ask the person",
    ),
    (
        "eoferror",
        "a line on standard input (input())",
        "pass the values as arguments, or pipe them in: printf 'answer\\n' | command",
    ),
    (
        "terminal prompts disabled",
        "credentials (git)",
        "use a credential helper, an SSH remote with an agent, or a URL that needs none",
    ),
    (
        "a terminal is required",
        "a terminal",
        "use the command's non-interactive options (--yes, -y, --non-interactive, --batch)",
    ),
    (
        "not a terminal",
        "a terminal",
        "use the command's non-interactive options (--yes, -y, --non-interactive, --batch)",
    ),
    (
        "no tty present",
        "a terminal",
        "use the command's non-interactive options (--yes, -y, --non-interactive, --batch)",
    ),
    (
        "/dev/tty",
        "a terminal",
        "use the command's non-interactive options (--yes, -y, --non-interactive, --batch)",
    ),
];

/// What answering a prompt takes, when nothing more precise is known.
pub(crate) const PROMPT_AVOID: &str = "give the answer up front (--yes, -y, a flag or argument, or printf 'answer\\n' | command), or run it with is_background: true";

/// What the tail of a command's output says it waited for. `ended` is whether the
/// command ended on its own with a failure (then a bash `read` in the line that failed
/// silently counts too); a running command is judged by its output only.
pub(crate) fn input_wait(tail: &str, parsed: &ParsedCommand, failed: bool) -> Option<InputWait> {
    // A running command is judged by its unfinished last line only: a finished line that
    // mentions a terminal says nothing about what it does now.
    if !failed && (tail.is_empty() || tail.ends_with('\n')) {
        return None;
    }
    let lower = tail.to_lowercase();
    // Only the last lines: an old message earlier in a long output is not why it ended.
    let recent = last_lines(&lower, if failed { 6 } else { 0 });
    if let Some((_, what, avoid)) = MESSAGES.iter().find(|(m, _, _)| recent.contains(m)) {
        return Some(InputWait {
            what: what.to_string(),
            avoid,
        });
    }
    if let Some(prompt) = prompt_line(tail) {
        let lower = prompt.to_lowercase();
        let what = if lower.contains("password") || lower.contains("passphrase") {
            format!("a password (the prompt `{prompt}`)")
        } else {
            format!("an answer to the prompt `{prompt}`")
        };
        let avoid = if lower.contains("password") || lower.contains("passphrase") {
            "toolbelt cannot type a password: use a token, key or option that needs none, or ask the person"
        } else {
            PROMPT_AVOID
        };
        return Some(InputWait { what, avoid });
    }
    let reads = parsed
        .commands
        .iter()
        .any(|c| c.words.first().is_some_and(|w| w == "read"));
    (failed && reads).then(|| InputWait {
        what: "a line on standard input (bash `read`)".to_string(),
        avoid: "set the value in the command instead (a variable or argument), or pipe it in: printf 'value\\n' | { read x; ...; }",
    })
}

/// The unfinished last line of `tail` when it reads as a prompt: it ends with `:`, `?`,
/// `>` or `›`, offers choices (`[y/N]`, `(yes/no)`), or ends with a default in
/// parentheses after a colon (`package name: (demo)`, npm init's form).
pub(crate) fn prompt_line(tail: &str) -> Option<String> {
    if tail.ends_with('\n') {
        return None;
    }
    let line = tail.rsplit('\n').next()?.trim();
    if line.is_empty() || line.chars().count() > 200 {
        return None;
    }
    let lower = line.to_lowercase();
    let choices = ["[y/n]", "(y/n)", "[yes/no]", "(yes/no)", "[y/n/q]"]
        .iter()
        .any(|c| lower.contains(c));
    let marker = line.ends_with([':', '?', '>', '›']);
    let default = line.ends_with(')') && line.contains(": (");
    (choices || marker || default).then(|| line.to_string())
}

/// Words that, on one of the last lines, say a command is up and serving.
const READY_PHRASES: &[&str] = &[
    "listening on",
    "listening at",
    "listening to",
    "started server",
    "server started",
    "server running",
    "server is running",
    "running at http",
    "running on http",
    "serving at",
    "serving on",
    "serving http",
    "local:",
    "compiled successfully",
    "watching for",
    "press ctrl+c",
    "press ctrl-c",
];

/// Single words that say the same, matched as whole words ("ready", not "already").
const READY_WORDS: &[&str] = &["ready", "watching", "listening"];

/// The line among the last few of `tail` that says the command is ready, if any.
pub(crate) fn ready_line(tail: &str) -> Option<String> {
    let lines: Vec<&str> = tail
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.iter().rev().take(3).find_map(|line| {
        let lower = line.to_lowercase();
        let phrase = READY_PHRASES.iter().any(|p| lower.contains(p));
        let word = lower
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| READY_WORDS.contains(&w));
        (phrase || word).then(|| line.chars().take(200).collect())
    })
}

/// What a quiet spell in a running command's output showed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Quiet {
    /// The output ends in a prompt: the command waits for input it cannot get.
    Waiting(InputWait),
    /// The output settled on this line saying the command is ready (serving, watching).
    Ready(String),
}

/// Watches a running command's output for quiet spells (see the module's documentation):
/// keeps its tail and when it last grew, and says when a look is due.
pub(crate) struct QuietWatch {
    tail: Vec<u8>,
    last_output: Instant,
    input_wait: Option<Duration>,
    ready_settle: Option<Duration>,
    /// Whether the current quiet spell was looked at already, per question.
    input_checked: bool,
    ready_checked: bool,
}

impl QuietWatch {
    /// A watch with the session's thresholds; `may_move` is false where a command cannot
    /// be moved to the background (its jobs would outlive the session, or too many
    /// unasked ones run), so a ready line is not looked for.
    pub(crate) fn new(settings: &ShellSettings, may_move: bool) -> Self {
        let after = |ms: u64| (ms > 0).then(|| Duration::from_millis(ms));
        QuietWatch {
            tail: Vec::new(),
            last_output: Instant::now(),
            input_wait: after(settings.input_wait_ms),
            ready_settle: after(settings.ready_settle_ms).filter(|_| may_move),
            input_checked: false,
            ready_checked: false,
        }
    }

    /// Takes the next chunk of output.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.tail.extend_from_slice(chunk);
        if self.tail.len() > 2 * TAIL_BYTES {
            self.tail.drain(..self.tail.len() - TAIL_BYTES);
        }
        self.last_output = Instant::now();
        self.input_checked = false;
        self.ready_checked = false;
    }

    /// The tail as clean text.
    pub(crate) fn text(&self) -> String {
        let from = self.tail.len().saturating_sub(TAIL_BYTES);
        clean_text(&String::from_utf8_lossy(&self.tail[from..]))
    }

    /// When the next look is due: `None` before any output, or once both questions
    /// were asked of this quiet spell.
    pub(crate) fn next_check(&self) -> Option<Instant> {
        if self.tail.is_empty() {
            return None;
        }
        let input = self.input_wait.filter(|_| !self.input_checked);
        let ready = self.ready_settle.filter(|_| !self.ready_checked);
        [input, ready]
            .into_iter()
            .flatten()
            .min()
            .map(|d| self.last_output + d)
    }

    /// What a command that ended with a failure waited for, by the tail of its output.
    pub(crate) fn failed_waiting(&self, parsed: &ParsedCommand) -> Option<InputWait> {
        input_wait(&self.text(), parsed, true)
    }

    /// Asks the questions that are due.
    pub(crate) fn check(&mut self, parsed: &ParsedCommand) -> Option<Quiet> {
        let quiet = self.last_output.elapsed();
        let text = self.text();
        if !self.input_checked && self.input_wait.is_some_and(|d| quiet >= d) {
            self.input_checked = true;
            if let Some(wait) = input_wait(&text, parsed, false) {
                return Some(Quiet::Waiting(wait));
            }
        }
        if !self.ready_checked && self.ready_settle.is_some_and(|d| quiet >= d) {
            self.ready_checked = true;
            // "Ready to install? [y/N]" is a question, not a server.
            if prompt_line(&text).is_none() {
                return ready_line(&text).map(Quiet::Ready);
            }
        }
        None
    }
}

/// The last `n` lines of `text`.
fn last_lines(text: &str, n: usize) -> &str {
    let mut start = text.len();
    for _ in 0..=n {
        match text[..start].rfind('\n') {
            Some(i) => start = i,
            None => return text,
        }
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::command_parse::parse;

    #[test]
    fn prompts_and_messages_are_recognised() {
        let none = parse("true");
        // (tail, failed, what the result names, or None)
        let table: &[(&str, bool, Option<&str>)] = &[
            (
                "Password: ",
                false,
                Some("a password (the prompt `Password:`)"),
            ),
            ("[sudo] password for me: ", false, Some("a password (sudo)")),
            (
                "Enter passphrase for key '/k': ",
                false,
                Some("a key passphrase"),
            ),
            (
                "package name: (demo) ",
                false,
                Some("an answer to the prompt `package name: (demo)`"),
            ),
            (
                "Proceed? [y/N] ",
                false,
                Some("an answer to the prompt `Proceed? [y/N]`"),
            ),
            (
                "Traceback...\nEOFError: EOF when reading a line\n",
                true,
                Some("a line on standard input (input())"),
            ),
            (
                "hint: Waiting for your editor to close the file...",
                false,
                Some("an editor (git)"),
            ),
            ("building...\n", false, None),
            ("the password was rotated\n", true, None),
            ("50%", false, None),
        ];
        for (tail, failed, want) in table {
            let got = input_wait(tail, &none, *failed).map(|w| w.what);
            assert_eq!(got.as_deref(), *want, "{tail:?}");
        }
        let read = parse("read x; echo $x");
        assert!(input_wait("", &read, true).unwrap().what.contains("`read`"));
        assert!(input_wait("", &read, false).is_none());
    }

    #[test]
    fn ready_lines_are_recognised_as_whole_words() {
        assert!(ready_line("compiling\nlistening on :8080\n").is_some());
        assert!(
            ready_line("  VITE v5  ready in 300 ms\n\n  ➜  Local:   http://localhost:5173/\n")
                .is_some()
        );
        assert!(ready_line("already up to date\n").is_none());
        assert!(ready_line("step 1\nstep 2\n").is_none());
    }
}
