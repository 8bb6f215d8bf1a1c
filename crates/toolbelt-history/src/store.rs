//! One project's store: `<toolbelt home>/history/<project>/`, never inside the
//! project's own `.git`.
//!
//! ```text
//! objects/pack-<time>-<pid>-<n>.tbp       contents, chunks and trees, one pack per process (pack.rs)
//! objects/abcdef…                         the same, one file each (the sweep's; older stores: objects/ab/cdef…)
//! checkpoints/<time>-<id>-<b|a>.json      one record per checkpoint (record.rs)
//! index                                   the last checkpoint's index, a cache (index_file.rs)
//! swept                                   when the last retention sweep ran
//! ```
//!
//! Several sessions of one project may share it: each process appends only to a pack of
//! its own, which it holds locked (the sweep leaves it alone), loose objects are named
//! by their content and written by rename (two writers write the same bytes), records
//! have names of their own, and the sweep spares objects younger than an hour, which a
//! running session may have written for a record it has not written yet.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::objects::{Objects, StoreError};
use crate::record::{self, Phase, Record};

/// A record's place in the listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordFile {
    pub(crate) time_ms: u64,
    pub(crate) id: String,
    pub(crate) phase: Phase,
    pub(crate) path: PathBuf,
}

/// Why a checkpoint ID names no checkpoint.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    /// No checkpoint has an ID starting so.
    #[error("no checkpoint {0} (`toolbelt restore --list` lists them)")]
    NotFound(String),
    /// Several do.
    #[error("checkpoint ID {0} is ambiguous: {1}")]
    Ambiguous(String, String),
    /// Too short to look for.
    #[error("a checkpoint ID has at least 4 hex digits (got `{0}`)")]
    TooShort(String),
    /// It is there but cannot be read.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One project's store.
pub struct Store {
    dir: PathBuf,
    pub(crate) objects: Objects,
    /// The time of the last record this process wrote or found (0: not looked yet).
    last_ms: AtomicU64,
    /// Whether this process made (or found) the records' folder.
    records_made: std::sync::atomic::AtomicBool,
}

static RECORD_TEMP: AtomicU64 = AtomicU64::new(0);

impl Store {
    /// The store at `dir` (created when first written).
    pub fn open(dir: PathBuf) -> Self {
        let objects = Objects::new(dir.join("objects"));
        Store {
            dir,
            objects,
            last_ms: AtomicU64::new(0),
            records_made: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Its folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn records_dir(&self) -> PathBuf {
        self.dir.join("checkpoints")
    }

    /// The time for a new record: now, but always later than every record written
    /// before it (the newest on disk when this process writes its first). Records are
    /// ordered by their time, so two in the same millisecond must not tie: "the newest
    /// record" would then be either, and a restore compares the workspace with it to
    /// find what changed outside toolbelt (a tie made a restore keep a file it should
    /// have restored, as changed outside).
    pub(crate) fn record_time(&self, now_ms: u64) -> u64 {
        if self.last_ms.load(Ordering::Acquire) == 0 {
            let newest = self.record_files().first().map_or(1, |f| f.time_ms.max(1));
            let _ = self
                .last_ms
                .compare_exchange(0, newest, Ordering::AcqRel, Ordering::Acquire);
        }
        let mut next = now_ms;
        let _ = self
            .last_ms
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| {
                next = now_ms.max(last + 1);
                Some(next)
            });
        next
    }

    /// Writes `record` (after every object it names); returns its file.
    pub(crate) fn write_record(&self, record: &Record) -> Result<PathBuf, StoreError> {
        let dir = self.records_dir();
        let make = || {
            toolbelt_config::store_files::create_dir_all(&dir)
                .map_err(|e| StoreError::io(&dir, e))?;
            self.records_made.store(true, Ordering::Relaxed);
            Ok::<_, StoreError>(())
        };
        if !self.records_made.load(Ordering::Relaxed) {
            make()?;
        }
        let path = dir.join(record.file_name());
        let n = RECORD_TEMP.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".tmp-{}-{n}", std::process::id()));
        let bytes = serde_json::to_vec(record)
            .map_err(|e| StoreError::io(&path, std::io::Error::other(e)))?;
        let result = match toolbelt_config::store_files::write(&temp, &bytes) {
            // The folder went since this process made it (removed by hand).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                make()?;
                toolbelt_config::store_files::write(&temp, &bytes)
            }
            other => other,
        }
        .and_then(|()| std::fs::rename(&temp, &path));
        if let Err(e) = result {
            let _ = std::fs::remove_file(&temp);
            return Err(StoreError::io(&path, e));
        }
        Ok(path)
    }

    /// Every record's file, newest first.
    pub(crate) fn record_files(&self) -> Vec<RecordFile> {
        let Ok(read) = std::fs::read_dir(self.records_dir()) else {
            return Vec::new();
        };
        let mut files: Vec<RecordFile> = read
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name();
                let (time_ms, id, phase) = record::parse_file_name(name.to_str()?)?;
                Some(RecordFile {
                    time_ms,
                    id,
                    phase,
                    path: e.path(),
                })
            })
            .collect();
        files.sort_by(|a, b| {
            (b.time_ms, b.phase == Phase::After, &b.id).cmp(&(
                a.time_ms,
                a.phase == Phase::After,
                &a.id,
            ))
        });
        files
    }

    /// The records that are restore points (before a call), newest first; damaged
    /// ones as errors in their place.
    pub fn checkpoints(&self) -> Vec<Result<Record, StoreError>> {
        self.record_files()
            .into_iter()
            .filter(|f| f.phase == Phase::Before)
            .map(|f| record::read(&f.path))
            .collect()
    }

    /// The newest readable record that covers each of `roots`, as each root's tree:
    /// what toolbelt last saw there (a session that works in a worktree records only
    /// that worktree, so the newest record overall may not hold a root).
    pub(crate) fn newest_of(
        &self,
        roots: &[std::path::PathBuf],
    ) -> std::collections::BTreeMap<std::path::PathBuf, crate::hash::ContentHash> {
        let mut seen = std::collections::BTreeMap::new();
        for file in self.record_files() {
            if seen.len() == roots.len() {
                break;
            }
            let Ok(record) = record::read(&file.path) else {
                continue;
            };
            for (root, tree) in record.trees() {
                if roots.contains(&root) {
                    seen.entry(root).or_insert(tree);
                }
            }
        }
        seen
    }

    /// The restore point whose ID starts with `prefix`.
    pub fn find(&self, prefix: &str) -> Result<Record, FindError> {
        let prefix = prefix.trim().to_ascii_lowercase();
        if prefix.len() < 4 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(FindError::TooShort(prefix));
        }
        let matching: Vec<RecordFile> = self
            .record_files()
            .into_iter()
            .filter(|f| f.phase == Phase::Before && f.id.starts_with(&prefix))
            .collect();
        match matching.as_slice() {
            [] => Err(FindError::NotFound(prefix)),
            [one] => Ok(record::read(&one.path)?),
            many => {
                let ids: Vec<&str> = many.iter().map(|f| f.id.as_str()).collect();
                Err(FindError::Ambiguous(prefix, ids.join(", ")))
            }
        }
    }
}
