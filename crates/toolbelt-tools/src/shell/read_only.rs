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

use toolbelt_core::SYSTEM_BIN_DIRS;

use super::command_parse::{ParsedCommand, SimpleCommand};

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

/// `git` subcommands that only read, given the argument checks of [`git_is_read_only`].
const READ_ONLY_GIT: &[&str] = &[
    "blame",
    "branch",
    "cat-file",
    "config",
    "describe",
    "diff",
    "grep",
    "log",
    "ls-files",
    "ls-tree",
    "merge-base",
    "reflog",
    "remote",
    "rev-list",
    "rev-parse",
    "shortlog",
    "show",
    "show-ref",
    "status",
    "tag",
];

/// Whether the whole parsed line may run without confirmation, as far as its text shows.
/// A line with `git` also needs [`git_config_is_inert`] for its directory.
pub fn is_line_read_only(parsed: &ParsedCommand) -> bool {
    !parsed.commands.is_empty()
        && !parsed.has_substitution
        && !parsed.writes_to_file
        && !parsed.syntax_error
        && parsed.commands.iter().all(is_read_only)
        && (!uses_git(parsed) || !parsed.commands.iter().any(|c| program(c) == Some("cd")))
}

/// Whether the line runs `git` (so the repository's configuration must be checked).
pub fn uses_git(parsed: &ParsedCommand) -> bool {
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
pub fn is_read_only(command: &SimpleCommand) -> bool {
    if !command.assignments.is_empty() {
        return false;
    }
    let Some(name) = program(command) else {
        return false;
    };
    if !READ_ONLY_PROGRAMS.contains(&name) {
        return false;
    }
    let args: &[String] = command.words.get(1..).unwrap_or(&[]);
    args_are_read_only(name, args)
}

/// Whether an argument is `flag` or, for a long option, `flag=value`; for a short option
/// also `-fVALUE` when `attached` (the option takes a value written right after it).
fn is_flag(arg: &str, flag: &str, attached: bool) -> bool {
    arg == flag
        || (flag.starts_with("--") && arg.starts_with(flag) && arg[flag.len()..].starts_with('='))
        || (attached && !flag.starts_with("--") && arg.starts_with(flag))
}

fn any_flag(args: &[String], flags: &[&str], attached: bool) -> bool {
    args.iter()
        .any(|a| flags.iter().any(|f| is_flag(a, f, attached)))
}

/// Arguments that are not options (a lone `-` is standard input, so it counts).
fn positionals(args: &[String]) -> impl Iterator<Item = &String> {
    args.iter().filter(|a| !a.starts_with('-') || *a == "-")
}

fn args_are_read_only(name: &str, args: &[String]) -> bool {
    match name {
        "git" => git_is_read_only(args),
        "find" => !args.iter().any(|a| {
            matches!(
                a.as_str(),
                "-delete" | "-exec" | "-execdir" | "-ok" | "-okdir" | "-fls"
            ) || a.starts_with("-fprint")
        }),
        "sed" => sed_is_read_only(args),
        "awk" | "gawk" | "mawk" => awk_is_read_only(args),
        // `env CMD` runs CMD; `env` alone prints the environment.
        "env" => args.is_empty(),
        "sort" => {
            !any_flag(args, &["-o", "--output", "--compress-program"], true)
                // `-o` inside a cluster of short flags (`-uo out`).
                && !args
                    .iter()
                    .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('o'))
        }
        "tree" => !any_flag(args, &["-o"], true),
        "rg" => !any_flag(args, &["--pre", "--hostname-bin"], false),
        // `date -s` and `date MMDDhhmm` set the clock; `+FORMAT` only prints.
        "date" => date_is_read_only(args),
        // `hostname NAME` and `hostname -F FILE` set the host name.
        "hostname" => {
            positionals(args).next().is_none() && !any_flag(args, &["-F", "--file"], true)
        }
        // `uniq IN OUT` writes OUT.
        "uniq" => positionals(args).count() <= 1,
        // `less +cmd` runs a less command (`+!cmd` a shell); log and lesskey files write
        // or redefine what less runs.
        "less" | "more" => {
            !args.iter().any(|a| a.starts_with('+'))
                && !any_flag(
                    args,
                    &[
                        "-o",
                        "-O",
                        "-k",
                        "--log-file",
                        "--LOG-FILE",
                        "--lesskey-file",
                    ],
                    true,
                )
                && !args.iter().any(|a| a.starts_with("--lesskey"))
        }
        // `file -C` compiles a magic file, writing `NAME.mgc`.
        "file" => !any_flag(args, &["-C", "--compile"], false),
        _ => true,
    }
}

fn date_is_read_only(args: &[String]) -> bool {
    if any_flag(args, &["-s", "--set"], true) {
        return false;
    }
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            // Options whose value is the next word.
            "-d" | "--date" | "-f" | "--file" | "-r" | "--reference" => {
                iter.next();
            }
            a if a.starts_with('-') => {}
            a if a.starts_with('+') => {}
            _ => return false,
        }
    }
    true
}

fn awk_is_read_only(args: &[String]) -> bool {
    // A program file (`-f`), an include (`-i`, `@include`) or an extension (`-l`, `@load`)
    // is code this check cannot read.
    if any_flag(
        args,
        &[
            "-f",
            "--file",
            "-i",
            "--include",
            "-l",
            "--load",
            "-E",
            "--exec",
        ],
        true,
    ) {
        return false;
    }
    !args.iter().any(|a| {
        ["system(", ">", "|", "getline", "close(", "fflush(", "@"]
            .iter()
            .any(|bad| a.contains(bad))
    })
}

fn git_is_read_only(args: &[String]) -> bool {
    // Global options come before the subcommand. Only those that change nothing about what
    // git runs or where it looks are accepted: `-c`/`--config-env` can name programs, `-C`,
    // `--git-dir` and `--work-tree` point at a repository whose configuration was not
    // checked, `-p` asks for a pager.
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        match arg.as_str() {
            "--no-pager"
            | "-P"
            | "--no-optional-locks"
            | "--literal-pathspecs"
            | "--no-replace-objects" => i += 1,
            a if a.starts_with('-') => return false,
            _ => break,
        }
    }
    let Some(sub) = args.get(i) else {
        return true; // plain `git` prints its help
    };
    let rest = &args[i + 1..];
    if !READ_ONLY_GIT.contains(&sub.as_str()) {
        return false;
    }
    // Options that write a file, run a program or open a pager, whatever the subcommand.
    let runs_or_writes = rest.iter().any(|a| {
        is_flag(a, "--output", false)
            || is_flag(a, "--open-files-in-pager", false)
            || a.starts_with("-O")
            || is_flag(a, "--ext-diff", false)
            || is_flag(a, "--textconv", false)
            || is_flag(a, "--filters", false)
            || a.starts_with("--exec")
            || a.starts_with("--upload-pack")
            || a.starts_with("--receive-pack")
    });
    if runs_or_writes {
        return false;
    }
    match sub.as_str() {
        "remote" => rest
            .first()
            .is_none_or(|a| matches!(a.as_str(), "-v" | "--verbose" | "show" | "get-url")),
        // Listing only: `git tag NAME` and `git branch NAME` create, `-d` deletes.
        "tag" => {
            let listing = rest.is_empty() || rest.iter().any(|a| a == "-l" || a == "--list");
            listing
                && rest.iter().all(|a| {
                    !a.starts_with('-')
                        || matches!(a.as_str(), "-l" | "--list" | "-i" | "--ignore-case")
                        || a.starts_with("-n")
                        || [
                            "--sort",
                            "--format",
                            "--contains",
                            "--no-contains",
                            "--points-at",
                            "--merged",
                            "--no-merged",
                            "--column",
                            "--no-column",
                        ]
                        .iter()
                        .any(|f| a.starts_with(f))
                })
        }
        "branch" => {
            let listing = rest.iter().any(|a| a == "--list" || a == "-l");
            rest.iter().all(|a| {
                matches!(
                    a.as_str(),
                    "-a" | "--all"
                        | "-r"
                        | "--remotes"
                        | "-v"
                        | "-vv"
                        | "--verbose"
                        | "--list"
                        | "-l"
                        | "--show-current"
                        | "--merged"
                        | "--no-merged"
                        | "--contains"
                        | "--no-contains"
                        | "--no-color"
                        | "--color"
                ) || a.starts_with("--format")
                    || a.starts_with("--sort=")
                    || (listing && !a.starts_with('-'))
            })
        }
        // `git reflog` and `git reflog show` list; `expire` and `delete` rewrite.
        "reflog" => rest
            .first()
            .is_none_or(|a| a == "show" || a.starts_with('-')),
        // Reading a value or listing; anything else (`git config k v`, `--unset`,
        // `--edit`, `--add`) writes.
        "config" => {
            rest.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "--get" | "--get-all" | "--get-regexp" | "-l" | "--list" | "get"
                ) || (a == "list")
            }) && !rest.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "--unset"
                        | "--unset-all"
                        | "--add"
                        | "--replace-all"
                        | "--edit"
                        | "-e"
                        | "--rename-section"
                        | "--remove-section"
                        | "set"
                        | "unset"
                        | "edit"
                )
            })
        }
        _ => true,
    }
}

fn sed_is_read_only(args: &[String]) -> bool {
    let mut scripts: Vec<&str> = Vec::new();
    let mut explicit_script = false;
    let mut positional = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--in-place" || arg.starts_with("--in-place=") {
            return false;
        }
        // A script file is code this check cannot read.
        if arg == "-f" || arg == "--file" || arg.starts_with("--file=") {
            return false;
        }
        if arg == "-e" || arg == "--expression" {
            explicit_script = true;
            scripts.extend(iter.next().map(String::as_str));
        } else if let Some(s) = arg.strip_prefix("--expression=") {
            explicit_script = true;
            scripts.push(s);
        } else if arg.starts_with('-') && !arg.starts_with("--") && arg.len() > 1 {
            // A short-flag cluster with `i` edits in place (`-i`, `-ni`, `-i.bak`); with
            // `f` it reads the script from a file (`-nf x`).
            if arg[1..].contains('i') || arg[1..].contains('f') {
                return false;
            }
        } else if !arg.starts_with('-') {
            positional.push(arg.as_str());
        }
    }
    if !explicit_script {
        scripts.extend(positional.first());
    }
    !scripts.iter().any(|s| sed_script_writes(s))
}

/// The `w`, `W` and `e` commands and the `w`/`e` flags of `s` write files or run commands.
fn sed_script_writes(script: &str) -> bool {
    script.split([';', '\n']).any(|cmd| {
        let cmd = cmd.trim().trim_start_matches(|c: char| {
            c.is_ascii_digit() || matches!(c, ',' | '$' | ' ' | '!' | '{' | '}')
        });
        let mut chars = cmd.chars();
        let command_writes = matches!(chars.next(), Some('w' | 'W' | 'e'))
            && chars.next().is_none_or(|c| c == ' ' || c == '\t');
        let substitute_writes = cmd.starts_with('s')
            && cmd
                .rsplit(|c: char| Some(c) == cmd.chars().nth(1))
                .next()
                .is_some_and(|flags| flags.contains('w') || flags.contains('e'));
        command_writes || substitute_writes
    })
}

/// Repository configuration keys that make git run nothing and write nothing. Keys in
/// the person's own (system and global) configuration are theirs and not judged; keys in
/// the repository's local or worktree configuration (which the model can write) must all
/// be on this list for a `git` command to count as read-only. Matched case-insensitively;
/// `*` stands for one section name (a remote, a branch, a submodule).
const INERT_GIT_KEYS: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.quotepath",
    "core.abbrev",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "core.commitgraph",
    "core.splitindex",
    "core.untrackedcache",
    "core.checkstat",
    "core.trustctime",
    "core.whitespace",
    "extensions.objectformat",
    "extensions.worktreeconfig",
    "extensions.partialclone",
    "extensions.refstorage",
    "extensions.preciousobjects",
    "init.defaultbranch",
    "user.name",
    "user.email",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.tagopt",
    "remote.*.promisor",
    "remote.*.partialclonefilter",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
    "branch.*.pushremote",
    "submodule.*.url",
    "submodule.*.active",
    "submodule.*.branch",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "fetch.prune",
    "gc.auto",
    "index.version",
    "color.ui",
    "log.date",
    "log.decorate",
    "diff.renames",
    "diff.algorithm",
    "merge.conflictstyle",
    "maintenance.auto",
    "maintenance.strategy",
    // Hooks run on commits, merges and checkouts, never on the read-only subcommands
    // above; husky and pre-commit set this in many repositories.
    "core.hookspath",
    // Signing settings: only `gpg.program` (not listed) names what runs.
    "commit.gpgsign",
    "tag.gpgsign",
    "user.signingkey",
    "gpg.format",
    "lfs.repositoryformatversion",
    "rerere.enabled",
    "blame.ignorerevsfile",
];

/// Whether every key in `config` (the output of `git config --list --show-scope -z`) that
/// comes from the repository (local or worktree scope) is inert. Output that cannot be
/// read is not inert.
pub fn git_config_is_inert(config: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(config) else {
        return false;
    };
    let mut entries = text.split('\0').filter(|s| !s.is_empty());
    while let Some(scope) = entries.next() {
        let Some(entry) = entries.next() else {
            return false;
        };
        let key = entry
            .split('\n')
            .next()
            .unwrap_or(entry)
            .to_ascii_lowercase();
        let from_repository = !matches!(scope, "system" | "global");
        if from_repository && !INERT_GIT_KEYS.iter().any(|k| key_matches(k, &key)) {
            return false;
        }
    }
    true
}

/// `remote.*.url` matches `remote.origin.url` (the subsection may hold dots).
fn key_matches(pattern: &str, key: &str) -> bool {
    match pattern.split_once(".*.") {
        None => pattern == key,
        Some((section, name)) => key
            .strip_prefix(section)
            .and_then(|k| k.strip_prefix('.'))
            .and_then(|k| k.strip_suffix(name))
            .is_some_and(|middle| middle.len() > 1 && middle.ends_with('.')),
    }
}

#[cfg(test)]
mod tests;
