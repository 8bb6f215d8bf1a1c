//! What `write_file` and `edit` share: reading the current file safely, noticing that
//! it changed between the approved diff and the write, and writing the new bytes
//! atomically with parent directories created.
//!
//! A person approves a diff computed from the file as it was when they were asked. If
//! the file changed before the call runs, writing anyway would apply a change nobody
//! saw, so the call fails and nothing is written; the model is told to look again.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use toolbelt_core::{ErrorKind, ToolError, WorkspaceRoots};

use crate::atomic_write::write_atomic;

/// What identifies a version of a file cheaply: which file (device and inode, so a
/// file replaced by a rename is noticed), its length and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<SystemTime>,
}

impl FileStamp {
    pub fn of(meta: &std::fs::Metadata) -> FileStamp {
        use std::os::unix::fs::MetadataExt;
        FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            modified: meta.modified().ok(),
        }
    }

    /// The file's length in bytes.
    pub fn size(&self) -> u64 {
        self.len
    }
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

/// An existing file opened for reading, not yet read.
#[derive(Debug)]
pub enum Opened {
    Missing,
    File {
        file: std::fs::File,
        stamp: FileStamp,
    },
}

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

/// The stamp of `path` now (`None` when it does not exist).
pub fn stamp_now(path: &Path) -> Result<Option<FileStamp>, ToolError> {
    match std::fs::metadata(path) {
        Ok(meta) => Ok(Some(FileStamp::of(&meta))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(path, "read", &e)),
    }
}

/// Opens the file at `path` if there is one. Directories, FIFOs and devices are refused
/// before they are opened (a FIFO would block the open); the stamp is taken from the
/// open file, so it describes the bytes that will be read.
pub fn open_current(path: &Path) -> Result<Opened, ToolError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Opened::Missing),
        Err(e) => return Err(io_error(path, "read", &e)),
    };
    check_regular(path, &meta)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| io_error(path, "read", &e))?;
    // The path may have been swapped between the check and the open.
    let meta = file.metadata().map_err(|e| io_error(path, "read", &e))?;
    check_regular(path, &meta)?;
    Ok(Opened::File {
        stamp: FileStamp::of(&meta),
        file,
    })
}

fn check_regular(path: &Path, meta: &std::fs::Metadata) -> Result<(), ToolError> {
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
    Ok(())
}

/// Reads the file at `path` if there is one (see [`open_current`]).
pub fn read_current(path: &Path) -> Result<Current, ToolError> {
    match open_current(path)? {
        Opened::Missing => Ok(Current::Missing),
        Opened::File { file, stamp } => Ok(Current::File {
            bytes: read_all(file, stamp.len, path)?,
            stamp,
        }),
    }
}

/// The whole content of an open file whose length is expected to be `len`.
pub fn read_all(mut file: std::fs::File, len: u64, path: &Path) -> Result<Vec<u8>, ToolError> {
    use std::io::{Read, Seek};
    // From the start, whatever was read of it before.
    file.rewind().map_err(|e| io_error(path, "read", &e))?;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
    file.read_to_end(&mut bytes)
        .map_err(|e| io_error(path, "read", &e))?;
    Ok(bytes)
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

/// Runs a file change off the async runtime, unless the call was cancelled before it
/// started. It is not raced against the cancellation token: once the write starts it
/// runs to its atomic rename, so a cancel never leaves a half-done state to report.
/// `what` names the change in messages ("edit", "write").
pub async fn run_change(
    ctx: &toolbelt_core::ExecContext,
    what: &str,
    change: impl FnOnce() -> Result<toolbelt_core::ToolResult, ToolError> + Send + 'static,
) -> toolbelt_core::ToolResult {
    use toolbelt_core::ToolResult;
    if ctx.cancel.is_cancelled() {
        return ToolResult::err(
            ErrorKind::Cancelled,
            format!("The {what} was cancelled before it started; nothing was written."),
        );
    }
    match tokio::task::spawn_blocking(change).await {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => ToolResult::error(e),
        Err(e) => ToolResult::err(ErrorKind::ExecutionFailed, format!("{what} failed: {e}")),
    }
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
