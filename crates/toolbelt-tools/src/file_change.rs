//! What `write_file` and `edit` share: reading the current file safely, noticing that
//! it changed between the approved diff and the write, and writing the new bytes
//! atomically with parent directories created.
//!
//! A person approves a diff computed from the file as it was when they were asked. If
//! the file changed before the call runs, writing anyway would apply a change nobody
//! saw, so the call fails and nothing is written; the model is told to look again.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use toolbelt_core::{ErrorKind, ToolError, WorkspaceRoots};

use crate::atomic_write::write_atomic;

/// What identifies a version of a file cheaply: length and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
}

/// The current state of a path about to be written.
#[derive(Debug)]
pub enum Current {
    Missing,
    File { bytes: Vec<u8>, stamp: FileStamp },
}

impl Current {
    pub fn stamp(&self) -> Option<FileStamp> {
        match self {
            Current::Missing => None,
            Current::File { stamp, .. } => Some(*stamp),
        }
    }
}

/// The stamp of `path` now (`None` when it does not exist).
/// Resolves a path the model wants written (through the workspace boundary) and
/// refuses a directory; `verb` completes "give the path of a file to ...".
pub fn resolve_target(
    roots: &WorkspaceRoots,
    given: &str,
    verb: &str,
) -> Result<PathBuf, ToolError> {
    let path = roots.resolve(given.trim())?;
    if path.is_dir() {
        return Err(ToolError::new(
            ErrorKind::TargetIsDirectory,
            format!(
                "{} is a directory; give the path of a file to {verb}.",
                path.display()
            ),
        ));
    }
    Ok(path)
}

pub fn stamp_now(path: &Path) -> Result<Option<FileStamp>, ToolError> {
    match std::fs::metadata(path) {
        Ok(meta) => Ok(Some(FileStamp {
            len: meta.len(),
            modified: meta.modified().ok(),
        })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(path, "read", &e)),
    }
}

/// Reads the file at `path` if there is one. Directories, FIFOs and devices are refused
/// before they are opened: a FIFO would block the read.
pub fn read_current(path: &Path) -> Result<Current, ToolError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Current::Missing),
        Err(e) => return Err(io_error(path, "read", &e)),
    };
    if meta.is_dir() {
        return Err(ToolError::new(
            ErrorKind::TargetIsDirectory,
            format!(
                "{} is a directory; give the path of a file inside it.",
                path.display()
            ),
        ));
    }
    if !meta.is_file() {
        return Err(ToolError::new(
            ErrorKind::FileWriteFailure,
            format!(
                "{} is not a regular file (a FIFO, socket or device); only regular files can be written.",
                path.display()
            ),
        ));
    }
    let stamp = FileStamp {
        len: meta.len(),
        modified: meta.modified().ok(),
    };
    let bytes = std::fs::read(path).map_err(|e| io_error(path, "read", &e))?;
    Ok(Current::File { bytes, stamp })
}

/// The error for a file that changed after its diff was shown.
pub fn changed_since_confirmation(path: &Path) -> ToolError {
    ToolError::new(
        ErrorKind::FileWriteFailure,
        format!(
            "{} changed after the change was proposed for approval; nothing was written. Read the file again and retry.",
            path.display()
        ),
    )
}

/// Creates the parent directories of `path` and replaces it with `bytes` atomically.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ToolError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error(parent, "create", &e))?;
    }
    write_atomic(path, bytes).map_err(|e| io_error(path, "write", &e))
}

/// An I/O error as a tool error with the closest kind (`EACCES` → permission denied,
/// `ENOSPC` → no space left, ...).
pub fn io_error(path: &Path, action: &str, e: &std::io::Error) -> ToolError {
    let kind = ErrorKind::from_io(
        e,
        if action == "read" {
            ErrorKind::ReadContentFailure
        } else {
            ErrorKind::FileWriteFailure
        },
    );
    let what = match e.kind() {
        std::io::ErrorKind::NotADirectory => {
            "a part of the path is a file, not a directory".to_string()
        }
        _ => e.to_string(),
    };
    ToolError::new(kind, format!("Cannot {action} {}: {what}", path.display()))
}

/// The lossy text of bytes for a display (the diff of a non-UTF-8 file is approximate).
pub fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
