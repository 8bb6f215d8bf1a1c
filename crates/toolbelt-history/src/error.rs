//! [`HistoryError`]: why a checkpoint, a listing or a restore could not be done, by cause,
//! so an embedder can tell a damaged store from a stale restore or a path outside the
//! workspace. The texts are the ones `/restore` and `toolbelt restore` print.

use std::path::PathBuf;

use crate::objects::StoreError;
use crate::scan::ScanError;
use crate::store::FindError;

/// Why [`crate::History`] could not take a checkpoint, list or restore.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// Checkpoints are off for this session (an earlier scan found too many files);
    /// the reason kept then.
    #[error("{0}")]
    Disabled(String),
    /// The workspace has more files than `general.checkpointing.maxFiles`.
    #[error(
        "the workspace has more than {0} files to keep (general.checkpointing.maxFiles); add ignore rules or raise the limit"
    )]
    TooManyFiles(usize),
    /// The store could not be read or written, or is damaged.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No checkpoint (or more than one) has the ID asked for.
    #[error(transparent)]
    Find(#[from] FindError),
    /// A path given to a restore lies in no workspace root.
    #[error("{} is outside the workspace ({roots}); a restore only writes files inside it", path.display())]
    OutsideWorkspace {
        /// The path as given.
        path: PathBuf,
        /// The workspace roots, comma-separated.
        roots: String,
    },
    /// The workspace changed between showing a restore and applying it.
    #[error("files changed since the restore was shown; look at it again before restoring")]
    Stale,
}

impl From<ScanError> for HistoryError {
    fn from(e: ScanError) -> Self {
        match e {
            ScanError::Store(e) => HistoryError::Store(e),
            ScanError::TooMany(n) => HistoryError::TooManyFiles(n),
        }
    }
}
