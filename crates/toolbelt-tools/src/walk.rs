//! One way to walk the workspace, shared by every listing and search tool.
//!
//! Ignore rules are applied *while* walking (the `ignore` crate), so an ignored
//! directory such as `node_modules` is never entered. Qwen Code filtered afterwards and
//! paid for every file under it (its issue #6121). The rules:
//!
//! - `.gitignore` files, `.git/info/exclude` and the global excludes file
//!   (`core.excludesFile`), when `respect_git_ignore` is on. They apply even outside a
//!   git repository: a `.gitignore` says what the person does not want looked at.
//! - `.qwenignore` files (same syntax), when `respect_qwen_ignore` is on.
//! - The `.git` directory itself is never walked.
//!
//! Hidden files are walked (models ask for `.github/**`), symbolic links are not
//! followed (a link out of the workspace would leak it), and only regular files are
//! reported as files: FIFOs and devices would block or never end.
//!
//! The permission rules on reading paths apply here too, for every tool that walks: a
//! file or directory that a deny *or ask* rule covers (`read_file(//ws/.env)`,
//! `Read(/secrets/**)`) is left out while walking, and a denied directory is not
//! entered. A walk cannot stop to ask, so asking is for calls that name the path
//! directly. What was left out is counted in a [`Withheld`], so a result can say that
//! rules withheld N paths without naming them (a listing of names would say what the
//! person did not want looked at). [`Walker`] wraps the builder so a tool adding its
//! own `filter_entry` cannot replace these filters.
//!
//! The `ignore` crate reads each directory's ignore files itself, whole, when it enters
//! the directory. A cloned repository's `.gitignore` that is a FIFO or a link to
//! `/dev/zero` would hang the walk or exhaust memory, so a directory whose ignore file is
//! not a regular file of at most [`MAX_IGNORE_FILE_BYTES`] (after following links) is not
//! entered, with a warning; when that is the walk's start or one of its parents, nothing
//! is walked.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ignore::{DirEntry, WalkBuilder};
use toolbelt_config::settings::Settings;
use toolbelt_core::PathPolicy;
use toolbelt_core::{ToolError, WorkspaceRoots};

/// The custom ignore file Qwen Code reads besides `.gitignore`.
pub(crate) const QWEN_IGNORE: &str = ".qwenignore";

/// Which ignore files apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IgnoreRules {
    pub respect_git_ignore: bool,
    pub respect_qwen_ignore: bool,
}

impl Default for IgnoreRules {
    fn default() -> Self {
        IgnoreRules {
            respect_git_ignore: true,
            respect_qwen_ignore: true,
        }
    }
}

impl IgnoreRules {
    /// `context.fileFiltering.respectGitIgnore` / `respectQwenIgnore`.
    pub(crate) fn from_settings(settings: &Settings) -> Self {
        let f = &settings.context.file_filtering;
        IgnoreRules {
            respect_git_ignore: f.respect_git_ignore,
            respect_qwen_ignore: f.respect_qwen_ignore,
        }
    }

    /// These rules with a call's own overrides applied.
    pub(crate) fn with(self, git: Option<bool>, qwen: Option<bool>) -> Self {
        IgnoreRules {
            respect_git_ignore: git.unwrap_or(self.respect_git_ignore),
            respect_qwen_ignore: qwen.unwrap_or(self.respect_qwen_ignore),
        }
    }
}

/// The paths the permission rules kept out of one call's walks, counted.
/// Cheap to clone; clones share the count.
#[derive(Debug, Clone, Default)]
pub(crate) struct Withheld {
    policy: PathPolicy,
    count: Arc<AtomicUsize>,
}

impl Withheld {
    /// The rules of the session whose roots these are, nothing withheld yet.
    pub(crate) fn new(roots: &WorkspaceRoots) -> Self {
        Withheld {
            policy: roots.path_policy().clone(),
            count: Arc::default(),
        }
    }

    /// Whether `path` must be left out; if so it is counted.
    pub(crate) fn withholds(&self, path: &Path) -> bool {
        let out = self.policy.withholds_from_walk(path);
        if out {
            self.count.fetch_add(1, Ordering::Relaxed);
        }
        out
    }

    pub(crate) fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// A sentence for the result when something was left out (a directory counts once).
    pub(crate) fn note(&self) -> Option<String> {
        match self.count() {
            0 => None,
            n => Some(format!(
                "{n} path(s) were left out because the user's permission rules deny or restrict reading them; do not try to reach them another way."
            )),
        }
    }
}

/// A walk being configured: the `ignore` builder with the ignore rules, `.git` and the
/// permission rules already in place. The methods mirror [`WalkBuilder`]'s.
pub(crate) struct Walker {
    builder: WalkBuilder,
    base_filter: Arc<dyn Fn(&DirEntry) -> bool + Send + Sync>,
}

impl Walker {
    pub(crate) fn threads(&mut self, n: usize) -> &mut Self {
        self.builder.threads(n);
        self
    }

    pub(crate) fn max_depth(&mut self, depth: Option<usize>) -> &mut Self {
        self.builder.max_depth(depth);
        self
    }

    /// Adds a filter; entries must pass it *and* the walker's own filters (`ignore`'s
    /// `filter_entry` would replace them).
    pub(crate) fn filter_entry<P>(&mut self, filter: P) -> &mut Self
    where
        P: Fn(&DirEntry) -> bool + Send + Sync + 'static,
    {
        let base = self.base_filter.clone();
        let both: Arc<dyn Fn(&DirEntry) -> bool + Send + Sync> =
            Arc::new(move |entry: &DirEntry| base(entry) && filter(entry));
        let installed = both.clone();
        self.builder.filter_entry(move |entry| installed(entry));
        self.base_filter = both;
        self
    }

    pub(crate) fn build(&self) -> ignore::Walk {
        self.builder.build()
    }

    pub(crate) fn build_parallel(&self) -> ignore::WalkParallel {
        self.builder.build_parallel()
    }
}

/// Largest ignore file read.
pub(crate) const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

/// The ignore files the walk reads in each directory.
fn ignore_file_names(rules: IgnoreRules) -> impl Iterator<Item = &'static str> {
    [
        rules.respect_git_ignore.then_some(".gitignore"),
        rules.respect_qwen_ignore.then_some(QWEN_IGNORE),
    ]
    .into_iter()
    .flatten()
}

/// Whether the `ignore` crate may read `dir`'s ignore files: each is missing, or a
/// regular file (links followed) of at most [`MAX_IGNORE_FILE_BYTES`].
fn ignore_files_readable(dir: &Path, rules: IgnoreRules) -> bool {
    ignore_file_names(rules).all(|name| {
        let path = dir.join(name);
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() && meta.len() <= MAX_IGNORE_FILE_BYTES => true,
            Ok(_) => {
                tracing::warn!(
                    "{} is not a regular file of at most {MAX_IGNORE_FILE_BYTES} bytes; {} is not walked",
                    path.display(),
                    dir.display()
                );
                false
            }
            // Missing (or a dangling link, which `ignore` cannot open either).
            Err(_) => true,
        }
    })
}

/// A walker over `root` configured with `rules`, leaving out (and counting in
/// `withheld`) what the permission rules keep from reading. Callers add depth limits,
/// filters or parallelism on the returned [`Walker`].
pub(crate) fn walker(root: &Path, rules: IgnoreRules, withheld: &Withheld) -> Walker {
    // `ignore` reads the ignore files of the start and of its parents before any filter
    // runs: if one cannot be read safely, no ignore file is read and nothing is walked.
    let start_readable = root
        .ancestors()
        .all(|dir| ignore_files_readable(dir, rules));
    let rules = if start_readable {
        rules
    } else {
        IgnoreRules {
            respect_git_ignore: false,
            respect_qwen_ignore: false,
        }
    };
    let mut builder = WalkBuilder::new(root);
    builder
        .standard_filters(false)
        .hidden(false)
        .parents(true)
        .follow_links(false)
        .git_ignore(rules.respect_git_ignore)
        .git_exclude(rules.respect_git_ignore)
        .git_global(rules.respect_git_ignore)
        .require_git(false);
    if rules.respect_qwen_ignore {
        builder.add_custom_ignore_filename(QWEN_IGNORE);
    }
    let withheld = withheld.clone();
    // The rules are checked last, so an ignored file is not counted as withheld.
    // `ignore` never applies the filter to the root itself (depth 0): the root was
    // resolved, and checked, by the tool.
    let base_filter: Arc<dyn Fn(&DirEntry) -> bool + Send + Sync> =
        Arc::new(move |entry: &DirEntry| {
            start_readable
                && entry.file_name() != ".git"
                && !withheld.withholds(entry.path())
                && (!entry.file_type().is_some_and(|t| t.is_dir())
                    || ignore_files_readable(entry.path(), rules))
        });
    let installed = base_filter.clone();
    builder.filter_entry(move |entry| installed(entry));
    Walker {
        builder,
        base_filter,
    }
}

/// Entries a tree may hold and still be walked on one thread ([`threads_for`]).
const SMALL_TREE: usize = 256;
/// Directories a tree may hold and still be walked on one thread: what bounds the count's
/// cost on a tree of many small directories.
const SMALL_TREE_DIRS: usize = 24;

/// Threads for a parallel walk of `root`: one for a tree of at most [`SMALL_TREE`]
/// entries, else one per core ([`threads`]). The count is a plain listing on this
/// thread, without the rules (so it counts what they would skip too: a tree that is
/// small only once ignored files are left out is walked on every core, as before), and
/// not into `.git` or through links; it stops at either bound ([`SMALL_TREE_DIRS`]
/// directories listed).
///
/// Why: `ignore`'s parallel walker lets a worker that finds no work sleep for a
/// millisecond at a time, and the walk ends only when every worker has seen the end, so
/// on a tree with little to do the walk took about 1.3 ms whatever its size; a glob or
/// grep of a small project paid that at every call (issue 49). With one worker it ends
/// as soon as its stack is empty. On a 15,000-file tree the count lists 24 directories
/// before it gives up: a fraction of a millisecond of a grep's hundred.
pub(crate) fn threads_for(root: &Path) -> usize {
    let mut seen = 0usize;
    let mut listed = 0usize;
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        listed += 1;
        if listed > SMALL_TREE_DIRS {
            return threads();
        }
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            seen += 1;
            if seen > SMALL_TREE {
                return threads();
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) && entry.file_name() != ".git" {
                dirs.push(entry.path());
            }
        }
    }
    1
}

/// Threads for a parallel walk: one per core, as ripgrep does.
pub(crate) fn threads() -> usize {
    cores().min(12)
}

/// The cores this process may use, asked once: `available_parallelism` reads
/// `/proc/self/cgroup` and the cgroup's CPU quota files at every call (three files
/// opened and parsed), and the walks and the checkpoints ask at each of a session's
/// calls (issue 49). A quota changed while toolbelt runs keeps the count it started
/// with, as tokio's worker count does.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
}

/// Whether a walked entry is a regular file (not a link, FIFO, socket or device).
pub(crate) fn is_regular_file(entry: &ignore::DirEntry) -> bool {
    entry.file_type().is_some_and(|t| t.is_file())
}

/// The literal leading directories of a glob (`src/app/**/*.rs` → `src/app`), so a walk
/// can start there instead of at the root. Stops at the first component with a glob
/// metacharacter, and never includes the last component (it names files). `.` and empty
/// components are dropped; `..` is kept in the prefix, where [`glob_start`] resolves it
/// like any path (so `../*` is outside the workspace rather than matching nothing).
pub(crate) fn literal_prefix(pattern: &str) -> (String, String) {
    let parts: Vec<&str> = pattern.split('/').collect();
    let mut prefix = Vec::new();
    let mut taken = 0;
    for part in &parts[..parts.len().saturating_sub(1)] {
        if part.contains(['*', '?', '[', ']', '{', '}', '\\']) {
            break;
        }
        taken += 1;
        if !part.is_empty() && *part != "." {
            prefix.push(*part);
        }
    }
    let rest = parts[taken..].join("/");
    (prefix.join("/"), rest)
}

/// Where the walk for a glob starts, and the part of the pattern matched below it.
///
/// The pattern is relative to `base` unless it is absolute. Its literal leading
/// directories are resolved like any path the model gives, through
/// [`WorkspaceRoots::resolve_readable`]: `..` and symbolic links are resolved *before*
/// containment is checked. This is what keeps a walk inside the roots: the walker never
/// follows a link it meets, but it does enter the directory it is started on, so
/// `etc_link/pass*` (with `etc_link` → `/etc`) must fail here, with the same
/// "outside the workspace" error as `read_file` gives. A `..` after the first wildcard
/// could only be matched by leaving the walked tree; it is refused.
pub(crate) fn glob_start(
    roots: &WorkspaceRoots,
    base: &Path,
    pattern: &str,
) -> Result<(PathBuf, String), ToolError> {
    let (absolute, relative) = match pattern.strip_prefix('/') {
        Some(rest) => (true, rest),
        None => (false, pattern),
    };
    let (prefix, rest) = literal_prefix(relative);
    if rest.split('/').any(|part| part == "..") {
        return Err(ToolError::invalid_params(format!(
            "'..' may only come before the first wildcard of a pattern, not in '{rest}'."
        )));
    }
    let joined = if absolute {
        PathBuf::from(format!("/{prefix}"))
    } else {
        base.join(&prefix)
    };
    let Some(joined) = joined.to_str() else {
        return Err(ToolError::invalid_params(
            "the pattern's directory is not valid UTF-8.",
        ));
    };
    let start = roots.resolve_readable(joined)?;
    Ok((start, rest))
}

/// One entry of [`walk_workspace`].
#[derive(Debug, Clone, Copy)]
pub struct WalkedEntry<'a> {
    /// The entry's path (the start joined with the names below it).
    pub path: &'a Path,
    /// What it is, as the directory listing says (links are not followed).
    pub file_type: std::fs::FileType,
    /// How far below the start: 1 for the start's own entries.
    pub depth: usize,
}

/// The walk the tools make, for a caller outside them (the file checkpoints of
/// `toolbelt-history`): `start` (inside `roots`) with the session's ignore rules
/// (`context.fileFiltering`), `.git` left out, nothing the permission rules keep from
/// reading, links not followed, down to `max_depth` (`None`: all the way). A directory
/// in `exclude` (a store that lives in the workspace) is not entered. `each` sees every
/// entry below the start, directories included; the result is how many paths the
/// permission rules withheld.
pub fn walk_workspace(
    roots: &WorkspaceRoots,
    settings: &Settings,
    start: &Path,
    max_depth: Option<usize>,
    exclude: &[PathBuf],
    each: &mut dyn FnMut(WalkedEntry<'_>),
) -> usize {
    let withheld = Withheld::new(roots);
    let mut walk = walker(start, IgnoreRules::from_settings(settings), &withheld);
    walk.max_depth(max_depth);
    if !exclude.is_empty() {
        let exclude = exclude.to_vec();
        walk.filter_entry(move |entry| !exclude.iter().any(|e| e == entry.path()));
    }
    for entry in walk.build().filter_map(Result::ok) {
        if entry.depth() == 0 {
            continue;
        }
        if let Some(file_type) = entry.file_type() {
            each(WalkedEntry {
                path: entry.path(),
                file_type,
                depth: entry.depth(),
            });
        }
    }
    withheld.count()
}

/// [`walk_workspace`] on one thread per core (the `ignore` crate's parallel walker, as
/// ripgrep walks), all the way down: `each` runs on the walk's threads, in no particular
/// order, so a caller that must stat every entry (the checkpoints of a one-shot process)
/// does it on those threads too. Same rules, same result.
pub fn walk_workspace_parallel(
    roots: &WorkspaceRoots,
    settings: &Settings,
    start: &Path,
    exclude: &[PathBuf],
    each: &(dyn Fn(WalkedEntry<'_>) + Sync),
) -> usize {
    let withheld = Withheld::new(roots);
    let mut walk = walker(start, IgnoreRules::from_settings(settings), &withheld);
    walk.threads(threads());
    if !exclude.is_empty() {
        let exclude = exclude.to_vec();
        walk.filter_entry(move |entry| !exclude.iter().any(|e| e == entry.path()));
    }
    walk.build_parallel().run(|| {
        Box::new(|entry| {
            if let Ok(entry) = entry
                && entry.depth() > 0
                && let Some(file_type) = entry.file_type()
            {
                each(WalkedEntry {
                    path: entry.path(),
                    file_type,
                    depth: entry.depth(),
                });
            }
            ignore::WalkState::Continue
        })
    });
    withheld.count()
}

/// The files in each walked directory whose content shapes what a walk of it reports
/// (its ignore files, and a repository's excludes), whichever of them the settings
/// obey: a cache of walks (the checkpoints' index) stamps them to know when the rules
/// of a directory it did not list again changed.
pub const DIRECTORY_RULE_FILES: [&str; 3] = [".gitignore", QWEN_IGNORE, ".git/info/exclude"];

/// The files outside the walked tree whose content shapes a walk of `start`: the rule
/// files of its parents ([`DIRECTORY_RULE_FILES`] in each), git's configuration files
/// and the global excludes file they name. With [`DIRECTORY_RULE_FILES`] of every
/// directory walked, a change to none of these (and the same settings) means the same
/// rules.
pub fn walk_rule_files(start: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in start.ancestors().skip(1) {
        files.extend(DIRECTORY_RULE_FILES.iter().map(|name| dir.join(name)));
    }
    let git_config = files.len();
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        files.push(home.join(".gitconfig"));
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
    if let Some(config) = config {
        files.push(config.join("git").join("config"));
        files.push(config.join("git").join("ignore"));
    }
    for var in ["GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"] {
        files.extend(std::env::var_os(var).map(PathBuf::from));
    }
    files.push(PathBuf::from("/etc/gitconfig"));
    files.extend(global_excludes_path(&files[git_config..]));
    files
}

/// The global excludes file git's configuration names (`core.excludesFile`, else git's
/// default), as [`ignore::gitignore::gitconfig_excludes_path`] finds it, kept while the
/// environment it reads and the stat of every configuration file it may read (`files`)
/// stay the same. Finding it opens, reads and parses up to four files, and a checkpoint
/// asks at each sync (issue 49).
fn global_excludes_path(files: &[PathBuf]) -> Option<PathBuf> {
    static MEMO: ExcludesMemo = std::sync::Mutex::new(None);
    let env = [
        "HOME",
        "XDG_CONFIG_HOME",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
    ]
    .iter()
    .map(std::env::var_os)
    .collect();
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(i64::MAX, |d| {
            i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
        });
    memoized(
        &MEMO,
        config_key(env, files, now_ns),
        ignore::gitignore::gitconfig_excludes_path,
    )
}

/// The environment variables and configuration files' stats (size, times, inode,
/// device; `None` for a missing file) an excludes path was found with.
type ConfigKey = (Vec<Option<std::ffi::OsString>>, Vec<Option<[i64; 5]>>);
type ExcludesMemo = std::sync::Mutex<Option<(ConfigKey, Option<PathBuf>)>>;

/// The key of `env` and `files` now; `None` when a file changed within two seconds of
/// `now_ns` (git's "racily clean" rule: it may change again without its stat showing
/// it). Links are followed, as the files are opened; the change time catches a rewrite
/// that put the size and modification time back.
fn config_key(
    env: Vec<Option<std::ffi::OsString>>,
    files: &[PathBuf],
    now_ns: i64,
) -> Option<ConfigKey> {
    use std::os::unix::fs::MetadataExt;
    let nanos = |s: i64, ns: i64| s.saturating_mul(1_000_000_000).saturating_add(ns);
    let mut stats = Vec::with_capacity(files.len());
    for file in files {
        let stat = std::fs::metadata(file).ok().map(|m| {
            [
                i64::try_from(m.len()).unwrap_or(i64::MAX),
                nanos(m.mtime(), m.mtime_nsec()),
                nanos(m.ctime(), m.ctime_nsec()),
                m.ino().cast_signed(),
                m.dev().cast_signed(),
            ]
        });
        if stat.is_some_and(|s| s[1].saturating_add(2_000_000_000) >= now_ns) {
            return None;
        }
        stats.push(stat);
    }
    Some((env, stats))
}

/// What `find` gives, from `memo` when it was found under the same `key` (never kept
/// without a key).
fn memoized(
    memo: &ExcludesMemo,
    key: Option<ConfigKey>,
    find: impl FnOnce() -> Option<PathBuf>,
) -> Option<PathBuf> {
    let Some(key) = key else {
        return find();
    };
    let mut memo = memo
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((k, path)) = memo.as_ref()
        && *k == key
    {
        return path.clone();
    }
    let path = find();
    *memo = Some((key, path.clone()));
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_prefix_splits_at_the_first_glob_component() {
        let cases = [
            ("src/app/**/*.rs", ("src/app", "**/*.rs")),
            ("**/*.rs", ("", "**/*.rs")),
            ("*.rs", ("", "*.rs")),
            ("src/main.rs", ("src", "main.rs")),
            ("a/b*/c.rs", ("a", "b*/c.rs")),
            ("../x/*.rs", ("../x", "*.rs")),
            ("./src//*.rs", ("src", "*.rs")),
            ("a/../b*/c", ("a/..", "b*/c")),
            ("src/{a,b}/x.rs", ("src", "{a,b}/x.rs")),
        ];
        for (pattern, (prefix, rest)) in cases {
            assert_eq!(
                literal_prefix(pattern),
                (prefix.to_string(), rest.to_string()),
                "{pattern}"
            );
        }
    }

    #[test]
    fn the_global_excludes_path_is_found_again_when_gits_configuration_changes() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("gitconfig");
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let write_aged = |text: &str| {
            std::fs::write(&config, text).unwrap();
            std::fs::File::options()
                .write(true)
                .open(&config)
                .unwrap()
                .set_modified(hour_ago)
                .unwrap();
        };
        let now = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as i64
        };
        let env = || vec![Some(std::ffi::OsString::from("/home/a"))];
        let files = [config.clone(), dir.path().join("missing")];
        let memo: ExcludesMemo = std::sync::Mutex::new(None);
        let found = |key, path: &str| {
            let mut asked = false;
            let got = memoized(&memo, key, || {
                asked = true;
                Some(PathBuf::from(path))
            });
            (got.unwrap().display().to_string(), asked)
        };
        write_aged("[core]\n\texcludesFile = /one\n");
        let key = config_key(env(), &files, now());
        assert!(key.is_some(), "an old file gives a key");
        assert_eq!(found(key.clone(), "/one"), ("/one".into(), true));
        assert_eq!(found(key, "/other"), ("/one".into(), false), "not kept");
        // Rewritten, its modification time put back: the change time differs.
        write_aged("[core]\n\texcludesFile = /two\n");
        assert_eq!(
            found(config_key(env(), &files, now()), "/two"),
            ("/two".into(), true)
        );
        // Another HOME: found again.
        let other_env = vec![Some(std::ffi::OsString::from("/home/b"))];
        assert_eq!(
            found(config_key(other_env, &files, now()), "/three"),
            ("/three".into(), true)
        );
        // A file created where none was: found again.
        std::fs::write(&files[1], "").unwrap();
        assert!(
            config_key(env(), &files, now()).is_none(),
            "a file written just now gives no key"
        );
        assert_eq!(found(None, "/four"), ("/four".into(), true));
        assert_eq!(
            found(None, "/five"),
            ("/five".into(), true),
            "nothing kept without a key"
        );
    }

    /// The relative paths of the files a walk of `root` reports.
    fn walked(root: &Path) -> Vec<String> {
        let roots = WorkspaceRoots::new([root]).unwrap();
        let withheld = Withheld::new(&roots);
        let mut files: Vec<String> = walker(root, IgnoreRules::default(), &withheld)
            .build()
            .filter_map(Result::ok)
            .filter(is_regular_file)
            .map(|e| {
                let path = e.path().strip_prefix(root).unwrap();
                path.display().to_string()
            })
            .collect();
        files.sort();
        files
    }

    #[test]
    fn ignore_files_that_would_hang_or_exhaust_the_walk_are_not_read() {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("zero")).unwrap();
        std::fs::create_dir_all(root.join("fifo")).unwrap();
        std::fs::create_dir_all(root.join("fine")).unwrap();
        for dir in ["zero", "fifo", "fine"] {
            std::fs::write(root.join(dir).join("a.txt"), "a").unwrap();
        }
        std::fs::write(root.join("fine/.gitignore"), "ignored.txt\n").unwrap();
        std::fs::write(root.join("fine/ignored.txt"), "i").unwrap();
        // Read whole, /dev/zero never ends; a FIFO blocks the walk for ever.
        std::os::unix::fs::symlink("/dev/zero", root.join("zero/.gitignore")).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(root.join("fifo/.qwenignore"))
            .status()
            .unwrap();
        assert!(status.success());
        assert_eq!(walked(&root), ["fine/.gitignore", "fine/a.txt"]);
        // At the start of the walk, nothing is walked.
        assert_eq!(walked(&root.join("zero")), Vec::<String>::new());
    }

    /// A small tree is walked on one thread, a large one (by entries, or by directories)
    /// on every core; what is in `.git` does not count.
    #[test]
    fn small_trees_are_walked_on_one_thread() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/a")).unwrap();
        std::fs::write(root.join("src/a/x.rs"), "x").unwrap();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        for i in 0..400 {
            std::fs::write(root.join(format!(".git/objects/{i}")), "o").unwrap();
        }
        assert_eq!(threads_for(root), 1);
        let wide = root.join("wide");
        std::fs::create_dir(&wide).unwrap();
        for i in 0..SMALL_TREE {
            std::fs::write(wide.join(format!("f{i}")), "f").unwrap();
        }
        assert_eq!(threads_for(root), threads());
        assert_eq!(threads_for(&root.join("src")), 1);
        let deep = root.join("deep");
        for i in 0..=SMALL_TREE_DIRS {
            std::fs::create_dir_all(deep.join(format!("d{i}"))).unwrap();
        }
        assert_eq!(threads_for(&deep), threads());
    }
}
