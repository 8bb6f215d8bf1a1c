//! The grammars of rule specifiers, one per kind of subject, following Qwen Code's
//! permission manager so rules written for it mean the same here.
//!
//! - **Command globs** (`run_shell_command(git *)`) are matched against one simple
//!   command. `*` matches any run of characters, spaces included, anywhere in the
//!   pattern; because the space before a `*` is literal, `ls *` does not match `lsof`
//!   while `ls*` does. A trailing ` *` also matches the bare command (`git *` covers
//!   `git`). Without a `*` the pattern matches the command exactly or as a prefix
//!   followed by a space (`git commit` covers `git commit -m x`, not `git commitx`).
//!   `*` alone matches everything. A shell command is matched in the forms the shell
//!   would run it (`\rm`, `r"m"` and `/bin/rm` are `rm`), and how depends on the list
//!   (`specifier/command_forms.rs`): deny and ask rules match any spelling and a
//!   path-qualified name by its last component, so `FOO=1 ./rm x` is judged as `rm`,
//!   and they cover every command the shell tool marks unreadable
//!   ([`ShellCommand::unreadable`]: `$x v`, `env -S 'rm v'`). What a wrapper runs
//!   (`sudo rm x`) is one more subject the shell tool gives, so it is judged too;
//!   allow rules approve only a bare name or one in a system directory (`/usr/bin/ls`
//!   but not `./ls`), only when the command writes nothing through a redirection, only
//!   with the leading `VAR=x` assignments the rule itself spells out, and never an
//!   unreadable command (`Bash(git *)` does not approve `git -c alias.x='!rm v' x`):
//!   that takes a rule allowing every command (`Bash(*)`).
//! - **Path globs** (`read_file(//etc/**)`) use gitignore-style globs (`*` stays within
//!   one directory, `**` crosses them): `//x` is the absolute `/x`, `~/x` is under the
//!   home directory, `/x` is under the project root, `./x` and `x` under the working
//!   directory; a pattern without a `/` matches at any depth, and a pattern whose last
//!   component is a plain name covers everything under that name when it is a directory.
//! - **Domains** (`web_fetch(domain:example.com)`, or a bare host) match the host itself
//!   and its subdomains, case-insensitively.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::{Relocation, RuleBase};
use toolbelt_core::ShellCommand;

mod command_forms;

pub use command_forms::{CommandPurpose, SYSTEM_BIN_DIRS};

/// Whether the command-glob `pattern` covers one simple command of a shell call, read
/// for `purpose` (see [`CommandPurpose`]).
pub(super) fn shell_command_matches(
    pattern: &str,
    command: &ShellCommand,
    purpose: CommandPurpose,
) -> bool {
    match purpose {
        CommandPurpose::Approve => {
            // A redirection to a file writes where no rule can see; an environment
            // prefix (`LD_PRELOAD=`, `GIT_EXTERNAL_DIFF=`, `PAGER=`) can make the named
            // program run something else. Neither is approved unless the rule spells the
            // assignments out (`Bash(NODE_ENV=test npm *)`).
            if command.writes {
                return false;
            }
            // A command whose program runs code that cannot be read (`git -c
            // alias.x='!…' x`, `python3 -c …`, `$x`) runs what no rule names: only a
            // rule allowing every command approves it.
            if command.unreadable.is_some() {
                return collapse_spaces(pattern) == "*";
            }
            let prefix = command.assignments.join(" ");
            command_forms::strict(command).iter().any(|form| {
                if prefix.is_empty() {
                    glob_matches(pattern, form)
                } else {
                    glob_matches(pattern, &format!("{prefix} {form}"))
                }
            })
        }
        // `tools.core` lists the programs that may run: one whose program cannot be read
        // may be any of them, or another.
        CommandPurpose::Limit if command.unreadable.is_some() => collapse_spaces(pattern) == "*",
        CommandPurpose::Limit => command_forms::strict(command)
            .iter()
            .any(|form| glob_matches(pattern, form)),
        // A command whose program cannot be read could be the one the rule names.
        CommandPurpose::Restrict => {
            command.unreadable.is_some()
                || command_forms::every(command)
                    .iter()
                    .any(|form| glob_matches(pattern, form))
        }
    }
}

/// Whether the command-glob `pattern` covers the simple command `command` (its text;
/// leading assignments ignored).
#[cfg(test)]
pub(crate) fn command_matches(pattern: &str, command: &str) -> bool {
    glob_matches(pattern, strip_assignments(command.trim()))
}

/// The command glob itself, on a text taken as it is.
fn glob_matches(pattern: &str, command: &str) -> bool {
    let pattern = collapse_spaces(pattern);
    let command = collapse_spaces(command);
    if pattern == "*" {
        return true;
    }
    if !pattern.contains('*') {
        return command == pattern
            || (command.starts_with(&pattern) && command[pattern.len()..].starts_with(' '));
    }
    if let Some(prefix) = pattern.strip_suffix(" *")
        && command == prefix
    {
        return true;
    }
    wildcard(&pattern, &command)
}

/// Whether `pattern` matches all of `text`, where `*` matches any run of characters and
/// everything else matches itself: the one wildcard matcher (command globs here, tool
/// names in sub-agent definitions). Iterative, with one backtrack point, so a pattern
/// with many stars stays linear-ish.
pub fn wildcard(pattern: &str, text: &str) -> bool {
    let (pattern, text) = (pattern.as_bytes(), text.as_bytes());
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

fn collapse_spaces(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Drops leading `NAME=value` words (values may be quoted) from a command.
#[cfg(test)]
pub(crate) fn strip_assignments(mut command: &str) -> &str {
    loop {
        let name_len = command
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        let starts_like_name = command
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
        if !starts_like_name || command.as_bytes().get(name_len) != Some(&b'=') {
            return command;
        }
        let value_end = word_end(&command[name_len + 1..]) + name_len + 1;
        let rest = command[value_end..].trim_start();
        if rest.is_empty() {
            // Only assignments: keep the last one so the command is not empty.
            return command;
        }
        command = rest;
    }
}

/// The byte length of the shell word at the start of `s` (quotes and escapes kept
/// together), stopping at unquoted whitespace.
#[cfg(test)]
fn word_end(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\'' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            b if b.is_ascii_whitespace() => return i,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Whether the path-glob `spec` covers `path` (an absolute, resolved path).
pub(super) fn path_matches(spec: &str, path: &Path, base: &RuleBase) -> bool {
    PathGlob::compile(spec, base).is_some_and(|glob| glob.is_match(path))
}

/// `spec` and `base` with every anchor in the relocation's checkout moved to its
/// worktree (`//<checkout>/x` too); `None` when nothing names a place in the checkout.
fn relocated_spec(spec: &str, base: &RuleBase, r: &Relocation) -> Option<(String, RuleBase)> {
    let moved = |p: &Option<PathBuf>| p.as_ref().and_then(|p| r.moved(p));
    let anchors = RuleBase {
        project_root: moved(&base.project_root).or_else(|| base.project_root.clone()),
        cwd: moved(&base.cwd).or_else(|| base.cwd.clone()),
        home: moved(&base.home).or_else(|| base.home.clone()),
        relocated: None,
    };
    let absolute = spec
        .strip_prefix("//")
        .and_then(|rest| r.moved(&Path::new("/").join(rest)))
        .map(|p| format!("/{}", p.display()));
    let changed = absolute.is_some()
        || moved(&base.project_root).is_some()
        || moved(&base.cwd).is_some()
        || moved(&base.home).is_some();
    changed.then(|| (absolute.unwrap_or_else(|| spec.to_string()), anchors))
}

/// A path specifier anchored at a [`RuleBase`] and compiled once, so a walk over many
/// files does not build the same globs again for each of them.
#[derive(Debug, Clone)]
pub(super) struct PathGlob {
    set: GlobSet,
    /// The longest leading part of the anchored specifier without a wildcard (the whole
    /// path when it has none), for a sandbox that hides what the rule names.
    literal: PathBuf,
    /// The specifier has no wildcard: it names `literal` and what it holds.
    exact: bool,
    /// The same specifier at the relocated places ([`RuleBase::relocated`]).
    also: Option<Box<PathGlob>>,
}

impl PathGlob {
    /// Where the glob is anchored (its literal part, here and relocated), for
    /// [`super::PathPolicy::walk_fingerprint`].
    pub(super) fn anchors(&self) -> String {
        let also = self.also.as_ref().map(|a| a.anchors()).unwrap_or_default();
        format!("{:?} {} [{also}]", self.literal, self.exact)
    }

    /// `None` when the specifier cannot be anchored (`~/x` without a home) or is not a
    /// valid glob: such a rule matches no path.
    pub(super) fn compile(spec: &str, base: &RuleBase) -> Option<PathGlob> {
        let mut glob = Self::compile_at(spec, base)?;
        if let Some(r) = &base.relocated {
            glob.also = relocated_spec(spec, base, r)
                .and_then(|(spec, moved)| Self::compile_at(&spec, &moved))
                .map(Box::new);
        }
        Some(glob)
    }

    /// [`PathGlob::compile`] at `base`'s anchors only.
    fn compile_at(spec: &str, base: &RuleBase) -> Option<PathGlob> {
        let escape = |p: &Path| globset::escape(&p.to_string_lossy());
        let (literal, exact) = literal_prefix(spec, base)?;
        let anchored = if let Some(rest) = spec.strip_prefix("//") {
            format!("/{rest}")
        } else if let Some(rest) = spec.strip_prefix("~/") {
            format!("{}/{rest}", escape(base.home.as_ref()?))
        } else if let Some(rest) = spec.strip_prefix('/') {
            format!("{}/{rest}", escape(base.project_root.as_ref()?))
        } else {
            let rest = spec.strip_prefix("./").unwrap_or(spec);
            let cwd = base.cwd.as_ref()?;
            if rest.contains('/') {
                format!("{}/{rest}", escape(cwd))
            } else {
                format!("{}/**/{rest}", escape(cwd))
            }
        };
        let anchored = anchored.trim_end_matches('/');
        // A literal last component names a file or a directory; a directory covers what it
        // holds. A glob last component (`*.md`, `*`) matches names in that directory only.
        let last = anchored.rsplit('/').next().unwrap_or("");
        let mut globs = vec![anchored.to_string()];
        if !last.contains(['*', '?', '[', '{']) {
            globs.push(format!("{anchored}/**"));
        }
        let mut set = GlobSetBuilder::new();
        let mut any = false;
        for g in &globs {
            if let Ok(glob) = GlobBuilder::new(g)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
            {
                set.add(glob);
                any = true;
            }
        }
        if !any {
            return None;
        }
        set.build().ok().map(|set| PathGlob {
            set,
            literal,
            exact,
            also: None,
        })
    }

    pub(super) fn is_match(&self, path: &Path) -> bool {
        self.set.is_match(path) || self.also.as_ref().is_some_and(|a| a.is_match(path))
    }

    /// [`PathGlob::literal`] here and at the relocated places.
    pub(super) fn literals(&self) -> Vec<(&Path, bool)> {
        let mut out = vec![self.literal()];
        if let Some(also) = &self.also {
            out.push(also.literal());
        }
        out
    }

    /// The longest literal leading path and whether it is the whole specifier.
    pub(super) fn literal(&self) -> (&Path, bool) {
        (&self.literal, self.exact)
    }
}

/// The anchor of `spec` joined with its leading components that hold no wildcard or
/// escape, and whether that was all of it. A bare name (`.env`) matches at any depth
/// beneath the working directory, so its literal part is that directory.
fn literal_prefix(spec: &str, base: &RuleBase) -> Option<(PathBuf, bool)> {
    let (anchor, rest) = if let Some(rest) = spec.strip_prefix("//") {
        (PathBuf::from("/"), rest)
    } else if let Some(rest) = spec.strip_prefix("~/") {
        (base.home.clone()?, rest)
    } else if let Some(rest) = spec.strip_prefix('/') {
        (base.project_root.clone()?, rest)
    } else {
        let rest = spec.strip_prefix("./").unwrap_or(spec);
        let cwd = base.cwd.clone()?;
        if !rest.trim_end_matches('/').contains('/') {
            return Some((cwd, false));
        }
        (cwd, rest)
    };
    let mut literal = anchor;
    let components: Vec<&str> = rest.split('/').filter(|c| !c.is_empty()).collect();
    for (i, component) in components.iter().enumerate() {
        // `dir/**` names everything beneath `dir`, as a hiding of `dir` does.
        if *component == "**" && i + 1 == components.len() {
            return Some((literal, true));
        }
        if component.contains(['*', '?', '[', '{', '\\']) {
            return Some((literal, false));
        }
        if *component == "." || *component == ".." {
            return Some((literal, false));
        }
        literal.push(component);
    }
    Some((literal, true))
}

/// Whether the domain `spec` (`domain:x.org`, `x.org` or `*.x.org`) covers `host`.
pub(super) fn domain_matches(spec: &str, host: &str) -> bool {
    let domain = spec.strip_prefix("domain:").unwrap_or(spec).trim();
    let domain = domain.strip_prefix("*.").unwrap_or(domain);
    let domain = domain.trim_end_matches('.').to_ascii_lowercase();
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if domain.is_empty() {
        return false;
    }
    host == domain
        || (host.len() > domain.len()
            && host.ends_with(&domain)
            && host.as_bytes()[host.len() - domain.len() - 1] == b'.')
}

#[cfg(test)]
mod tests;
