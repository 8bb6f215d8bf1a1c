//! The workspace boundary: which directories tools may touch.
//!
//! Architecture Invariant: every path a tool reads or writes passes through
//! [`WorkspaceRoots::resolve`], which resolves `..` and symbolic links *before* checking
//! containment, also for paths that do not exist yet (the nearest existing ancestor is
//! resolved and the rest appended). A symbolic link inside the workspace that points out
//! of it is therefore outside.
//!
//! The roots also carry the session's [`PathPolicy`]: path rules name operations
//! (reading, editing), and the resolving methods are where every file tool's paths pass,
//! so a denied path is refused here, naming the rule, whichever tool asked for it.
//! [`WorkspaceRoots::resolve_readable`] checks reading, [`WorkspaceRoots::resolve`]
//! editing (it is the write path); both check the path as given and as resolved, so a
//! symbolic link cannot walk around a rule written for either name.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use crate::{ErrorKind, ToolError};
use crate::{PathOperation, PathPolicy};
use crate::{ProtectedPaths, Protection};

/// The directories tools may work in: the current directory, `--include-directories`
/// and `context.includeDirectories`, each stored resolved (canonical).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceRoots {
    roots: Vec<PathBuf>,
    /// Directories tools may read but not write: the session's own files (spilled
    /// output, background job logs), so the model can page through what was cut.
    readable: Vec<PathBuf>,
    /// Directories whose entries (not the directory itself) tools may read: each entry
    /// is some connection's own, found only by its unguessable name (`mcp serve`'s job
    /// logs, see `toolbelt_tools::JobTable::log_dir`), so the directory is never listed.
    readable_below: Vec<PathBuf>,
    /// The permission rules on reading and editing paths.
    policy: PathPolicy,
    /// The configuration a change to which is always asked (see [`crate::protected`]).
    protected: ProtectedPaths,
}

/// Why a path given to a tool was refused; [`PathError::error_kind`] maps it to the
/// [`ErrorKind`] of the result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path is the empty string.
    #[error("the path is empty")]
    Empty,
    /// The path contains a NUL byte.
    #[error("the path contains a NUL byte")]
    NulByte,
    /// The path is relative (as given), and the workspace roots to prefix it with.
    #[error(
        "the path must be absolute, but '{0}' is relative; prefix it with a workspace directory: {1}"
    )]
    Relative(String, RootList),
    /// The resolved path lies outside every root.
    #[error("the path '{path}' is outside the workspace{via}; allowed directories: {roots}")]
    Outside {
        /// The path as given.
        path: String,
        /// Empty, or ` (it resolves through a symbolic link to …)` when the path looks inside
        /// a root but a link leads out.
        via: String,
        /// The workspace roots.
        roots: RootList,
    },
    /// A symbolic link on the way has a target that does not exist (the path as given).
    #[error("the path '{0}' goes through a symbolic link whose target does not exist")]
    DanglingLink(String),
    /// Resolving failed (the path examined, the operating system's error).
    #[error("cannot resolve '{0}': {1}")]
    Io(String, String),
    /// A path rule of the settings denies the operation on this path.
    #[error(
        "{} '{path}' is denied by the permission rule `{rule}` in the settings; do not try to reach it another way",
        capitalized(operation.gerund())
    )]
    Denied {
        /// The path as the call gave it (the rule may have matched its resolved form).
        path: String,
        /// What was to be done to the path (reading, editing).
        operation: PathOperation,
        /// The rule, as written in the settings.
        rule: String,
    },
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

impl PathError {
    /// The [`ErrorKind`] a tool result carries for this error: `path_not_in_workspace`,
    /// `read_content_failure`, `execution_denied`, or `invalid_tool_params` for a malformed path.
    pub fn error_kind(&self) -> ErrorKind {
        match self {
            PathError::Outside { .. } | PathError::DanglingLink(_) => ErrorKind::PathNotInWorkspace,
            PathError::Io(..) => ErrorKind::ReadContentFailure,
            PathError::Denied { .. } => ErrorKind::ExecutionDenied,
            _ => ErrorKind::InvalidToolParams,
        }
    }
}

impl From<PathError> for ToolError {
    fn from(e: PathError) -> Self {
        ToolError::new(e.error_kind(), e.to_string())
    }
}

/// The roots, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootList(pub Vec<PathBuf>);

impl fmt::Display for RootList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.0.iter().map(|p| p.display().to_string()).collect();
        f.write_str(&names.join(", "))
    }
}

impl WorkspaceRoots {
    /// Resolves each root; roots that do not exist are an error naming them. Duplicates
    /// and roots nested in another root are kept once.
    pub fn new<I, P>(roots: I) -> std::io::Result<Self>
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        let mut resolved: Vec<PathBuf> = Vec::new();
        for root in roots {
            let root = root.as_ref();
            let real = root.canonicalize().map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("workspace directory {}: {e}", root.display()),
                )
            })?;
            if !real.is_dir() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotADirectory,
                    format!("workspace directory {} is not a directory", root.display()),
                ));
            }
            if !resolved.contains(&real) {
                resolved.push(real);
            }
        }
        Ok(WorkspaceRoots {
            roots: resolved,
            readable: Vec::new(),
            readable_below: Vec::new(),
            policy: PathPolicy::default(),
            protected: ProtectedPaths::default(),
        })
    }

    /// The same workspace (readable places, path rules, protected configuration) on the
    /// single root `root`, a git worktree of the checkout `checkout`: a sub-agent's
    /// (issue 45), whose tools must not reach the person's checkout. Path rules that
    /// name places in the checkout name the same places in the worktree too.
    pub fn rerooted(&self, checkout: &Path, root: &Path) -> std::io::Result<Self> {
        let mut fresh = WorkspaceRoots::new([root])?;
        fresh.readable = self.readable.clone();
        fresh.readable_below = self.readable_below.clone();
        fresh.policy = self.policy.relocated(crate::Relocation {
            from: checkout.to_path_buf(),
            to: root.to_path_buf(),
        });
        fresh.protected = self.protected.clone();
        Ok(fresh)
    }

    /// Applies `policy` to every path resolved from now on.
    pub fn with_path_policy(mut self, policy: PathPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Protects `path` (and what is under it) besides the protected names; see
    /// [`ProtectedPaths::add`].
    pub fn protect(&mut self, path: &Path, label: impl Into<String>, why: impl Into<String>) {
        self.protected.add(path, label, why);
    }

    /// Why a change to `path` must be asked of the person, if it must (see
    /// [`crate::ProtectedPaths`]). The path is judged as given (lexically normalised) and as
    /// resolved, so neither `..` nor a symbolic link leads around the check, also for a
    /// file that does not exist yet.
    pub fn protection(&self, path: &Path) -> Option<Protection> {
        self.protected
            .protection(&resolve_best_effort(path))
            .or_else(|| self.protected.protection(&normalize_lexically(path)))
    }

    /// The path rules, for walks that must leave covered paths out.
    pub fn path_policy(&self) -> &PathPolicy {
        &self.policy
    }

    /// Refuses `operation` on a path a deny rule covers, by its resolved name or by the
    /// name it was given (lexically normalised).
    fn check_rules(
        &self,
        operation: PathOperation,
        given: &str,
        real: &Path,
    ) -> Result<(), PathError> {
        if self.policy.is_empty() {
            return Ok(());
        }
        let lexical = normalize_lexically(Path::new(given));
        for path in [real, lexical.as_path()] {
            if let Some(rule) = self.policy.denying_rule(operation, path) {
                return Err(PathError::Denied {
                    path: given.to_string(),
                    operation,
                    rule,
                });
            }
        }
        Ok(())
    }

    /// Adds a directory that read-only tools may read (created if missing).
    pub fn add_readable(&mut self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let real = dir.canonicalize()?;
        if !self.readable.contains(&real) {
            self.readable.push(real);
        }
        Ok(())
    }

    /// Adds a directory whose entries, and what is below them, read-only tools may read,
    /// but not the directory itself (created if missing): it cannot be listed.
    pub fn add_readable_below(&mut self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let real = dir.canonicalize()?;
        if !self.readable_below.contains(&real) {
            self.readable_below.push(real);
        }
        Ok(())
    }

    /// Like [`WorkspaceRoots::resolve`], but also accepts the readable directories, and
    /// checks the rules on *reading* (not editing) the path. For tools that only read.
    pub fn resolve_readable(&self, given: &str) -> Result<PathBuf, PathError> {
        let real = match self.resolve_contained(given) {
            Err(PathError::Outside { path, via, roots }) => {
                let real = resolve_real(Path::new(given))?;
                if self.readable.iter().any(|r| real.starts_with(r))
                    || self
                        .readable_below
                        .iter()
                        .any(|d| real.starts_with(d) && real != *d)
                {
                    real
                } else {
                    return Err(PathError::Outside { path, via, roots });
                }
            }
            other => other?,
        };
        self.check_rules(PathOperation::Read, given, &real)?;
        Ok(real)
    }

    /// The roots, the first being the primary one (the current directory).
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The primary root (the current directory); `None` only when built from no roots.
    pub fn primary(&self) -> Option<&Path> {
        self.roots.first().map(PathBuf::as_path)
    }

    /// Whether an already resolved path lies in a root.
    pub fn contains(&self, real: &Path) -> bool {
        self.roots.iter().any(|root| real.starts_with(root))
    }

    /// The root that holds `real`, if any.
    pub fn root_of(&self, real: &Path) -> Option<&Path> {
        self.roots
            .iter()
            .map(PathBuf::as_path)
            .filter(|r| real.starts_with(r))
            .max_by_key(|r| r.as_os_str().len())
    }

    /// `real` relative to its root, for display; the path itself when outside.
    pub fn display_relative(&self, real: &Path) -> String {
        match self
            .root_of(real)
            .and_then(|root| real.strip_prefix(root).ok())
        {
            Some(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Some(rel) => rel.display().to_string(),
            None => real.display().to_string(),
        }
    }

    /// Checks a path given by the model: not empty, no NUL, absolute; then resolves `..`
    /// and symbolic links and checks that the result is inside a root, and that no rule
    /// denies *editing* it (this is the write path). Returns the resolved path, which
    /// need not exist.
    pub fn resolve(&self, given: &str) -> Result<PathBuf, PathError> {
        let real = self.resolve_contained(given)?;
        self.check_rules(PathOperation::Edit, given, &real)?;
        Ok(real)
    }

    /// The containment check of [`WorkspaceRoots::resolve`] alone, without the path
    /// rules: for a place that is neither read nor edited as a file (a working directory).
    pub fn resolve_contained(&self, given: &str) -> Result<PathBuf, PathError> {
        let path = check_absolute(given, &self.roots)?;
        let real = resolve_real(&path)?;
        if self.contains(&real) {
            return Ok(real);
        }
        let normal = normalize_lexically(&path);
        let via = if self.contains(&normal) {
            format!(
                " (it resolves through a symbolic link to {})",
                real.display()
            )
        } else {
            String::new()
        };
        Err(PathError::Outside {
            path: given.to_string(),
            via,
            roots: RootList(self.roots.clone()),
        })
    }
}

fn check_absolute(given: &str, roots: &[PathBuf]) -> Result<PathBuf, PathError> {
    if given.is_empty() {
        return Err(PathError::Empty);
    }
    if given.contains('\0') {
        return Err(PathError::NulByte);
    }
    let path = PathBuf::from(given);
    if !path.is_absolute() {
        return Err(PathError::Relative(
            given.to_string(),
            RootList(roots.to_vec()),
        ));
    }
    Ok(path)
}

/// `..` and `.` removed without touching the file system.
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `path` resolved as far as it can be; where it cannot (a dangling link, an unreadable
/// directory), normalised lexically.
pub fn resolve_best_effort(path: &Path) -> PathBuf {
    resolve_real(path).unwrap_or_else(|_| normalize_lexically(path))
}

/// Resolves symbolic links in `path`. For a path that does not exist, the nearest
/// existing ancestor is resolved and the missing rest appended; `..` in the missing
/// rest is applied lexically after that, which cannot climb above the resolved
/// ancestor's own parents without being seen by the containment check.
fn resolve_real(path: &Path) -> Result<PathBuf, PathError> {
    match path.canonicalize() {
        Ok(real) => return Ok(real),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(PathError::Io(path.display().to_string(), e.to_string()));
        }
        Err(_) => {}
    }
    let mut missing: Vec<std::ffi::OsString> = Vec::new();
    let mut current = path.to_path_buf();
    loop {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) => {
                if meta.file_type().is_symlink() && current.canonicalize().is_err() {
                    return Err(PathError::DanglingLink(path.display().to_string()));
                }
                let mut real = current
                    .canonicalize()
                    .map_err(|e| PathError::Io(current.display().to_string(), e.to_string()))?;
                for part in missing.iter().rev() {
                    if part == ".." {
                        real.pop();
                    } else if part != "." {
                        real.push(part);
                    }
                }
                return Ok(real);
            }
            Err(_) => {
                let Some(name) = current.file_name().map(|n| n.to_os_string()) else {
                    // `..` or the root: resolve the parent lexically and go on.
                    let parent = normalize_lexically(&current);
                    if parent == current {
                        return Ok(normalize_lexically(path));
                    }
                    current = parent;
                    continue;
                };
                missing.push(name);
                if !current.pop() {
                    return Ok(normalize_lexically(path));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, tempfile::TempDir, WorkspaceRoots) {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let roots = WorkspaceRoots::new([ws.path()]).unwrap();
        (ws, outside, roots)
    }

    fn s(p: &Path) -> String {
        p.to_str().unwrap().to_string()
    }

    #[test]
    fn file_inside_is_resolved() {
        let (ws, _o, roots) = setup();
        std::fs::write(ws.path().join("a.txt"), "x").unwrap();
        let real = roots.resolve(&s(&ws.path().join("a.txt"))).unwrap();
        assert_eq!(real, ws.path().canonicalize().unwrap().join("a.txt"));
    }

    #[test]
    fn relative_empty_and_nul_are_refused() {
        let (_ws, _o, roots) = setup();
        assert!(matches!(
            roots.resolve("a.txt"),
            Err(PathError::Relative(..))
        ));
        assert_eq!(roots.resolve(""), Err(PathError::Empty));
        assert_eq!(roots.resolve("/tmp/a\0b"), Err(PathError::NulByte));
    }

    #[test]
    fn dot_dot_traversal_is_refused() {
        let (ws, _o, roots) = setup();
        let given = format!("{}/../../etc/passwd", ws.path().display());
        let err = roots.resolve(&given).unwrap_err();
        assert!(matches!(err, PathError::Outside { .. }), "{err}");
        assert!(err.to_string().contains("allowed directories"));
    }

    #[test]
    fn missing_file_through_dot_dot_is_refused() {
        let (ws, _o, roots) = setup();
        let given = format!("{}/nope/../../new.txt", ws.path().display());
        assert!(matches!(
            roots.resolve(&given),
            Err(PathError::Outside { .. })
        ));
    }

    #[test]
    fn symlink_to_outside_file_and_dir_is_refused() {
        let (ws, outside, roots) = setup();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), ws.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("dir")).unwrap();
        let err = roots.resolve(&s(&ws.path().join("link"))).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        // A new file under a linked directory is outside too.
        let err = roots
            .resolve(&s(&ws.path().join("dir/new/file.txt")))
            .unwrap_err();
        assert!(matches!(err, PathError::Outside { .. }));
    }

    #[test]
    fn dangling_symlink_is_refused() {
        let (ws, outside, roots) = setup();
        std::os::unix::fs::symlink(outside.path().join("nothing"), ws.path().join("dangling"))
            .unwrap();
        let err = roots
            .resolve(&s(&ws.path().join("dangling/x")))
            .unwrap_err();
        assert!(matches!(err, PathError::DanglingLink(_)), "{err}");
    }

    #[test]
    fn new_file_inside_is_allowed() {
        let (ws, _o, roots) = setup();
        let real = roots
            .resolve(&s(&ws.path().join("sub/dir/new.rs")))
            .unwrap();
        assert!(real.ends_with("sub/dir/new.rs"));
        assert_eq!(roots.display_relative(&real), "sub/dir/new.rs");
    }

    #[test]
    fn readable_directories_are_readable_only() {
        let (ws, outside, mut roots) = setup();
        std::fs::write(outside.path().join("spill.txt"), "s").unwrap();
        let given = s(&outside.path().join("spill.txt"));
        assert!(roots.resolve_readable(&given).is_err());
        roots.add_readable(outside.path()).unwrap();
        assert!(roots.resolve_readable(&given).is_ok());
        assert!(roots.resolve(&given).is_err(), "not writable");
        assert!(roots.resolve_readable(&s(&ws.path().join("x"))).is_ok());
    }

    #[test]
    fn entries_of_a_readable_below_directory_are_readable_and_it_is_not() {
        let (_ws, outside, mut roots) = setup();
        let below = outside.path().join("connections");
        roots.add_readable_below(&below).unwrap();
        std::fs::create_dir_all(below.join("secret-name")).unwrap();
        std::fs::write(below.join("secret-name/log"), "x").unwrap();
        assert!(
            roots
                .resolve_readable(&s(&below.join("secret-name/log")))
                .is_ok()
        );
        assert!(
            roots
                .resolve_readable(&s(&below.join("secret-name")))
                .is_ok()
        );
        assert!(
            roots.resolve_readable(&s(&below)).is_err(),
            "it would be listed"
        );
        assert!(roots.resolve_readable(&s(&below.join("."))).is_err());
        assert!(roots.resolve(&s(&below.join("secret-name/log"))).is_err());
    }

    #[test]
    fn missing_root_is_an_error_naming_it() {
        let err = WorkspaceRoots::new(["/definitely/not/here"]).unwrap_err();
        assert!(err.to_string().contains("/definitely/not/here"));
    }
}
