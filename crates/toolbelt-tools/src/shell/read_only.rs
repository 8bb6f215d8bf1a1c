//! The read-only command set: commands that run without asking because they only look.
//!
//! It is an allow list of programs *and of what their arguments may say*. A program is on
//! the list only when it cannot run another program or write a file; where some of its
//! options or argument shapes can (`find -exec`, `sed -i`, `sort -o`, `rg --pre`,
//! `git grep -O`, `less +cmd`, `date 0101`), those make the command need confirmation.
//! Learned from Codex's safe-command list and Qwen Code's `isShellCommandReadOnly`, and
//! stricter than both in three ways:
//!
//! - Any leading environment assignment (`LESSOPEN=`, `LD_PRELOAD=`, `GIT_*=`, `PAGER=`)
//!   needs confirmation: the environment decides what many readers run.
//! - A program named by a path counts only in a system directory (`/usr/bin/ls`); `./ls`
//!   is whatever the workspace put there.
//! - `git` reads its repository's own configuration, which can name programs git runs
//!   (`core.fsmonitor` on every `status`, `diff.external`, textconv drivers, filters).
//!   The model can write `.git/config`, so a `git` command is read-only only when the
//!   repository's local and worktree configuration sets nothing beyond a short list of
//!   inert keys ([`git_config_is_inert`]), checked before every call, and only for the
//!   repository of the call's own directory (`git -C`, `--git-dir` and a `cd` on the same
//!   line need confirmation).
//!
//! A whole line is read-only only when every simple command is, nothing is written
//! through a redirection, no substitution runs an unknown command, and the line parsed
//! cleanly: anything this module cannot vouch for goes to a person.

use toolbelt_engine::rules::SYSTEM_BIN_DIRS;

use super::command_parse::word::{self, WordShape};
use super::command_parse::{ParsedCommand, SimpleCommand};

pub(crate) mod checks;
pub(crate) mod git;
pub(crate) mod options;
pub(crate) mod sed;

pub(crate) use git::git_config_is_inert;

/// Programs that can be read-only. Each has its argument check in [`args_are_read_only`]
/// (the ones without a specific check only read, whatever their arguments).
const READ_ONLY_PROGRAMS: &[&str] = &[
    "[",
    "[[",
    "awk",
    "base64",
    "basename",
    "cat",
    "cd",
    "cmp",
    "column",
    "comm",
    "cut",
    "date",
    "df",
    "diff",
    "dirname",
    "du",
    "echo",
    "egrep",
    "env",
    "expr",
    "false",
    "fgrep",
    "file",
    "find",
    "fold",
    "gawk",
    "git",
    "grep",
    "head",
    "hostname",
    "id",
    "jq",
    "less",
    "ls",
    "md5sum",
    "more",
    "mawk",
    "nl",
    "nproc",
    "od",
    "paste",
    "printenv",
    "printf",
    "ps",
    "pwd",
    "readlink",
    "realpath",
    "rev",
    "rg",
    "sed",
    "seq",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "sort",
    "stat",
    "strings",
    "tac",
    "tail",
    "test",
    "tr",
    "tree",
    "true",
    "type",
    "uname",
    "uniq",
    "wc",
    "which",
    "whoami",
];

/// Whether the whole parsed line may run without confirmation, as far as its text shows.
/// A line with `git` also needs [`git_config_is_inert`] for its directory.
pub(crate) fn is_line_read_only(parsed: &ParsedCommand) -> bool {
    !parsed.commands.is_empty()
        && !parsed.has_substitution
        && !parsed.writes_to_file
        && !parsed.redirects_to_network
        && !parsed.evaluates_code
        && !parsed.syntax_error
        && parsed.commands.iter().all(is_read_only)
        && (!uses_git(parsed) || !parsed.commands.iter().any(|c| program(c) == Some("cd")))
}

/// Whether the line runs `git` (so the repository's configuration must be checked).
pub(crate) fn uses_git(parsed: &ParsedCommand) -> bool {
    parsed.commands.iter().any(|c| program(c) == Some("git"))
}

/// The program a command runs, as the read-only list names it: a bare name, or a name in
/// a system directory. `None` for anything else (`./ls`, `/tmp/x/cat`, `$X`).
fn program(command: &SimpleCommand) -> Option<&str> {
    let first = command.words.first()?;
    match first.rsplit_once('/') {
        None => Some(first),
        Some((dir, name)) if SYSTEM_BIN_DIRS.contains(&dir) && !name.is_empty() => Some(name),
        Some(_) => None,
    }
}

/// Whether one simple command only reads.
pub(crate) fn is_read_only(command: &SimpleCommand) -> bool {
    if !command.assignments.is_empty() {
        return false;
    }
    if command.raw.first().map(|r| word::shape(r)) != Some(WordShape::Literal) {
        return false;
    }
    let Some(name) = program(command) else {
        return false;
    };
    if !READ_ONLY_PROGRAMS.contains(&name) {
        return false;
    }
    let args: &[String] = command.words.get(1..).unwrap_or(&[]);
    let Some(check) = checks::check_of(name) else {
        return true;
    };
    // `printf` needs its arguments judged only when it assigns (`-v`).
    let judged = name != "printf" || args.first().is_some_and(|a| a.starts_with("-v"));
    (!judged || arguments_are_plain(command.raw.get(1..).unwrap_or(&[]))) && check(args)
}

/// Whether every argument is what its text says once quotes are removed: no expansion
/// (`sort $x` with `x='-o f'` writes `f`), and no pattern that could expand to an option
/// (`sed -n 1p *` in a directory holding a file named `-i` edits files).
fn arguments_are_plain(raw: &[String]) -> bool {
    raw.iter().all(|r| match word::shape(r) {
        WordShape::Literal => true,
        WordShape::Pattern => !word::pattern_may_start_with_dash(r),
        WordShape::Expansion => false,
    })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod hardening_tests;
