//! What git runs from a repository's configuration, protected wherever it points.
//!
//! Writes under `.git` are protected by name, but git's configuration can send it
//! elsewhere in the project: `core.hooksPath = .githooks` (or husky's `.husky/_`) makes
//! `.githooks/pre-commit` a program every allowed `git commit` runs; `core.fsmonitor`,
//! diff, merge and filter drivers (`diff.x.textconv`, `filter.x.clean`, `merge.x.driver`,
//! chosen per file by `.gitattributes`), aliases and the other commands the
//! configuration names (`core.pager`, `gpg.program`…) run project scripts the same way.
//! So a file one of those points at is protected configuration too.
//!
//! The configuration is *read*, never run: git itself is not started (`git config`
//! would follow the repository's own `include`s and could be made slow), and the files
//! are read by [`toolbelt_config::project_file::read_own`] (regular files, at most
//! [`MAX_CONFIG_BYTES`] each, no FIFO). Read are the repository's `config` and
//! `config.worktree` and the person's global configuration (`~/.gitconfig`,
//! `$XDG_CONFIG_HOME/git/config`), whose relative driver paths are relative to each
//! repository, with their `include.path` and `includeIf.*.path` files (every condition
//! taken as true: a superset is the safe mistake), at most [`MAX_CONFIG_FILES`] files.
//! Every repository from the changed path up is consulted, so a nested repository does
//! not hide its parent's hooks path. The configuration is read at each question, so a
//! hooks path set during the session counts from then on.

use std::path::{Path, PathBuf};

use super::Protection;
use crate::normalize_lexically;

/// The most bytes of one configuration file that are read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// The most configuration files (includes counted) read for one repository.
const MAX_CONFIG_FILES: usize = 16;
/// How many directories up from a changed path a repository is looked for.
const MAX_LEVELS: usize = 64;

/// Configuration keys whose value is a command git runs (`*` stands for one
/// subsection: a driver's, a tool's, a credential URL's name). Matched
/// case-insensitively on section and key.
const COMMAND_KEYS: &[&str] = &[
    "core.fsmonitor",
    "core.editor",
    "core.pager",
    "core.sshcommand",
    "core.askpass",
    "core.alternaterefscommand",
    "sequence.editor",
    "diff.external",
    "diff.*.command",
    "diff.*.textconv",
    "merge.*.driver",
    "filter.*.clean",
    "filter.*.smudge",
    "filter.*.process",
    "difftool.*.cmd",
    "mergetool.*.cmd",
    "gpg.program",
    "gpg.*.program",
    "credential.helper",
    "credential.*.helper",
    "uploadpack.packobjectshook",
    "alias.*",
];

/// What git would run from the configuration of the repositories around `path`, if
/// `path` (absolute, resolved) is one of them: a file in the hooks directory, or a file
/// a configured command names.
pub(super) fn protection(path: &Path) -> Option<Protection> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let mut dir = path.parent();
    for _ in 0..MAX_LEVELS {
        let top = dir?;
        if let Some(found) = repository_protection(top, home.as_deref(), path) {
            return Some(found);
        }
        dir = top.parent();
    }
    None
}

/// The protection `path` gets from the repository whose work tree is `top`, if `top`
/// holds one.
fn repository_protection(top: &Path, home: Option<&Path>, path: &Path) -> Option<Protection> {
    let git_dir = git_dir(top)?;
    let config = Config::read_repository(&git_dir, home);
    let under = |dir: &Path| path.starts_with(normalize_lexically(dir));
    if let Some(hooks) = config.last("core.hookspath") {
        let hooks = anchored(top, home, hooks);
        // husky points git at `.husky/_`, whose scripts run the ones in `.husky`.
        let hooks = match hooks.file_name() {
            Some(n) if n == "_" => hooks.parent().map(Path::to_path_buf).unwrap_or(hooks),
            _ => hooks,
        };
        if under(&hooks) {
            return Some(Protection {
                label: "git hooks".into(),
                why: "git runs the programs in the repository's hooks directory (core.hooksPath)"
                    .into(),
                marker: marker(&hooks),
            });
        }
    }
    for (key, value) in config.commands() {
        for word in command_words(&value) {
            let file = anchored(top, home, &word);
            if path == normalize_lexically(&file) {
                return Some(Protection {
                    label: "a program git runs".into(),
                    why: format!("the repository's git configuration runs it ({key})"),
                    marker: marker(&file),
                });
            }
        }
    }
    None
}

/// The repository directory of the work tree `top`: `top/.git`, or where a `.git` file
/// (a linked work tree, a submodule) points.
fn git_dir(top: &Path) -> Option<PathBuf> {
    let dot_git = top.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    let bytes = toolbelt_config::project_file::read_own(&dot_git, 4096).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let target = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    Some(top.join(target))
}

/// A path as git reads it in configuration: `~/` under the home, relative to the top of
/// the work tree (where git runs hooks and drivers).
fn anchored(top: &Path, home: Option<&Path>, value: &str) -> PathBuf {
    match (value.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => top.join(value),
    }
}

fn marker(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// The words of a configured command that could name a file: split as `sh -c` would
/// split plain words (quotes removed), an alias's leading `!` dropped, options and
/// placeholders left out.
fn command_words(value: &str) -> Vec<String> {
    let value = value.trim_start().strip_prefix('!').unwrap_or(value);
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (q, '\\') if q != Some('\'') => word.extend(chars.next()),
            (None, c) if c.is_whitespace() || matches!(c, ';' | '&' | '|') => {
                words.push(std::mem::take(&mut word));
            }
            (_, c) => word.push(c),
        }
    }
    words.push(word);
    // Options, and the placeholders git fills in (`%O`, `%A`) or the shell expands.
    words.retain(|w| !w.is_empty() && !w.starts_with('-') && !w.contains(['$', '%']));
    words
}

/// `section.key` / `section.subsection.key` entries of the files read, in order.
#[derive(Debug, Default)]
struct Config {
    entries: Vec<(String, String)>,
    files: usize,
}

impl Config {
    /// The global configuration, then the repository's own (later wins in git).
    fn read_repository(git_dir: &Path, home: Option<&Path>) -> Config {
        let mut config = Config::default();
        if let Some(home) = home {
            config.read_file(&home.join(".gitconfig"), home, 0);
            let xdg = std::env::var_os("XDG_CONFIG_HOME")
                .filter(|x| !x.is_empty())
                .map_or_else(|| home.join(".config"), PathBuf::from);
            config.read_file(&xdg.join("git/config"), home, 0);
        }
        // A linked work tree shares the main repository's `config` (`commondir`).
        let common = toolbelt_config::project_file::read_own(&git_dir.join("commondir"), 4096)
            .ok()
            .map(|b| git_dir.join(String::from_utf8_lossy(&b).trim()))
            .unwrap_or_else(|| git_dir.to_path_buf());
        let home = home.unwrap_or(Path::new("/"));
        config.read_file(&common.join("config"), home, 0);
        config.read_file(&git_dir.join("config.worktree"), home, 0);
        config
    }

    fn read_file(&mut self, file: &Path, home: &Path, depth: usize) {
        if depth > 4 || self.files >= MAX_CONFIG_FILES {
            return;
        }
        let Ok(bytes) = toolbelt_config::project_file::read_own(file, MAX_CONFIG_BYTES) else {
            return;
        };
        self.files += 1;
        let text = String::from_utf8_lossy(&bytes);
        let dir = file.parent().unwrap_or(Path::new("/"));
        for (key, value) in parse(&text) {
            let include =
                key == "include.path" || (key.starts_with("includeif.") && key.ends_with(".path"));
            if include {
                let target = match value.strip_prefix("~/") {
                    Some(rest) => home.join(rest),
                    None => dir.join(&value),
                };
                self.read_file(&target, home, depth + 1);
            }
            self.entries.push((key, value));
        }
    }

    /// The last value of `key` (lowercased, without a subsection).
    fn last(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The entries whose value is a command git runs. `core.fsmonitor` set to a boolean
    /// is git's own daemon, not a command.
    fn commands(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.entries.iter().filter_map(|(key, value)| {
            let is_command = COMMAND_KEYS.iter().any(|k| key_matches(k, key));
            let boolean = matches!(
                value.to_ascii_lowercase().as_str(),
                "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0" | ""
            );
            (is_command && !(key == "core.fsmonitor" && boolean))
                .then(|| (key.clone(), value.clone()))
        })
    }
}

/// `diff.*.textconv` matches `diff.x.textconv` and `diff.a.b.textconv`; `alias.*`
/// matches `alias.x`. `key` has its section and name lowercased.
fn key_matches(pattern: &str, key: &str) -> bool {
    let (section, name) = pattern.split_once('.').unwrap_or((pattern, ""));
    let Some(rest) = key.strip_prefix(section).and_then(|k| k.strip_prefix('.')) else {
        return false;
    };
    match name.strip_prefix("*.") {
        Some(name) => rest
            .rsplit_once('.')
            .is_some_and(|(sub, n)| !sub.is_empty() && n == name),
        None if name == "*" => !rest.is_empty(),
        None => rest == name,
    }
}

/// The `(key, value)` entries of a git configuration file: `section.key` or
/// `section.subsection.key`, section and key lowercased (the subsection keeps its case),
/// values unquoted and unescaped, a bare key being `true`. Lines that do not parse are
/// skipped (git would refuse the file; protecting less than git runs is then moot).
fn parse(text: &str) -> Vec<(String, String)> {
    let mut entries = Vec::new();
    let mut section = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut line = line.trim_start().to_string();
        // A value continued on the next line ends in an unescaped backslash.
        while line.ends_with('\\') && !line.ends_with("\\\\") {
            line.pop();
            match lines.next() {
                Some(next) => line.push_str(next),
                None => break,
            }
        }
        if let Some(header) = line.strip_prefix('[') {
            if let Some(name) = section_name(header) {
                section = name;
            }
            // A header may be followed by an entry on the same line.
            match header.split_once(']') {
                Some((_, rest)) if !rest.trim().is_empty() => line = rest.to_string(),
                _ => continue,
            }
        }
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) || section.is_empty() {
            continue;
        }
        let (name, value) = match line.split_once('=') {
            Some((n, v)) => (n.trim(), value_of(v)),
            None => (
                line.split_whitespace().next().unwrap_or(""),
                "true".to_string(),
            ),
        };
        if !name.is_empty() {
            entries.push((format!("{section}.{}", name.to_ascii_lowercase()), value));
        }
    }
    entries
}

/// `core`, `diff "x"` → `diff.x`, `branch.main` (the old spelling) → `branch.main`.
fn section_name(header: &str) -> Option<String> {
    let inside = header.split_once(']').map(|(h, _)| h)?;
    let inside = inside.trim();
    match inside.split_once(char::is_whitespace) {
        Some((name, sub)) => {
            let sub = sub.trim();
            let sub = sub.strip_prefix('"').and_then(|s| s.strip_suffix('"'))?;
            Some(format!(
                "{}.{}",
                name.to_ascii_lowercase(),
                sub.replace("\\\"", "\"").replace("\\\\", "\\")
            ))
        }
        None => Some(match inside.split_once('.') {
            Some((name, sub)) => format!("{}.{sub}", name.to_ascii_lowercase()),
            None => inside.to_ascii_lowercase(),
        }),
    }
}

/// A value: quotes removed, `\"`, `\\`, `\n`, `\t` read, a comment outside quotes cut.
fn value_of(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = raw.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => {}
            },
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests;
