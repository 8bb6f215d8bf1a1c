//! What `git` runs besides itself, as the permission rules need to know it.
//!
//! git is an interpreter: configuration given on its command line names programs it
//! runs (`-c alias.x='!rm v'`, `-c core.fsmonitor=…`, `-c diff.external=…`,
//! `--config-env`), `--exec-path=DIR` chooses where its subcommands come from, and some
//! subcommands run a command they are given (`submodule foreach`, `rebase --exec`,
//! `bisect run`, `difftool --extcmd`, `clone --upload-pack`, `grep -O`). So:
//!
//! - a command git is given as text is judged as a command of its own (`git submodule
//!   foreach 'rm v'` is judged as `rm v` too);
//! - configuration or a program given on the command line, another repository
//!   (`--git-dir`), a write of the repository's configuration (`git config k v`: the
//!   next `git` would run what it names) or a word that is not a literal where an option
//!   could run something: unreadable, so every deny and ask rule covers it and an allow
//!   rule for git does not approve it;
//! - everything else (`git status`, `git commit`) runs git alone: the programs the
//!   repository's own configuration names (hooks, fsmonitor, drivers) are protected
//!   configuration (`toolbelt_core::ProtectedPaths`), so the model cannot change them on a
//!   general approval.

use super::getopt::may_abbreviate;
use super::runs::{Call, Runs, push_inner, script};
use crate::shell::read_only::git::edits_config;

/// git's global options that take no value and change nothing about what runs.
const PLAIN_GLOBAL: &[&str] = &[
    "-p",
    "--paginate",
    "-P",
    "--no-pager",
    "--bare",
    "--no-replace-objects",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--no-optional-locks",
    "--no-lazy-fetch",
    "--no-advice",
    "--html-path",
    "--man-path",
    "--info-path",
    "--exec-path",
    "--version",
    "-v",
    "--help",
    "-h",
];

/// Global options with a value that changes nothing about what runs.
const VALUED_GLOBAL: &[&str] = &[
    "-C",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--attr-source",
    "--list-cmds",
];

pub(super) fn git(call: &Call, out: &mut Runs) {
    let args = call.args();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        // A word that is not a literal could become `-c …` or a subcommand.
        if !call.is_literal(i + 1) {
            call.unread_if_not_literal(i + 1, out);
            return;
        }
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        if a.starts_with("-c") || name == "--config-env" {
            return out.unread(
                "`git -c` sets configuration, which can name a program git runs (an alias, `core.fsmonitor`, `diff.external`)".to_string(),
            );
        }
        if a.starts_with("--exec-path=") {
            return out.unread("`git --exec-path=DIR` runs its subcommands from DIR".to_string());
        }
        if name == "--git-dir" {
            return out.unread(
                "`git --git-dir` uses another repository, whose configuration can name programs git runs".to_string(),
            );
        }
        if PLAIN_GLOBAL.contains(&a.as_str()) {
            i += 1;
        } else if VALUED_GLOBAL.contains(&name) {
            i += if a.contains('=') { 1 } else { 2 };
        } else if a.starts_with('-') {
            return out.unread(format!("the git option `{a}` is not known to this check"));
        } else {
            break;
        }
    }
    let Some(sub) = args.get(i) else {
        return;
    };
    // Word index of the first argument after the subcommand.
    let at = i + 2;
    subcommand(call, sub, at, out);
}

/// What the subcommand `sub` runs, its arguments starting at word `at`.
fn subcommand(call: &Call, sub: &str, at: usize, out: &mut Runs) {
    let rest = call.words.get(at..).unwrap_or_default();
    let (long, short): (&[&str], &[char]) = match sub {
        "submodule" => return foreach(call, at, out),
        "rebase" => return rebase_exec(call, at, out),
        "bisect" if rest.first().is_some_and(|a| a == "run") => {
            if at + 1 < call.words.len() {
                push_inner(&call.raw[at + 1..], &call.words[at + 1..], call.depth, out);
            }
            return;
        }
        "filter-branch" | "for-each-repo" | "instaweb" => {
            return out.unread(format!(
                "`git {sub}` runs commands given in its arguments or configuration"
            ));
        }
        "config" if writes_config(rest) => {
            return out.unread(
                "`git config` changes git configuration, which names programs git runs".to_string(),
            );
        }
        "clone" => (&["upload-pack", "config", "template"], &['u', 'c']),
        "init" => (&["template"], &[]),
        "fetch" | "pull" => (&["upload-pack"], &[]),
        "ls-remote" => (&["upload-pack", "exec"], &[]),
        "archive" => (&["exec"], &[]),
        "push" => (&["receive-pack", "exec"], &[]),
        "grep" => (&["open-files-in-pager"], &['O']),
        "difftool" => (&["extcmd"], &['x']),
        "send-email" => (
            &[
                "sendmail-cmd",
                "smtp-server",
                "to-cmd",
                "cc-cmd",
                "header-cmd",
            ],
            &[],
        ),
        "daemon" => (&["access-hook"], &[]),
        _ => return,
    };
    if call.unread_if_not_literal(at, out) {
        return;
    }
    let runs = rest.iter().take_while(|a| *a != "--").any(|a| {
        if let Some(name) = a.strip_prefix("--") {
            long.iter().any(|l| may_abbreviate(name, l))
        } else {
            a.starts_with('-') && a.contains(short)
        }
    });
    if runs {
        out.unread(format!(
            "`git {sub}` is given a program or configuration to run"
        ));
    }
}

/// `git submodule [--quiet] foreach [--recursive] COMMAND…`: the words are a script.
fn foreach(call: &Call, at: usize, out: &mut Runs) {
    let words = call.words;
    let Some(f) = (at..words.len()).find(|j| words[*j] == "foreach") else {
        return;
    };
    let mut start = f + 1;
    while words
        .get(start)
        .is_some_and(|a| matches!(a.as_str(), "--recursive" | "-q" | "--quiet"))
    {
        start += 1;
    }
    if start < words.len() {
        let text = words[start..].join(" ");
        script(
            &call.raw[start..],
            &text,
            "git submodule foreach",
            call.depth,
            out,
        );
    } else {
        out.runs_anything = true;
    }
}

/// `git rebase --exec CMD` / `-x CMD` (and `--exec=CMD`, `-xCMD`): each CMD a script.
fn rebase_exec(call: &Call, at: usize, out: &mut Runs) {
    let (raw, words) = (call.raw, call.words);
    let mut j = at;
    while j < words.len() {
        let a = words[j].as_str();
        if a == "--" {
            break;
        }
        // `--exec CMD`, `--exec=CMD`, `--ex CMD`; `-x CMD`, `-xCMD`, `-ix CMD`.
        let attached = if let Some(l) = a.strip_prefix("--") {
            may_abbreviate(l, "exec").then(|| l.split_once('=').map(|(_, v)| v))
        } else if a.starts_with('-') {
            a.split_once('x')
                .map(|(_, v)| Some(v).filter(|v| !v.is_empty()))
        } else {
            None
        };
        let value = match attached {
            Some(Some(v)) => Some((j, v.to_string())),
            Some(None) => words.get(j + 1).map(|v| (j + 1, v.clone())),
            None => None,
        };
        match value {
            Some((k, text)) => {
                script(&raw[k..=k], &text, "git rebase --exec", call.depth, out);
                j = k + 1;
            }
            None => j += 1,
        }
    }
    if out.unreadable.is_none() {
        call.unread_if_not_literal(at, out);
    }
}

/// Whether `git config ARGS` sets, unsets or edits something (reading forms:
/// `--get…`, `--list`, `get`, `list`).
fn writes_config(rest: &[String]) -> bool {
    let reads = |a: &str| {
        matches!(
            a,
            "--get"
                | "--get-all"
                | "--get-regexp"
                | "--get-urlmatch"
                | "-l"
                | "--list"
                | "get"
                | "list"
                | "--show-origin"
                | "--show-scope"
                | "--name-only"
                | "-z"
                | "--null"
        )
    };
    let reading = rest.iter().any(|a| reads(a));
    let operands = rest.iter().filter(|a| !a.starts_with('-')).count();
    let editing = rest.iter().any(|a| edits_config(a));
    // `git config KEY` reads, `git config KEY VALUE` sets.
    editing || (!reading && operands != 1)
}
