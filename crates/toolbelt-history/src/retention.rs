//! Retention (`general.cleanupPeriodDays`): records older than the period are removed,
//! then every object no remaining record names (mark and sweep).
//!
//! The work is bounded: a session runs it in the background when it opens, at most once
//! a day per project (the `swept` stamp) and only when some record has expired (a fresh
//! store writes nothing for it), one process at a time (a lock file), and it gives up
//! without removing anything when marking takes longer than [`MARK_BUDGET`].
//! Objects younger than [`GRACE_MS`] are spared whatever happens: another session may
//! have just written them for a record it has not written yet. Temporary files that a
//! killed process left are removed after the same grace.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::hash::ContentHash;
use crate::objects::StoreError;
use crate::record;
use crate::store::Store;
use crate::tree::{self, EntryKind};

/// An object this young is never removed.
pub(crate) const GRACE_MS: u64 = 60 * 60 * 1000;
/// At most this long for marking; past it, nothing is removed this time.
const MARK_BUDGET: Duration = Duration::from_secs(30);
const DAY_MS: u64 = 24 * 60 * 60 * 1000;

/// What a sweep removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Whether it ran (not: swept less than a day ago, or another process sweeps).
    pub ran: bool,
    /// Records older than the period.
    pub records: usize,
    /// Objects nothing names any more.
    pub objects: usize,
    /// Their bytes.
    pub bytes: u64,
}

fn modified_ms(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Store {
    /// Removes records older than `days` days and the objects left unnamed, if the
    /// last sweep is a day old (always with `force`). `now_ms` is the time to judge
    /// ages by (milliseconds since the epoch).
    pub fn sweep(&self, days: u64, now_ms: u64, force: bool) -> Result<SweepReport, StoreError> {
        let stamp = self.dir().join("swept");
        if !force && !self.may_sweep(now_ms) {
            return Ok(SweepReport::default());
        }
        if !self.dir().is_dir() {
            return Ok(SweepReport::default());
        }
        let cutoff = now_ms.saturating_sub(days.saturating_mul(DAY_MS));
        // Nothing has expired (a young or fresh store): no lock, no stamp, nothing
        // written. Objects no record names (a session killed before its record) wait for
        // the first sweep that removes a record.
        if !force && self.record_files().iter().all(|f| f.time_ms >= cutoff) {
            return Ok(SweepReport::default());
        }
        let lock_path = self.dir().join("lock");
        let lock = toolbelt_config::store_files::create(&lock_path)
            .map_err(|e| StoreError::io(&lock_path, e))?;
        if lock.try_lock().is_err() {
            return Ok(SweepReport::default());
        }
        let mut report = SweepReport {
            ran: true,
            ..SweepReport::default()
        };
        let mut keep = Vec::new();
        for file in self.record_files() {
            if file.time_ms < cutoff {
                if std::fs::remove_file(&file.path).is_ok() {
                    report.records += 1;
                }
            } else {
                keep.push(file.path);
            }
        }
        let Some(marked) = self.mark(&keep) else {
            return Ok(report);
        };
        self.remove_unmarked(&marked, now_ms, &mut report);
        self.objects.forget_known();
        let _ = toolbelt_config::store_files::write(&stamp, now_ms.to_string().as_bytes());
        Ok(report)
    }

    /// Whether a sweep without `force` may have work, by two cheap looks (no listing):
    /// the last sweep is a day old, and the store holds records at all. A session asks
    /// before it starts a thread for [`Store::sweep`].
    pub fn may_sweep(&self, now_ms: u64) -> bool {
        let last: u64 = std::fs::read_to_string(self.dir().join("swept"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        now_ms.saturating_sub(last) >= DAY_MS && self.records_dir().is_dir()
    }

    /// Every object the records name; `None` past the budget (or a record that
    /// cannot be read now but could be later: nothing is removed then).
    fn mark(&self, records: &[std::path::PathBuf]) -> Option<HashSet<ContentHash>> {
        let started = Instant::now();
        let mut marked = HashSet::new();
        let mut trees = Vec::new();
        for path in records {
            match record::read(path) {
                Ok(r) => trees.extend(r.trees().into_iter().map(|(_, h)| h)),
                Err(StoreError::Damaged { .. }) => {}
                Err(_) => return None,
            }
        }
        while let Some(hash) = trees.pop() {
            if started.elapsed() > MARK_BUDGET {
                return None;
            }
            if !marked.insert(hash) {
                continue;
            }
            let Ok(text) = self.objects.read_tree(&hash) else {
                continue;
            };
            let Ok(entries) = tree::parse(&text) else {
                continue;
            };
            for e in entries {
                match e.leaf.kind {
                    EntryKind::Dir => trees.push(e.leaf.hash),
                    EntryKind::File | EntryKind::Link => {
                        if marked.insert(e.leaf.hash) {
                            marked.extend(self.objects.pieces_of(&e.leaf.hash).unwrap_or_default());
                        }
                    }
                    EntryKind::Omitted => {}
                }
            }
        }
        Some(marked)
    }

    fn remove_unmarked(
        &self,
        marked: &HashSet<ContentHash>,
        now_ms: u64,
        report: &mut SweepReport,
    ) {
        let Ok(entries) = std::fs::read_dir(self.objects.dir()) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if crate::pack::is_pack_name(&name) {
                self.sweep_pack(&entry.path(), marked, now_ms, report);
            } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
                // A fan-out folder of a store made before stop 58 (`objects.rs`).
                let Ok(files) = std::fs::read_dir(entry.path()) else {
                    continue;
                };
                for file in files.filter_map(Result::ok) {
                    let rest = file.file_name().to_string_lossy().into_owned();
                    let hash = ContentHash::from_hex(&format!("{name}{rest}"));
                    remove_if_unmarked(&file, hash, &rest, marked, now_ms, report);
                }
            } else {
                let hash = ContentHash::from_hex(&name);
                remove_if_unmarked(&entry, hash, &name, marked, now_ms, report);
            }
        }
        remove_stale_temps(&self.records_dir(), now_ms);
    }

    /// Removes a pack no process writes any more (its lock is free) and older than the
    /// grace, after writing the objects of it that a record still names back as loose
    /// files, made durable first. A pack whose live objects cannot all be written out
    /// stays whole.
    fn sweep_pack(
        &self,
        path: &Path,
        marked: &HashSet<ContentHash>,
        now_ms: u64,
        report: &mut SweepReport,
    ) {
        if self.objects.own_pack().as_deref() == Some(path) {
            return;
        }
        let Ok(file) = std::fs::File::open(path) else {
            return;
        };
        let Ok(meta) = file.metadata() else {
            return;
        };
        if file.try_lock().is_err() || now_ms.saturating_sub(modified_ms(&meta)) < GRACE_MS {
            return;
        }
        let mut entries = Vec::new();
        if crate::pack::scan(path, 0, |hash, e| entries.push((hash, e))).is_err() {
            return;
        }
        let mut written = Vec::new();
        let mut dead = (0, 0u64);
        for (hash, entry) in &entries {
            if !marked.contains(hash) {
                dead = (dead.0 + 1, dead.1 + u64::from(entry.len));
                continue;
            }
            let Ok(payload) = entry.read() else {
                return;
            };
            if self
                .objects
                .put_loose(hash, entry.kind, &payload, &mut written)
                .is_err()
            {
                return;
            }
        }
        crate::syncer::sync_files(&written);
        if remove(path) {
            report.objects += dead.0;
            report.bytes += dead.1;
        }
    }
}

/// Removes the object file `file` (named `hash`, or a temporary file when `None`) if no
/// record names it and it is older than the grace.
fn remove_if_unmarked(
    file: &std::fs::DirEntry,
    hash: Option<ContentHash>,
    name: &str,
    marked: &HashSet<ContentHash>,
    now_ms: u64,
    report: &mut SweepReport,
) {
    let Ok(meta) = file.metadata() else {
        return;
    };
    if now_ms.saturating_sub(modified_ms(&meta)) < GRACE_MS {
        return;
    }
    let unnamed = match hash {
        Some(hash) => !marked.contains(&hash),
        None => name.starts_with(".tmp-"),
    };
    if unnamed && remove(&file.path()) {
        report.objects += 1;
        report.bytes += meta.len();
    }
}

fn remove(path: &Path) -> bool {
    std::fs::remove_file(path).is_ok()
}

/// Temporary record files a killed process left.
fn remove_stale_temps(dir: &Path, now_ms: u64) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for e in read.filter_map(Result::ok) {
        let stale = e.file_name().to_string_lossy().starts_with(".tmp-")
            && e.metadata()
                .is_ok_and(|m| now_ms.saturating_sub(modified_ms(&m)) >= GRACE_MS);
        if stale {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
