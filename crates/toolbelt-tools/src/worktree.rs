//! Git worktrees (issue 45): a checkout of its own, `<repo>/.qwen/worktrees/<slug>` on
//! branch `worktree-<slug>`, for a session (`--worktree`, `enter_worktree`) or a
//! sub-agent, so nothing it changes reaches the person's checkout until they merge it.
//! The layout, names and guards are Qwen Code's, so a person moving between the two
//! finds the same worktrees.
//!
//! What an attacker controls here is a name (a flag, a model's `enter_worktree`) and a
//! repository's contents. A name is checked before it becomes a path or a branch
//! ([`name`]: one path component, no `..`); `.qwen` and `.qwen/worktrees` must be real
//! directories of the repository, not symbolic links, and the folder is checked to be
//! inside the repository once made; git always runs as a program with arguments
//! (`git_cmd`), never through a shell. Removal ([`removal`]) only ever removes what
//! `git worktree list` names under `.qwen/worktrees`, and refuses what holds work.

use std::path::{Path, PathBuf};

mod git_cmd;
pub mod name;
pub mod populate;
pub mod removal;
mod state;

pub use name::NameRequest;
pub use state::SessionWorktrees;

use git_cmd::{git, git_ok};

/// The folder of worktrees, relative to the repository's root.
pub const WORKTREES_DIR: &str = ".qwen/worktrees";
/// Every worktree branch starts with this.
pub const BRANCH_PREFIX: &str = "worktree-";

/// Why a worktree could not be made, found or removed: a message for the person or the
/// model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WorktreeError {
    /// The directory is in no git repository.
    #[error("{0} is not in a git repository: worktrees need one (run `git init` first)")]
    NotARepository(String),
    /// HEAD names no branch, so there is nothing to branch from by name.
    #[error(
        "the repository's HEAD is detached (no current branch): check out a branch first, or name a pull request with #N"
    )]
    DetachedHead,
    /// A worktree or branch of that name exists.
    #[error("the worktree name {0:?} is taken: {1}")]
    NameTaken(String, String),
    /// The name breaks the rules.
    #[error("bad worktree name {0}")]
    BadName(String),
    /// A path that would lead outside the repository.
    #[error("{0}")]
    Unsafe(String),
    /// No worktree of that name.
    #[error("no worktree named {0:?} under {WORKTREES_DIR}")]
    NotFound(String),
    /// git failed.
    #[error("{0}")]
    Git(String),
}

/// A worktree under `.qwen/worktrees`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Worktree {
    /// Its directory.
    pub path: PathBuf,
    /// Its branch (`worktree-<slug>`).
    pub branch: String,
    /// Its name.
    pub slug: String,
    /// The main checkout of the repository it belongs to.
    pub repo: PathBuf,
}

/// The main checkout of the repository around `dir` (from a linked worktree too: new
/// worktrees always go under the person's own checkout, never nested in another one).
pub fn main_root(dir: &Path) -> Result<PathBuf, WorktreeError> {
    let common = git(
        dir,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )
    .map_err(|_| WorktreeError::NotARepository(dir.display().to_string()))?;
    let common = PathBuf::from(common);
    let root = match common.file_name() {
        Some(n) if n == ".git" => common.parent().map(Path::to_path_buf),
        _ => None,
    };
    let root = root.ok_or_else(|| {
        WorktreeError::NotARepository(format!(
            "{} (its repository {} has no working tree of its own)",
            dir.display(),
            common.display()
        ))
    })?;
    root.canonicalize()
        .map_err(|e| WorktreeError::Git(format!("cannot resolve {}: {e}", root.display())))
}

/// Makes a worktree for `request` in the repository around `dir`: on a new branch from
/// `dir`'s current branch, or from `origin`'s pull request.
pub fn create(dir: &Path, request: &NameRequest) -> Result<Worktree, WorktreeError> {
    let repo = main_root(dir)?;
    let slug = request.slug();
    name::check(&slug)?;
    let base = match request {
        NameRequest::PullRequest(n) => {
            let refspec = format!("refs/pull/{n}/head");
            git(&repo, &["fetch", "--quiet", "origin", &refspec])?;
            git(&repo, &["rev-parse", "--verify", "FETCH_HEAD^{commit}"])?
        }
        _ => current_branch(dir)?,
    };
    let branch = format!("{BRANCH_PREFIX}{slug}");
    let folder = worktrees_folder(&repo)?;
    let path = folder.join(&slug);
    if path.symlink_metadata().is_ok() {
        return Err(WorktreeError::NameTaken(
            slug,
            format!("{} exists", path.display()),
        ));
    }
    if git_ok(
        &repo,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )? {
        return Err(WorktreeError::NameTaken(
            slug,
            format!("the branch {branch} exists"),
        ));
    }
    let path_text = path.to_string_lossy().into_owned();
    git(
        &repo,
        &[
            "worktree", "add", "--quiet", "-b", &branch, &path_text, &base,
        ],
    )?;
    exclude_worktrees(&repo)?;
    Ok(Worktree {
        path,
        branch,
        slug,
        repo,
    })
}

/// The branch `dir` is on; a detached HEAD is an error.
fn current_branch(dir: &Path) -> Result<String, WorktreeError> {
    git(dir, &["symbolic-ref", "--quiet", "--short", "HEAD"]).map_err(|_| {
        if git_ok(dir, &["rev-parse", "--verify", "--quiet", "HEAD"]).unwrap_or(false) {
            WorktreeError::DetachedHead
        } else {
            WorktreeError::Git(
                "the current branch has no commit yet: commit once before making a worktree"
                    .to_string(),
            )
        }
    })
}

/// Makes the directory `at`, which another process (a parallel sub-agent making its own
/// worktree) may make at the same moment: then a plain directory there is as good.
pub(crate) fn make_dir(at: &Path) -> std::io::Result<()> {
    match std::fs::create_dir(at) {
        Err(e)
            if e.kind() == std::io::ErrorKind::AlreadyExists
                && at.symlink_metadata().is_ok_and(|m| m.is_dir()) =>
        {
            Ok(())
        }
        other => other,
    }
}

/// `<repo>/.qwen/worktrees`, made if missing; refused when `.qwen` or `worktrees` is a
/// symbolic link or something else than a directory, or when it resolves outside `repo`.
fn worktrees_folder(repo: &Path) -> Result<PathBuf, WorktreeError> {
    let mut at = repo.to_path_buf();
    for part in WORKTREES_DIR.split('/') {
        at.push(part);
        match at.symlink_metadata() {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(WorktreeError::Unsafe(format!(
                    "{} is not a plain directory (a symbolic link or a file): worktrees are made only in a real {WORKTREES_DIR} folder of the repository",
                    at.display()
                )));
            }
            Err(_) => make_dir(&at)
                .map_err(|e| WorktreeError::Git(format!("cannot create {}: {e}", at.display())))?,
        }
    }
    let real = at
        .canonicalize()
        .map_err(|e| WorktreeError::Git(format!("cannot resolve {}: {e}", at.display())))?;
    if !real.starts_with(repo) {
        return Err(WorktreeError::Unsafe(format!(
            "{} resolves outside the repository",
            at.display()
        )));
    }
    Ok(real)
}

/// Adds `/.qwen/worktrees/` to the repository's `info/exclude`, so the person's
/// `git status` never lists the worktrees (nothing in their checkout changes).
fn exclude_worktrees(repo: &Path) -> Result<(), WorktreeError> {
    let common = git(
        repo,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )?;
    let file = Path::new(&common).join("info").join("exclude");
    let line = format!("/{WORKTREES_DIR}/");
    let old = std::fs::read_to_string(&file).unwrap_or_default();
    if old.lines().any(|l| l.trim() == line) {
        return Ok(());
    }
    let mut text = old;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&line);
    text.push('\n');
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| WorktreeError::Git(format!("cannot create {}: {e}", parent.display())))?;
    }
    std::fs::write(&file, text)
        .map_err(|e| WorktreeError::Git(format!("cannot write {}: {e}", file.display())))
}

/// The worktrees of the repository around `dir` that live under `.qwen/worktrees`, as
/// `git worktree list` knows them (a folder git does not know is not a worktree).
pub fn list(dir: &Path) -> Result<Vec<Worktree>, WorktreeError> {
    let repo = main_root(dir)?;
    let folder = repo.join(WORKTREES_DIR);
    let text = git(&repo, &["worktree", "list", "--porcelain"])?;
    let mut found = Vec::new();
    for block in text.split("\n\n") {
        let mut path = None;
        let mut branch = None;
        for line in block.lines() {
            if let Some(p) = line.strip_prefix("worktree ") {
                path = Some(PathBuf::from(p));
            } else if let Some(b) = line.strip_prefix("branch refs/heads/") {
                branch = Some(b.to_string());
            }
        }
        let Some(path) = path else { continue };
        let Some(slug) = path
            .strip_prefix(&folder)
            .ok()
            .and_then(|rest| rest.to_str())
            .filter(|rest| name::check(rest).is_ok())
            .map(str::to_string)
        else {
            continue;
        };
        found.push(Worktree {
            branch: branch.unwrap_or_default(),
            slug,
            path,
            repo: repo.clone(),
        });
    }
    Ok(found)
}

/// The worktree named `slug` of the repository around `dir`.
pub fn find(dir: &Path, slug: &str) -> Result<Worktree, WorktreeError> {
    name::check(slug)?;
    list(dir)?
        .into_iter()
        .find(|w| w.slug == slug)
        .ok_or_else(|| WorktreeError::NotFound(slug.to_string()))
}

/// Whether `slug` is a sub-agent's (`agent-` and seven hex digits), the only names the
/// start-up sweep may remove.
pub fn is_agent_slug(slug: &str) -> bool {
    slug.strip_prefix("agent-")
        .is_some_and(|hex| hex.len() == 7 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The name of the worktree the shell of `env` works in (one entered, or the session's
/// own under `.qwen/worktrees`), for a status line.
pub fn shown(env: &toolbelt_core::ToolEnvironment) -> Option<String> {
    let dir = env
        .work_dir
        .get()
        .or_else(|| env.roots.primary().map(Path::to_path_buf))?;
    let parts: Vec<&std::ffi::OsStr> = dir.iter().collect();
    parts
        .windows(3)
        .rev()
        .find(|w| w[0] == ".qwen" && w[1] == "worktrees")
        .and_then(|w| w[2].to_str())
        .map(str::to_string)
}

/// `dir`'s place in `worktree`: the same subdirectory of the worktree when it exists
/// there, else the worktree's root (the person ran toolbelt in `repo/sub`).
pub fn same_place(worktree: &Worktree, dir: &Path) -> PathBuf {
    let inside = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.strip_prefix(&worktree.repo).ok().map(Path::to_path_buf))
        .filter(|rel| !rel.as_os_str().is_empty() && !rel.starts_with(WORKTREES_DIR))
        .map(|rel| worktree.path.join(rel));
    match inside {
        Some(p) if p.is_dir() => p,
        _ => worktree.path.clone(),
    }
}

#[cfg(test)]
mod tests;
