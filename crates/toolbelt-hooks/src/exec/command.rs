//! A `command` hook: a shell string (`bash -c`, or `sh -c` with `"shell": "sh"`; one
//! that needs no shell is run directly, see [`without_shell`]), or a program with `args`
//! and no shell; the input JSON on standard input; the project
//! folder as working directory and as `QWEN_PROJECT_DIR`, `CLAUDE_PROJECT_DIR` and
//! `GEMINI_PROJECT_DIR`; the hook's `env` added.
//!
//! It runs through `toolbelt_process::run`, the same spawning and ending as the
//! discovered and declared tools and the shell tool's `GroupCommand`: its own process
//! group, the owner marker, the guardian. At its time limit, on cancellation, or when its
//! output passes the cap, the whole group is ended, and what it started outside the group
//! (`setsid`, `nohup ... &`) too; when it exits, what it left running is ended. A hook
//! never outlives its call.

use std::ffi::OsString;
use std::path::Path;

use tokio_util::sync::CancellationToken;
use toolbelt_process::run::{RunEnd, RunSpec, run as run_to_end, signal_name};

use super::{OUTPUT_CAP, show_duration};
use crate::config::CommandHook;
use crate::output::{Answer, classify_stdout, stderr_tail};

/// The variables that name the project folder (Qwen Code's, Claude Code's, Gemini
/// CLI's).
pub(crate) const PROJECT_DIR_VARS: [&str; 3] = [
    "QWEN_PROJECT_DIR",
    "CLAUDE_PROJECT_DIR",
    "GEMINI_PROJECT_DIR",
];

/// The words of a shell string that means the same run without a shell, or `None`.
///
/// Starting `bash` costs about 1.3 ms here, more than the rest of a hook's run, and for a
/// string such as `true` or `python3 /path/hook.py --strict` it does nothing but split
/// words and exec the first (`bash -c` with one simple command execs it in place). So a
/// string made only of words of plain characters (letters, digits, `_./,:=+@%-`), with
/// nothing the shell would expand, quote, redirect or chain, is run directly. What bash
/// would treat differently keeps the shell: a first word that is a keyword or a builtin
/// (`exit 2`, `cd`, `time`; `true` and `false` alone are the exceptions, where the binary
/// does exactly what the builtin does), or an assignment (`FOO=1 cmd`). The one visible
/// difference is the environment bash adds (`SHLVL`, `_`).
fn without_shell(command: &str) -> Option<Vec<String>> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./,:=+@%-".contains(c);
    if !command.chars().all(|c| plain(c) || c == ' ' || c == '\t') {
        return None;
    }
    let words: Vec<String> = command.split_whitespace().map(str::to_string).collect();
    let program = words.first()?;
    let lone = words.len() == 1;
    let keeps_shell = program.contains('=')
        || program.starts_with('-')
        || (BASH_BUILTINS.contains(&program.as_str())
            && !(lone && (program == "true" || program == "false")))
        || BASH_KEYWORDS.contains(&program.as_str());
    (!keeps_shell).then_some(words)
}

/// bash 5's builtins (`compgen -b`) whose names are made of plain characters.
const BASH_BUILTINS: &[&str] = &[
    ".",
    ":",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "cd",
    "command",
    "compgen",
    "complete",
    "compopt",
    "continue",
    "declare",
    "dirs",
    "disown",
    "echo",
    "enable",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "getopts",
    "hash",
    "help",
    "history",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "wait",
];

/// bash's reserved words (`compgen -k`) made of plain characters.
const BASH_KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "coproc",
];

/// Runs the hook to its end.
pub(crate) async fn run(
    hook: &CommandHook,
    input: Vec<u8>,
    project_dir: &Path,
    cancel: CancellationToken,
) -> Answer {
    let argv: Vec<String> = match &hook.args {
        Some(args) => std::iter::once(hook.command.clone())
            .chain(args.iter().cloned())
            .collect(),
        None => without_shell(&hook.command)
            .unwrap_or_else(|| vec![hook.shell.to_string(), "-c".into(), hook.command.clone()]),
    };
    let mut env: Vec<(String, OsString)> = PROJECT_DIR_VARS
        .iter()
        .map(|name| (name.to_string(), project_dir.as_os_str().to_owned()))
        .collect();
    env.extend(hook.env.iter().map(|(k, v)| (k.clone(), OsString::from(v))));
    let output = run_to_end(RunSpec {
        argv: &argv,
        cwd: project_dir,
        stdin: Some(input),
        timeout: hook.timeout,
        output_cap: OUTPUT_CAP,
        cancel,
        env,
    })
    .await;
    let stderr = output.stderr_text();
    match output.end {
        RunEnd::Exited(0) => classify_stdout(&output.stdout_text()),
        RunEnd::Exited(2) => Answer::Blocked(stderr),
        RunEnd::Exited(code) => Answer::Failed(format!("exit code {code}{}", stderr_tail(&stderr))),
        RunEnd::Signaled(signal) => Answer::Failed(format!(
            "killed by {}{}",
            signal_name(signal),
            stderr_tail(&stderr)
        )),
        RunEnd::TimedOut(limit) => Answer::Failed(format!(
            "it did not finish within {}; it and everything it started were ended",
            show_duration(limit)
        )),
        RunEnd::Cancelled => {
            Answer::Failed("cancelled; it and everything it started were ended".to_string())
        }
        RunEnd::OutputTooLarge(cap) => Answer::Malformed(format!(
            "its output passed {} MiB and was cut; it was ended",
            cap >> 20
        )),
        RunEnd::SpawnFailed(why) => Answer::Failed(why),
    }
}

#[cfg(test)]
mod tests {
    use super::without_shell;

    #[test]
    fn plain_words_run_without_a_shell() {
        assert_eq!(without_shell("true"), Some(vec!["true".to_string()]));
        assert_eq!(
            without_shell("  python3 /srv/hooks/check.py --mode=strict a,b  "),
            Some(
                ["python3", "/srv/hooks/check.py", "--mode=strict", "a,b"]
                    .map(String::from)
                    .to_vec()
            )
        );
        assert_eq!(
            without_shell("./.qwen/hooks/lint.sh"),
            Some(vec!["./.qwen/hooks/lint.sh".to_string()])
        );
    }

    #[test]
    fn anything_the_shell_would_read_differently_keeps_it() {
        for command in [
            "",
            "   ",
            "exit 2",
            "true --help",
            "false x",
            "echo hi",
            "cd /tmp",
            "time ls",
            "if",
            "FOO=1 env",
            "-x",
            "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/a.sh",
            "$HOME/hook",
            "~/hook",
            "ls *.rs",
            "a > b",
            "a | b",
            "a && b",
            "a; b",
            "a & b",
            "a\nb",
            "echo 'x'",
            "cat <(ls)",
            "ls {a,b}",
            "ls a#b",
            "ls [ab]",
            "prog \\x",
            "prog !x",
            "prog é",
        ] {
            assert_eq!(without_shell(command), None, "{command:?}");
        }
    }
}
