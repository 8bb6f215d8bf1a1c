//! What a new worktree gets besides git's checkout: links to heavy directories of the
//! main checkout (`worktree.symlinkDirectories`, such as `node_modules`), copies of the
//! ignored files `.worktreeinclude` lists (Claude Code's file, such as `.env`), and a
//! hooks path that keeps running the person's hooks.
//!
//! Every entry is a path the settings or a repository file gives, so each is checked as
//! hostile: relative, only plain components (no `..`, no `.`, no root), the source a
//! regular file or directory that resolves inside the main checkout, and every
//! directory on the way to the target in the worktree a real directory (a symbolic link
//! checked out in the worktree cannot redirect a copy outside it). What fails a check is
//! skipped and said; nothing here stops the worktree from being made.
//!
//! Hooks: a linked worktree already runs the hooks of the repository's `.git/hooks`. A
//! relative `core.hooksPath` (`.husky`, `.githooks`) would instead name the worktree's
//! own copy, which whoever works in it can change; it is pinned to the main checkout's
//! directory with a per-worktree setting (`extensions.worktreeConfig`).

use std::path::{Component, Path, PathBuf};

use super::Worktree;
use super::git_cmd::git;

/// The file that lists the ignored files to copy, at the main checkout's root.
pub const INCLUDE_FILE: &str = ".worktreeinclude";

/// Links, copies and the hooks path for a new worktree; the answer is what was skipped,
/// a line each.
pub fn populate(worktree: &Worktree, symlink_directories: &[String]) -> Vec<String> {
    let mut skipped = Vec::new();
    for entry in symlink_directories {
        if let Err(why) = link(worktree, entry) {
            skipped.push(format!("worktree.symlinkDirectories {entry:?}: {why}"));
        }
    }
    if let Err(why) = copy_included(worktree, &mut skipped) {
        skipped.push(format!("{INCLUDE_FILE}: {why}"));
    }
    if let Err(why) = pin_hooks(worktree) {
        skipped.push(format!("hooks path: {why}"));
    }
    skipped
}

/// `entry` as plain components; anything else is refused.
fn plain(entry: &str) -> Result<PathBuf, String> {
    let path = Path::new(entry.trim_end_matches('/'));
    if entry.is_empty() || path.as_os_str().is_empty() {
        return Err("empty".into());
    }
    if !path.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err("only a relative path without `..` or `.` is allowed".into());
    }
    Ok(path.to_path_buf())
}

/// The source in the main checkout, resolved, refused when it leaves it.
fn source(worktree: &Worktree, rel: &Path) -> Result<Option<PathBuf>, String> {
    let at = worktree.repo.join(rel);
    if at.symlink_metadata().is_err() {
        return Ok(None);
    }
    let real = at.canonicalize().map_err(|e| e.to_string())?;
    if !real.starts_with(&worktree.repo) {
        return Err(format!("{} resolves outside the repository", at.display()));
    }
    Ok(Some(real))
}

/// Makes the directories leading to `rel` in the worktree, each one refused when it is
/// not a real directory; the answer is the target path.
fn target(worktree: &Worktree, rel: &Path) -> Result<PathBuf, String> {
    let mut at = worktree.path.clone();
    let parents: Vec<Component> = rel
        .parent()
        .map(|p| p.components().collect())
        .unwrap_or_default();
    for part in parents {
        at.push(part);
        match at.symlink_metadata() {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(format!("{} is not a plain directory", at.display())),
            Err(_) => super::make_dir(&at).map_err(|e| e.to_string())?,
        }
    }
    Ok(worktree.path.join(rel))
}

fn link(worktree: &Worktree, entry: &str) -> Result<(), String> {
    let rel = plain(entry)?;
    let Some(real) = source(worktree, &rel)? else {
        return Ok(()); // Nothing to link (Qwen Code skips a missing source too).
    };
    let to = target(worktree, &rel)?;
    if to.symlink_metadata().is_ok() {
        return Ok(()); // The checkout has it already.
    }
    std::os::unix::fs::symlink(&real, &to).map_err(|e| e.to_string())
}

/// Copies the ignored files of the main checkout that `.worktreeinclude` matches (its
/// lines are `.gitignore` patterns). Only files git reports as ignored are candidates,
/// so a tracked file is never overwritten and nothing outside the checkout is read.
fn copy_included(worktree: &Worktree, skipped: &mut Vec<String>) -> Result<(), String> {
    let list = worktree.repo.join(INCLUDE_FILE);
    if !list.is_file() {
        return Ok(());
    }
    let mut builder = ignore::gitignore::GitignoreBuilder::new(&worktree.repo);
    if let Some(e) = builder.add(&list) {
        return Err(e.to_string());
    }
    let patterns = builder.build().map_err(|e| e.to_string())?;
    let ignored = git(
        &worktree.repo,
        &[
            "ls-files",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
            "-z",
        ],
    )
    .map_err(|e| e.to_string())?;
    for name in ignored
        .split('\0')
        .filter(|n| !n.is_empty() && !n.ends_with('/'))
    {
        if !patterns
            .matched_path_or_any_parents(name, false)
            .is_ignore()
        {
            continue;
        }
        if let Err(why) = copy_one(worktree, name) {
            skipped.push(format!("{INCLUDE_FILE}: {name}: {why}"));
        }
    }
    Ok(())
}

fn copy_one(worktree: &Worktree, name: &str) -> Result<(), String> {
    let rel = plain(name)?;
    let from = worktree.repo.join(&rel);
    let meta = from.symlink_metadata().map_err(|e| e.to_string())?;
    if !meta.file_type().is_file() {
        return Err("not a regular file (symbolic links are not copied)".into());
    }
    let to = target(worktree, &rel)?;
    if to.symlink_metadata().is_ok() {
        return Ok(());
    }
    std::fs::copy(&from, &to)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// A relative `core.hooksPath` pinned to the main checkout's directory for this
/// worktree only.
fn pin_hooks(worktree: &Worktree) -> Result<(), String> {
    let Ok(current) = git(&worktree.path, &["config", "--get", "core.hooksPath"]) else {
        return Ok(()); // Unset: the repository's own hooks already run.
    };
    if current.is_empty() || Path::new(&current).is_absolute() || current.starts_with('~') {
        return Ok(());
    }
    let pinned = worktree.repo.join(&current);
    let pinned = pinned.to_string_lossy();
    let run = |args: &[&str]| {
        git(&worktree.path, args)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    run(&["config", "extensions.worktreeConfig", "true"])?;
    run(&["config", "--worktree", "core.hooksPath", &pinned])
}
