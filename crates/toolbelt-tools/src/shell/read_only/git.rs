//! `git`: which subcommands and options only read, and which repository configuration
//! makes git run nothing.
//!
//! git's own option parser takes any unique prefix of a long option (`git grep --ope`
//! is `--open-files-in-pager`, `git log --outp=f` is `--output=f`) and clusters short
//! options (`git grep -iO`). Its option tables differ per subcommand and are long, so
//! they are not copied here: a long option that is a prefix of a forbidden one
//! ([`RUNS_OR_WRITES`]) is taken as that option (a prefix that is ambiguous for git
//! only makes git fail), and a short cluster holding `O` is taken as `-O`.

use crate::shell::command_parse::getopt::may_abbreviate;

/// The `git` subcommands that only read, given the argument checks below.
pub(super) const READ_ONLY_GIT: &[&str] = &[
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

/// Long options that write a file, run a program or open a pager, whatever the
/// subcommand.
const RUNS_OR_WRITES: &[&str] = &[
    "output",
    "open-files-in-pager",
    "ext-diff",
    "textconv",
    "filters",
    "exec",
    "upload-pack",
    "receive-pack",
];

/// Long options that are a prefix of a forbidden one but are options of their own
/// (git takes an exact name before a prefix): `git diff --text`, `git rev-list
/// --filter=blob:none`.
const EXACT_OPTIONS: &[&str] = &["text", "filter"];

/// Whether one argument after the subcommand writes, runs or pages.
fn runs_or_writes(arg: &str) -> bool {
    if let Some(long) = arg.strip_prefix("--") {
        let name = long.split_once('=').map_or(long, |(n, _)| n);
        return !EXACT_OPTIONS.contains(&name)
            && RUNS_OR_WRITES.iter().any(|f| may_abbreviate(name, f));
    }
    // `-O` (open in a pager) anywhere in a cluster: `-iO`, `-nOless`.
    arg.len() > 1 && arg.starts_with('-') && arg.contains('O')
}

pub(super) fn git_is_read_only(args: &[String]) -> bool {
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
    !rest.iter().any(|a| runs_or_writes(a)) && subcommand_is_read_only(sub, rest)
}

/// The checks of one subcommand's arguments: listing forms only, for the subcommands
/// that also create, delete or set.
fn subcommand_is_read_only(sub: &str, rest: &[String]) -> bool {
    match sub {
        "remote" => rest
            .first()
            .is_none_or(|a| matches!(a.as_str(), "-v" | "--verbose" | "show" | "get-url")),
        // Listing only: `git tag NAME` and `git branch NAME` create, `-d` deletes.
        "tag" => tag_lists(rest),
        "branch" => branch_lists(rest),
        // `git reflog` and `git reflog show` list; `expire` and `delete` rewrite.
        "reflog" => rest
            .first()
            .is_none_or(|a| a == "show" || a.starts_with('-')),
        "config" => config_reads(rest),
        _ => true,
    }
}

/// `git tag` that lists.
fn tag_lists(rest: &[String]) -> bool {
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

/// `git branch` that lists.
fn branch_lists(rest: &[String]) -> bool {
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

/// `git config` reading a value or listing; anything else (`git config k v`,
/// `--unset`, `--edit`, `--add`) writes.
fn config_reads(rest: &[String]) -> bool {
    rest.iter().any(|a| {
        matches!(
            a.as_str(),
            "--get" | "--get-all" | "--get-regexp" | "-l" | "--list" | "get"
        ) || (a == "list")
    }) && !rest.iter().any(|a| edits_config(a))
}

/// Whether one argument of `git config` makes it change the configuration (`set`,
/// `unset`, `edit`, `-e`, and `--unset`, `--add`, `--replace-all`, `--edit`,
/// `--rename-section`, `--remove-section` and their abbreviations). The one list both
/// the read-only classifier and the judgement of what git runs use.
pub(crate) fn edits_config(arg: &str) -> bool {
    matches!(arg, "-e" | "set" | "unset" | "edit")
        || arg.strip_prefix("--").is_some_and(|long| {
            [
                "unset",
                "unset-all",
                "add",
                "replace-all",
                "edit",
                "rename-section",
                "remove-section",
            ]
            .iter()
            .any(|f| may_abbreviate(long, f))
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
pub(crate) fn git_config_is_inert(config: &[u8]) -> bool {
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
