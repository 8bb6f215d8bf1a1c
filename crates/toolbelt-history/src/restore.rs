//! Restoring a checkpoint: what would change (a plan, shown as a diff before anything
//! is written), and doing it.
//!
//! The plan compares the checkpoint's trees with the workspace as it is now (a fresh
//! scan), subtree by subtree: equal tree hashes are skipped without being read. A file
//! is *changed outside toolbelt* when it is not what toolbelt last saw (the newest
//! record, usually what the last call left): those are named and kept unless the
//! person forces them. Restoring first takes a checkpoint of the workspace as it is
//! (`tool: restore`), so a restore can itself be restored; the files are then written
//! one by one, each atomically (`apply.rs`).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use crate::apply;
use crate::error::HistoryError;
use crate::hash::ContentHash;
use crate::history::History;
use crate::objects::{Objects, StoreError};
use crate::record::{Phase, Record};
use crate::scan::rel_path;
use crate::tree::{self, EntryKind, Leaf};

/// One path a restore changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The workspace root it is in.
    pub root: PathBuf,
    /// Its path below the root (bytes, `/`-separated).
    pub rel: Vec<u8>,
    /// What is there now (`None`: nothing).
    pub now: Option<Leaf>,
    /// What the checkpoint had (`None`: nothing, so it is removed).
    pub then: Option<Leaf>,
    /// It is not what toolbelt last saw: changed outside toolbelt since.
    pub outside: bool,
}

impl Change {
    /// The absolute path.
    pub fn path(&self) -> PathBuf {
        self.root.join(rel_path(&self.rel))
    }

    /// The path relative to its root, for display.
    pub fn shown(&self) -> String {
        rel_path(&self.rel).display().to_string()
    }

    /// What a restore does to it: `restore`, `recreate` or `remove`.
    pub fn verb(&self) -> &'static str {
        match (&self.now, &self.then) {
            (_, None) => "remove",
            (None, Some(_)) => "recreate",
            (Some(_), Some(_)) => "restore",
        }
    }

    /// Whether the checkpoint holds the content (a file over the size cap it left out
    /// cannot be put back).
    pub fn restorable(&self) -> bool {
        self.then.is_none_or(|t| t.kind != EntryKind::Omitted)
    }

    fn is_dir(leaf: Option<&Leaf>) -> bool {
        leaf.is_some_and(|l| l.kind == EntryKind::Dir)
    }
}

/// What restoring a checkpoint would do.
#[derive(Debug, Clone)]
pub struct RestorePlan {
    /// The checkpoint.
    pub target: Record,
    /// Every path it changes, parents before what they hold.
    pub changes: Vec<Change>,
    /// Roots of the checkpoint this session does not have (left alone).
    pub missing_roots: Vec<PathBuf>,
    /// The workspace's trees when the plan was made: a restore refuses to go on when
    /// they changed since the person saw the plan.
    current: Vec<(PathBuf, ContentHash)>,
}

impl RestorePlan {
    /// The changes made outside toolbelt since it last saw them.
    pub fn outside(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.outside)
    }

    /// Whether there is nothing to restore.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// What a restore did.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    /// The checkpoint taken just before it: restore it to undo this restore.
    pub undo: Option<String>,
    /// Paths written back (files, links and directories).
    pub restored: Vec<String>,
    /// Paths removed.
    pub removed: Vec<String>,
    /// Changed outside toolbelt and kept (no `--force`).
    pub kept: Vec<String>,
    /// Could not be restored, with why.
    pub failed: Vec<String>,
}

/// Each path where the trees `a` and `b` differ, with both sides, parents first.
pub(crate) fn compare(
    objects: &Objects,
    a: Option<&ContentHash>,
    b: Option<&ContentHash>,
    prefix: &[u8],
    out: &mut Vec<(Vec<u8>, Option<Leaf>, Option<Leaf>)>,
) -> Result<(), StoreError> {
    if a == b {
        return Ok(());
    }
    let entries = |h: Option<&ContentHash>| -> Result<BTreeMap<Vec<u8>, Leaf>, StoreError> {
        let Some(h) = h else {
            return Ok(BTreeMap::new());
        };
        let text = objects.read_tree(h)?;
        let parsed = tree::parse(&text).map_err(|e| StoreError::Damaged {
            path: objects.location(h),
            why: e.to_string(),
        })?;
        Ok(parsed.into_iter().map(|e| (e.name, e.leaf)).collect())
    };
    let (left, right) = (entries(a)?, entries(b)?);
    let names: std::collections::BTreeSet<&Vec<u8>> = left.keys().chain(right.keys()).collect();
    for name in names {
        let path = crate::index::join(prefix, name);
        let (x, y) = (left.get(name).copied(), right.get(name).copied());
        let sub = |l: Option<Leaf>| l.filter(|l| l.kind == EntryKind::Dir).map(|l| l.hash);
        match (x, y) {
            (Some(x), Some(y)) if x.kind == EntryKind::Dir && y.kind == EntryKind::Dir => {
                if x.mode != y.mode {
                    out.push((path.clone(), Some(x), Some(y)));
                }
                compare(objects, Some(&x.hash), Some(&y.hash), &path, out)?;
            }
            (Some(x), Some(y)) if x.same_content(&y) => {}
            _ => {
                out.push((path.clone(), x, y));
                compare(objects, sub(x).as_ref(), sub(y).as_ref(), &path, out)?;
            }
        }
    }
    Ok(())
}

/// `path` is one of `only` or below one.
fn selected(path: &Path, only: &[PathBuf]) -> bool {
    only.is_empty() || only.iter().any(|o| path.starts_with(o))
}

impl History {
    /// What restoring checkpoint `id` (or a unique start of it) would change, only
    /// below `only` when it is not empty (absolute paths).
    /// A path outside every workspace root (`../elsewhere/a.txt`) is refused: a restore
    /// writes only inside the workspace, and "nothing to restore" would hide the mistake.
    pub fn plan(&self, id: &str, only: &[PathBuf]) -> Result<RestorePlan, HistoryError> {
        let only = self.inside_workspace(only)?;
        let target = self.store().find(id)?;
        self.plan_record(target, &only)
    }

    /// `only` with `.` and `..` resolved (without the file system: a restore never
    /// follows links), or the first path that is in no workspace root.
    fn inside_workspace(&self, only: &[PathBuf]) -> Result<Vec<PathBuf>, HistoryError> {
        let roots = self.shared.config.roots.roots();
        only.iter()
            .map(|given| {
                let path = toolbelt_core::normalize_lexically(given);
                if roots.iter().any(|r| path.starts_with(r)) {
                    Ok(path)
                } else {
                    let list: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
                    Err(HistoryError::OutsideWorkspace {
                        path: given.clone(),
                        roots: list.join(", "),
                    })
                }
            })
            .collect()
    }

    /// [`History::plan`] for a record in hand.
    pub fn plan_record(
        &self,
        target: Record,
        only: &[PathBuf],
    ) -> Result<RestorePlan, HistoryError> {
        let pin = self.shared.pinned_roots(&target);
        let current = {
            let mut state = self.state();
            self.sync_locked(&mut state, Some(&pin))?
        };
        let objects = &self.store().objects;
        let then: BTreeMap<PathBuf, ContentHash> = target.trees().into_iter().collect();
        let seen = self.store().newest_of(&pin);
        let mut changes = Vec::new();
        for (root, now) in &current {
            let Some(then_hash) = then.get(root) else {
                continue;
            };
            let mut diffs = Vec::new();
            compare(objects, Some(now), Some(then_hash), b"", &mut diffs)?;
            let mut outside = Vec::new();
            if let Some(seen_hash) = seen.get(root) {
                compare(objects, Some(seen_hash), Some(now), b"", &mut outside)?;
            }
            let outside: HashSet<Vec<u8>> = outside.into_iter().map(|(p, ..)| p).collect();
            changes.extend(diffs.into_iter().map(|(rel, now, then)| Change {
                root: root.clone(),
                outside: outside.contains(&rel),
                rel,
                now,
                then,
            }));
        }
        let changes = keep_selected(changes, only);
        let missing_roots = then
            .keys()
            .filter(|r| !current.iter().any(|(c, _)| c == *r))
            .cloned()
            .collect();
        Ok(RestorePlan {
            target,
            changes,
            missing_roots,
            current,
        })
    }

    /// Restores `plan`: first a checkpoint of the workspace as it is (so this can be
    /// undone), then each change; files changed outside toolbelt only with `force`.
    /// Refused when the workspace changed since the plan was made.
    pub fn apply(&self, plan: &RestorePlan, force: bool) -> Result<Applied, HistoryError> {
        let pin: Vec<PathBuf> = plan.current.iter().map(|(p, _)| p.clone()).collect();
        let current = {
            let mut state = self.state();
            self.sync_locked(&mut state, Some(&pin))?
        };
        if current != plan.current {
            return Err(HistoryError::Stale);
        }
        let call = format!("restore {}", plan.target.id);
        let undo =
            self.shared
                .checkpoint(Phase::Before, "restore", &call, None, Some(&pin), &[])?;
        let mut applied = Applied {
            undo: Some(undo.id.clone()),
            ..Applied::default()
        };
        if !force {
            applied.kept = plan.outside().map(Change::shown).collect();
        }
        let mut pause = TestPause::from_env();
        for pass in [
            Pass::RemoveFiles,
            Pass::RemoveDirs,
            Pass::MakeDirs,
            Pass::Write,
        ] {
            let changes: Box<dyn Iterator<Item = &Change>> = match pass {
                Pass::RemoveDirs => Box::new(plan.changes.iter().rev()),
                _ => Box::new(plan.changes.iter()),
            };
            for change in changes.filter(|c| force || !c.outside) {
                if let Err(e) = self.apply_one(pass, change, &mut applied, &mut pause) {
                    applied.failed.push(format!("{}: {e}", change.shown()));
                }
            }
        }
        self.shared.checkpoint(
            Phase::After,
            "restore",
            &call,
            Some(undo.id),
            Some(&pin),
            &[],
        )?;
        self.flush();
        Ok(applied)
    }

    fn apply_one(
        &self,
        pass: Pass,
        change: &Change,
        applied: &mut Applied,
        pause: &mut TestPause,
    ) -> Result<(), String> {
        let (now, then) = (change.now.as_ref(), change.then.as_ref());
        let root = apply::open_root(&change.root).map_err(|e| e.to_string())?;
        let err = |e: std::io::Error| e.to_string();
        match pass {
            Pass::RemoveFiles => {
                let file_now = now.is_some_and(|n| n.kind != EntryKind::Dir);
                // A file is renamed over; only a directory needs the way cleared.
                let replaced = then.is_none_or(|t| t.kind == EntryKind::Dir);
                if file_now && replaced {
                    apply::remove_file(&root, &change.rel).map_err(err)?;
                    if then.is_none() {
                        applied.removed.push(change.shown());
                    }
                }
            }
            Pass::RemoveDirs => {
                if Change::is_dir(now) && !Change::is_dir(then) {
                    if !apply::remove_dir(&root, &change.rel).map_err(err)? {
                        return Err("the directory still holds files the checkpoint does not know (ignored ones?); it was left".into());
                    }
                    if then.is_none() {
                        applied.removed.push(change.shown());
                    }
                }
            }
            Pass::MakeDirs => {
                if let Some(t) = then.filter(|t| t.kind == EntryKind::Dir) {
                    apply::make_dir(&root, &change.rel, t.mode).map_err(err)?;
                    applied.restored.push(change.shown());
                }
            }
            Pass::Write => self.write_one(&root, change, applied, pause)?,
        }
        Ok(())
    }

    fn write_one(
        &self,
        root: &std::os::fd::OwnedFd,
        change: &Change,
        applied: &mut Applied,
        pause: &mut TestPause,
    ) -> Result<(), String> {
        let Some(then) = change.then else {
            return Ok(());
        };
        let objects = &self.store().objects;
        match then.kind {
            EntryKind::Dir => return Ok(()),
            EntryKind::Omitted => {
                return Err(format!(
                    "it was over the size cap ({} bytes) when the checkpoint was taken, so its content was not kept",
                    then.size
                ));
            }
            EntryKind::Link => {
                let target = objects
                    .read_content(&then.hash)
                    .map_err(|e| e.to_string())?;
                apply::write_link(root, &change.rel, &target).map_err(|e| e.to_string())?;
            }
            EntryKind::File => {
                let bytes = objects
                    .read_content(&then.hash)
                    .map_err(|e| e.to_string())?;
                apply::write_file(root, &change.rel, &bytes, then.mode, &mut || pause.midway())
                    .map_err(|e| e.to_string())?;
                pause.done_one();
            }
        }
        applied.restored.push(change.shown());
        Ok(())
    }
}

/// The passes of a restore: what is in the way first, then directories, then files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    RemoveFiles,
    RemoveDirs,
    MakeDirs,
    Write,
}

/// The changes below `only`, with the directories they need recreated.
fn keep_selected(changes: Vec<Change>, only: &[PathBuf]) -> Vec<Change> {
    if only.is_empty() {
        return changes;
    }
    let kept: Vec<bool> = changes.iter().map(|c| selected(&c.path(), only)).collect();
    changes
        .iter()
        .enumerate()
        .filter(|(i, c)| {
            kept[*i]
                || (c.now.is_none()
                    && Change::is_dir(c.then.as_ref())
                    && changes
                        .iter()
                        .zip(&kept)
                        .any(|(o, k)| *k && o.root == c.root && o.path().starts_with(c.path())))
        })
        .map(|(_, c)| c.clone())
        .collect()
}

/// Debug builds only: `TOOLBELT_TEST_RESTORE_PAUSE=N:FIFO` stops a restore halfway
/// through the file after the N-th it wrote, after saying so on the FIFO, so a test can
/// kill it there with no sleep (`crates/toolbelt/tests/restore_cli.rs`).
struct TestPause {
    #[cfg(debug_assertions)]
    at: Option<(usize, PathBuf)>,
    #[cfg(debug_assertions)]
    done: usize,
}

impl TestPause {
    fn from_env() -> Self {
        #[cfg(debug_assertions)]
        {
            let at = std::env::var("TOOLBELT_TEST_RESTORE_PAUSE")
                .ok()
                .and_then(|v| {
                    let (n, fifo) = v.split_once(':')?;
                    Some((n.parse().ok()?, PathBuf::from(fifo)))
                });
            TestPause { at, done: 0 }
        }
        #[cfg(not(debug_assertions))]
        TestPause {}
    }

    fn midway(&mut self) {
        #[cfg(debug_assertions)]
        if let Some((n, fifo)) = &self.at
            && *n == self.done
        {
            if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(fifo) {
                use std::io::Write;
                let _ = f.write_all(b"paused\n");
            }
            loop {
                std::thread::park();
            }
        }
    }

    fn done_one(&mut self) {
        #[cfg(debug_assertions)]
        {
            self.done += 1;
        }
    }
}
