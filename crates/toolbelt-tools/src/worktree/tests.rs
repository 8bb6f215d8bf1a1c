//! Worktrees against real git in temporary repositories.

use std::path::Path;

use super::removal::{
    Refusal, STALE_AFTER, changes, remove_guarded, remove_if_unchanged, sweep_stale,
};
use super::*;
use crate::test_support::{git, git_repo};

fn repo() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir(&root).unwrap();
    git_repo(&root);
    let root = root.canonicalize().unwrap();
    (dir, root)
}

fn named(name: &str) -> NameRequest {
    NameRequest::Named(name.to_string())
}

#[test]
fn a_worktree_is_a_new_branch_under_qwen_worktrees_and_the_checkout_stays_clean() {
    let (_d, root) = repo();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/a.txt"), "a\n").unwrap();
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "sub"]);
    let w = create(&root.join("sub"), &named("feat")).unwrap();
    assert_eq!(w.path, root.join(".qwen/worktrees/feat"));
    assert_eq!(w.branch, "worktree-feat");
    assert_eq!(w.repo, root);
    assert_eq!(git(&w.path, &["branch", "--show-current"]), "worktree-feat");
    assert!(w.path.join("README.md").is_file());
    // The person's `git status` does not list the worktrees.
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
    assert_eq!(same_place(&w, &root.join("sub")), w.path.join("sub"));
    // Not `<worktree>/` with a trailing slash: the path names the session's store.
    assert_eq!(same_place(&w, &root).as_os_str(), w.path.as_os_str());
    assert_eq!(list(&root).unwrap(), vec![w.clone()]);
    assert_eq!(find(&w.path, "feat").unwrap(), w);
    // From inside the worktree, a new one still goes under the main checkout.
    let second = create(&w.path, &NameRequest::Generated).unwrap();
    assert!(second.path.starts_with(root.join(WORKTREES_DIR)));
    assert_eq!(
        git(&second.path, &["rev-parse", "HEAD"]),
        git(&w.path, &["rev-parse", "HEAD"])
    );
}

#[test]
fn errors_name_a_missing_repository_a_taken_name_and_a_detached_head() {
    let dir = tempfile::tempdir().unwrap();
    let err = create(dir.path(), &named("x")).unwrap_err();
    assert!(matches!(err, WorktreeError::NotARepository(_)), "{err}");
    assert!(err.to_string().contains("not in a git repository"), "{err}");

    let (_d, root) = repo();
    create(&root, &named("feat")).unwrap();
    let err = create(&root, &named("feat")).unwrap_err();
    assert!(matches!(err, WorktreeError::NameTaken(..)), "{err}");
    git(&root, &["branch", "worktree-other"]);
    let err = create(&root, &named("other")).unwrap_err();
    assert!(
        err.to_string().contains("the branch worktree-other exists"),
        "{err}"
    );

    git(&root, &["checkout", "-q", "--detach"]);
    let err = create(&root, &named("y")).unwrap_err();
    assert_eq!(err, WorktreeError::DetachedHead);
}

#[test]
fn a_symlinked_worktrees_folder_is_refused_and_nothing_is_made_outside() {
    let (d, root) = repo();
    let outside = d.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::create_dir(root.join(".qwen")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join(".qwen/worktrees")).unwrap();
    let err = create(&root, &named("x")).unwrap_err();
    assert!(matches!(err, WorktreeError::Unsafe(_)), "{err}");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

#[test]
fn removal_guards_commits_held_nowhere_else_and_uncommitted_files() {
    let (_d, root) = repo();
    let w = create(&root, &named("feat")).unwrap();
    assert_eq!(changes(&w).unwrap(), removal::Changes::default());

    std::fs::write(w.path.join("new.txt"), "x\n").unwrap();
    let err = remove_guarded(&w, true, false).unwrap_err();
    assert_eq!(err, Refusal::Uncommitted("feat".into(), 1));
    let err = remove_guarded(&w, false, true).unwrap_err();
    assert_eq!(err, Refusal::NotOurs("feat".into()));

    git(&w.path, &["add", "new.txt"]);
    git(&w.path, &["commit", "-q", "-m", "work"]);
    let err = remove_guarded(&w, true, true).unwrap_err();
    assert_eq!(err, Refusal::UniqueCommits("worktree-feat".into(), 1));
    assert!(!remove_if_unchanged(&w).unwrap());
    assert!(w.path.is_dir());

    // Once another branch holds the commit, it may go.
    git(&root, &["branch", "keep-it", "worktree-feat"]);
    std::fs::write(w.path.join("scratch.txt"), "y\n").unwrap();
    let gone = remove_guarded(&w, true, true).unwrap();
    assert_eq!(gone.uncommitted, 1);
    assert!(!w.path.exists());
    assert!(git(&root, &["branch", "--list", "worktree-feat"]).is_empty());
}

#[test]
fn an_unchanged_worktree_goes_with_its_branch() {
    let (_d, root) = repo();
    let w = create(&root, &named(&name::generate("agent-", 7))).unwrap();
    assert!(remove_if_unchanged(&w).unwrap());
    assert!(!w.path.exists());
    assert!(git(&root, &["branch", "--list", &w.branch]).is_empty());
}

fn age(path: &Path, days: u32) {
    let out = std::process::Command::new("touch")
        .args(["-d", &format!("{days} days ago")])
        .arg(path)
        .status()
        .unwrap();
    assert!(out.success());
}

#[test]
fn the_sweep_removes_only_old_clean_pushed_agent_worktrees() {
    let (d, root) = repo();
    let origin = d.path().join("origin.git");
    git(
        d.path(),
        &["init", "-q", "--bare", origin.to_str().unwrap()],
    );
    git(
        &root,
        &["remote", "add", "origin", origin.to_str().unwrap()],
    );
    git(&root, &["push", "-q", "origin", "main"]);
    let make = |slug: &str| create(&root, &named(slug)).unwrap();
    let stale = make("agent-0a1b2c3");
    let young = make("agent-1a1b2c3");
    let dirty = make("agent-2a1b2c3");
    let unpushed = make("agent-3a1b2c3");
    let person = make("feat-old");
    std::fs::write(dirty.path.join("x"), "x").unwrap();
    std::fs::write(unpushed.path.join("y"), "y").unwrap();
    git(&unpushed.path, &["add", "y"]);
    git(&unpushed.path, &["commit", "-q", "-m", "local"]);
    for w in [&stale, &dirty, &unpushed, &person] {
        age(&w.path, 40);
    }
    age(&young.path, 3);
    let removed = sweep_stale(&root, STALE_AFTER);
    assert_eq!(removed, vec![stale.clone()]);
    assert!(!stale.path.exists());
    for kept in [&young, &dirty, &unpushed, &person] {
        assert!(kept.path.is_dir(), "{} was removed", kept.slug);
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn symlinked_directories_are_relative_inside_the_repository_or_refused() {
    let (d, root) = repo();
    let outside = d.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    write(&root.join(".gitignore"), "node_modules/\nlinkout\n");
    git(&root, &["add", ".gitignore"]);
    git(&root, &["commit", "-q", "-m", "ignore"]);
    write(&root.join("node_modules/pkg/index.js"), "x");
    std::os::unix::fs::symlink(&outside, root.join("linkout")).unwrap();
    let w = create(&root, &named("feat")).unwrap();
    let entries: Vec<String> = [
        "node_modules",
        "../escape",
        "/abs",
        "a/../b",
        "./x",
        "linkout",
        "missing",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let skipped = populate::populate(&w, &entries);
    let link = w.path.join("node_modules");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        root.join("node_modules")
    );
    assert!(w.path.join("node_modules/pkg/index.js").is_file());
    for refused in ["../escape", "/abs", "a/../b", "./x", "linkout"] {
        assert!(
            skipped.iter().any(|s| s.contains(&format!("{refused:?}"))),
            "{refused} not refused: {skipped:?}"
        );
    }
    assert_eq!(skipped.len(), 5, "{skipped:?}");
    assert!(!w.path.join("linkout").exists());
    assert!(!d.path().join("escape").exists());
    assert!(!w.path.join("missing").exists());
}

#[test]
fn worktreeinclude_copies_listed_ignored_files_and_nothing_through_a_link() {
    let (d, root) = repo();
    let outside = d.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    write(&root.join(".gitignore"), ".env\n*.log\n.env.link\n");
    std::os::unix::fs::symlink(&outside, root.join("confdir")).unwrap();
    git(&root, &["add", ".gitignore", "confdir"]);
    git(&root, &["commit", "-q", "-m", "setup"]);
    write(
        &root.join(populate::INCLUDE_FILE),
        ".env\nREADME.md\n.env.link\n",
    );
    write(&root.join(".env"), "TOKEN=1\n");
    write(&root.join("app.log"), "noise\n");
    std::os::unix::fs::symlink("/etc/hostname", root.join(".env.link")).unwrap();
    // In the person's checkout `confdir` became a real folder with an ignored `.env`;
    // the worktree checks out the committed link to `outside`.
    std::fs::remove_file(root.join("confdir")).unwrap();
    write(&root.join("confdir/.env"), "SECRET=2\n");
    std::fs::write(root.join("README.md"), "edited in main\n").unwrap();
    let w = create(&root, &named("feat")).unwrap();
    let skipped = populate::populate(&w, &[]);
    assert_eq!(
        std::fs::read_to_string(w.path.join(".env")).unwrap(),
        "TOKEN=1\n"
    );
    assert!(!w.path.join("app.log").exists());
    assert_eq!(
        std::fs::read_to_string(w.path.join("README.md")).unwrap(),
        "hello\n"
    );
    assert!(!w.path.join(".env.link").exists());
    assert!(
        skipped.iter().any(|s| s.contains(".env.link")),
        "{skipped:?}"
    );
    assert!(
        skipped.iter().any(|s| s.contains("confdir/.env")),
        "{skipped:?}"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

#[test]
fn a_relative_hooks_path_runs_the_main_checkouts_hooks() {
    use std::os::unix::fs::PermissionsExt;
    let (d, root) = repo();
    let marker = d.path().join("marker");
    let hook = root.join(".githooks/pre-commit");
    write(
        &hook,
        &format!("#!/bin/sh\necho main >> '{}'\n", marker.display()),
    );
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    git(&root, &["add", ".githooks"]);
    git(&root, &["commit", "-q", "-m", "hooks"]);
    git(&root, &["config", "core.hooksPath", ".githooks"]);
    let w = create(&root, &named("feat")).unwrap();
    assert!(populate::populate(&w, &[]).is_empty());
    // Whoever works in the worktree changes its copy of the hook: it is not what runs.
    write(
        &w.path.join(".githooks/pre-commit"),
        &format!("#!/bin/sh\necho worktree >> '{}'\n", marker.display()),
    );
    git(&w.path, &["commit", "-q", "-am", "change the hook"]);
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "main\n");
    // The person's checkout keeps its own setting.
    assert_eq!(
        git(&root, &["config", "--get", "core.hooksPath"]),
        ".githooks"
    );
}

#[test]
fn a_pull_request_is_fetched_from_origin_into_its_own_branch() {
    let (d, root) = repo();
    let origin = d.path().join("origin.git");
    git(
        d.path(),
        &["init", "-q", "--bare", origin.to_str().unwrap()],
    );
    git(
        &root,
        &["remote", "add", "origin", origin.to_str().unwrap()],
    );
    // The pull request's head: a commit only origin has.
    git(&root, &["checkout", "-q", "-b", "contrib"]);
    write(&root.join("pr.txt"), "from the pull request\n");
    git(&root, &["add", "pr.txt"]);
    git(&root, &["commit", "-q", "-m", "pr"]);
    git(&root, &["push", "-q", "origin", "HEAD:refs/pull/7/head"]);
    git(&root, &["checkout", "-q", "main"]);
    git(&root, &["branch", "-q", "-D", "contrib"]);
    let w = create(&root, &NameRequest::parse("#7").unwrap()).unwrap();
    assert_eq!(w.slug, "pr-7");
    assert_eq!(w.branch, "worktree-pr-7");
    assert_eq!(
        std::fs::read_to_string(w.path.join("pr.txt")).unwrap(),
        "from the pull request\n"
    );
    let err = create(&root, &NameRequest::parse("#8").unwrap()).unwrap_err();
    assert!(err.to_string().contains("refs/pull/8/head"), "{err}");
    assert!(!root.join(".qwen/worktrees/pr-8").exists());
}

/// Two processes making worktrees at once (parallel isolated sub-agents) both find the
/// folder made: the one that loses the race to create `.qwen` takes the other's.
#[test]
fn a_folder_another_process_made_meanwhile_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join(".qwen");
    super::make_dir(&at).unwrap();
    super::make_dir(&at).unwrap();
    std::fs::write(dir.path().join("file"), "x").unwrap();
    assert!(super::make_dir(&dir.path().join("file")).is_err());
    std::os::unix::fs::symlink(dir.path(), dir.path().join("link")).unwrap();
    assert!(super::make_dir(&dir.path().join("link")).is_err());
}
