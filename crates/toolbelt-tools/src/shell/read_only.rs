//! The read-only command set: commands that run without asking because they only look.
//!
//! The set follows Qwen Code's (`isShellCommandReadOnly`), with its exceptions: only some
//! `git` subcommands, and flags that turn a reader into a writer or a launcher (`find
//! -exec`, `sed -i`, awk's `system(`, `sort -o`, `rg --pre`) disqualify a command. A
//! whole line is read-only only when every simple command is, nothing is written through
//! a redirection, no substitution runs an unknown command, and the line parsed cleanly:
//! anything this module cannot vouch for goes to a person.

use super::command_parse::{ParsedCommand, SimpleCommand};

/// Commands that never change anything, whatever their arguments (beyond the checks in
/// [`is_read_only`]).
const READ_ONLY_ROOTS: &[&str] = &[
    "[",
    "[[",
    "awk",
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
    "env",
    "false",
    "file",
    "find",
    "git",
    "grep",
    "egrep",
    "fgrep",
    "head",
    "hostname",
    "id",
    "less",
    "ls",
    "md5sum",
    "more",
    "nl",
    "printenv",
    "printf",
    "ps",
    "pwd",
    "readlink",
    "realpath",
    "rg",
    "ripgrep",
    "sed",
    "sha1sum",
    "sha256sum",
    "sort",
    "stat",
    "tac",
    "tail",
    "test",
    "tree",
    "true",
    "type",
    "uname",
    "uniq",
    "wc",
    "where",
    "which",
    "whoami",
];

/// `git` subcommands that only read.
const READ_ONLY_GIT: &[&str] = &[
    "blame",
    "branch",
    "cat-file",
    "describe",
    "diff",
    "grep",
    "log",
    "ls-files",
    "remote",
    "rev-parse",
    "show",
    "status",
];

/// Whether the whole parsed line may run without confirmation.
pub fn is_line_read_only(parsed: &ParsedCommand) -> bool {
    !parsed.commands.is_empty()
        && !parsed.has_substitution
        && !parsed.writes_to_file
        && !parsed.syntax_error
        && parsed.commands.iter().all(is_read_only)
}

/// Whether one simple command only reads.
pub fn is_read_only(command: &SimpleCommand) -> bool {
    let root = command.root();
    if !READ_ONLY_ROOTS.contains(&root) {
        return false;
    }
    let args: &[String] = command.words.get(1..).unwrap_or(&[]);
    let has = |flags: &[&str]| {
        args.iter().any(|a| {
            flags
                .iter()
                .any(|f| a == f || (f.starts_with("--") && a.starts_with(&format!("{f}="))))
        })
    };
    match root {
        "git" => git_is_read_only(args),
        "find" => !args.iter().any(|a| {
            matches!(
                a.as_str(),
                "-delete" | "-exec" | "-execdir" | "-ok" | "-okdir" | "-fls"
            ) || a.starts_with("-fprint")
        }),
        "sed" => sed_is_read_only(args),
        "awk" => !args.iter().any(|a| {
            ["system(", ">", "|", "getline", "close(", "fflush("]
                .iter()
                .any(|bad| a.contains(bad))
        }),
        // `env cmd …` runs cmd; plain `env` only prints.
        "env" => args.is_empty(),
        "sort" => !has(&["-o", "--output"]) && !args.iter().any(|a| a.starts_with("-o")),
        "tree" => !has(&["-o"]),
        "rg" | "ripgrep" => !has(&["--pre"]),
        "date" => !has(&["-s", "--set"]),
        // `uniq IN OUT` writes OUT.
        "uniq" => args.iter().filter(|a| !a.starts_with('-')).count() <= 1,
        _ => true,
    }
}

fn git_is_read_only(args: &[String]) -> bool {
    // Skip global options to find the subcommand. `-c key=value` can name a command to
    // run (`core.fsmonitor`, `core.pager`), so it disqualifies the call.
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        match arg.as_str() {
            "-c" | "--exec-path" | "--config-env" => return false,
            "-C" | "--git-dir" | "--work-tree" | "--namespace" => i += 2,
            a if a.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let Some(sub) = args.get(i) else {
        return true; // plain `git` prints its help
    };
    let rest = &args[i + 1..];
    if !READ_ONLY_GIT.contains(&sub.as_str()) || rest.iter().any(|a| a.starts_with("--output")) {
        return false;
    }
    match sub.as_str() {
        "remote" => rest
            .first()
            .is_none_or(|a| matches!(a.as_str(), "-v" | "--verbose" | "show" | "get-url")),
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
                        | "--sort"
                        | "--no-color"
                        | "--color"
                ) || a.starts_with("--format")
                    || a.starts_with("--sort=")
                    || (listing && !a.starts_with('-'))
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
        if arg == "-e" || arg == "--expression" {
            explicit_script = true;
            scripts.extend(iter.next().map(String::as_str));
        } else if let Some(s) = arg.strip_prefix("--expression=") {
            explicit_script = true;
            scripts.push(s);
        } else if arg.starts_with('-') && !arg.starts_with("--") && arg.len() > 1 {
            // A short-flag cluster with `i` edits in place (`-i`, `-ni`, `-i.bak`).
            if arg[1..].contains('i') {
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
