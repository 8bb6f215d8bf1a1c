//! What the file-changing tools share (`write_file`, `edit`, `notebook_edit`,
//! `save_memory`): the one plan, confirm, apply sequence ([`FileChange`]), resolving
//! the target, reading the current file
//! safely, refusing files this user may not write, noticing that the file changed
//! between the approved diff and the write, and writing the new bytes (atomically where
//! the file's owner and attributes allow, [`crate::atomic_write`]) with parent
//! directories created.
//!
//! A person approves a diff computed from the file as it was when they were asked. If
//! the file changed before the call runs, writing anyway would apply a change nobody
//! saw, so the call fails and nothing is written; the model is told to look again.
//!
//! A file without write permission for this user (`chmod a-w`) is refused, with
//! nothing changed, unless the person's settings say `tools.files.overwriteReadOnly`.
//! Without this check a rename would replace it anyway (a rename needs only the
//! directory's permission), which is how a read-only file used to be overwritten
//! silently. See [`may_write`] for how "may write" is decided, also for root.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use toolbelt_core::{ConfirmationDetails, ErrorKind, ToolError, ToolResult, WorkspaceRoots};

use crate::atomic_write::{self, Replaced};

/// A change to one file, planned from the file as it is, shown for approval, and
/// applied as shown. Every file-changing tool goes through the same sequence:
///
/// - confirmation: [`FileChange::confirm`] plans the change. A plan is shown; a change
///   that cannot be planned (the old string is not found, the file is not text, ...)
///   asks nobody: it writes nothing and its error reaches the model when the call runs.
/// - execution: [`FileChange::apply_shown`] writes the plan that was shown, after
///   checking that the file is still the one it was planned from. When nothing was
///   shown (no question was asked: auto-edit, yolo) it plans now. When the question
///   could not be planned, the call fails: with the planning error again, or, if the
///   change would work now, as changed since the confirmation (nobody saw it).
pub(crate) trait FileChange {
    /// What a plan holds: at least the bytes to write and the version it was made from.
    type Plan: Send;

    /// The file the change writes.
    fn path(&self) -> &Path;
    /// Reads the file and works out the change, or why it cannot be made.
    fn plan(&self) -> Result<Self::Plan, ToolError>;
    /// What the person is asked to approve for `plan`.
    fn question(&self, plan: &Self::Plan) -> ConfirmationDetails;
    /// Writes `plan`.
    fn apply(&self, plan: Self::Plan) -> Result<ToolResult, ToolError>;
    /// Where the plan shown in the confirmation waits for the execution.
    fn shown(&self) -> &Shown<Self::Plan>;

    /// Refuses a plan made from a version of the file that is no longer there. `None`
    /// from [`FileChange::planned_from`] means the file did not exist.
    fn still_current(&self, plan: &Self::Plan) -> Result<(), ToolError> {
        if stamp_now(self.path())? != Self::planned_from(plan) {
            return Err(changed_since_confirmation(self.path()));
        }
        Ok(())
    }

    /// The version of the file `plan` was made from (`None`: it did not exist).
    fn planned_from(plan: &Self::Plan) -> Option<FileStamp>;

    /// The question for the confirmation, or `None` when the change cannot be planned.
    fn confirm(&self) -> Option<ConfirmationDetails> {
        let plan = self.plan().ok();
        let question = plan.as_ref().map(|plan| self.question(plan));
        if let Ok(mut slot) = self.shown().0.lock() {
            *slot = Some(plan);
        }
        question
    }

    /// Applies what was shown (see the trait's documentation).
    fn apply_shown(&self) -> Result<ToolResult, ToolError> {
        let shown = self.shown().0.lock().map(|mut g| g.take()).unwrap_or(None);
        let plan = match shown {
            None => self.plan()?,
            Some(Some(plan)) => {
                self.still_current(&plan)?;
                plan
            }
            Some(None) => {
                self.plan()?;
                return Err(changed_since_confirmation(self.path()));
            }
        };
        self.apply(plan)
    }
}

/// The plan shown in a confirmation: nothing before anyone asked, `Some(None)` when
/// there was nothing to ask because the change could not be planned.
pub(crate) struct Shown<P>(Mutex<Option<Option<P>>>);

impl<P> Default for Shown<P> {
    fn default() -> Self {
        Shown(Mutex::new(None))
    }
}

/// What writes may do beyond a file's own permissions (from settings).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct WritePolicy {
    /// `tools.files.overwriteReadOnly`: replace files this user has no write
    /// permission for.
    pub overwrite_read_only: bool,
}

impl WritePolicy {
    pub(crate) fn from_settings(settings: &toolbelt_config::settings::Settings) -> WritePolicy {
        WritePolicy {
            overwrite_read_only: settings.tools.files.overwrite_read_only,
        }
    }
}

/// What identifies a version of a file cheaply: which file (device and inode, so a
/// file replaced by a rename is noticed), its length and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<SystemTime>,
}

impl FileStamp {
    pub(crate) fn of(meta: &std::fs::Metadata) -> FileStamp {
        use std::os::unix::fs::MetadataExt;
        FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            modified: meta.modified().ok(),
        }
    }

    /// The file's length in bytes.
    pub(crate) fn size(&self) -> u64 {
        self.len
    }
}

/// The current state of a path about to be written.
#[derive(Debug)]
pub(crate) enum Current {
    Missing,
    File { bytes: Vec<u8>, stamp: FileStamp },
}

impl Current {
    pub(crate) fn stamp(&self) -> Option<FileStamp> {
        match self {
            Current::Missing => None,
            Current::File { stamp, .. } => Some(*stamp),
        }
    }
}

/// An existing file opened for reading, not yet read.
#[derive(Debug)]
pub(crate) enum Opened {
    Missing,
    File {
        file: std::fs::File,
        stamp: FileStamp,
    },
}

/// Resolves a path the model wants written (through the workspace boundary) and
/// refuses a directory; `verb` completes "give the path of a file to ...".
///
/// A path that ends in `/` (or in `/.` or `/..`) names a directory even when nothing
/// is there yet; resolving it as text would drop the slash and create a *file* named
/// like the directory, so it is refused before resolution.
pub(crate) fn resolve_target(
    roots: &WorkspaceRoots,
    given: &str,
    verb: &str,
) -> Result<PathBuf, ToolError> {
    let given = given.trim();
    if names_a_directory(given) {
        return Err(ToolError::new(
            ErrorKind::TargetIsDirectory,
            format!(
                "{given} ends with '/' (or '.' or '..'), so it names a directory; give the path of a file to {verb}, without a trailing slash."
            ),
        ));
    }
    let path = roots.resolve(given)?;
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

/// Whether a path, as text, can only name a directory.
fn names_a_directory(given: &str) -> bool {
    given.ends_with('/')
        || given.ends_with("/.")
        || given.ends_with("/..")
        || given == "."
        || given == ".."
}

/// The stamp of `path` now (`None` when it does not exist).
pub(crate) fn stamp_now(path: &Path) -> Result<Option<FileStamp>, ToolError> {
    match std::fs::metadata(path) {
        Ok(meta) => Ok(Some(FileStamp::of(&meta))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(path, "read", &e)),
    }
}

/// Opens the file at `path` if there is one, to be rewritten. Directories, FIFOs and
/// devices are refused before they are opened (a FIFO would block the open), and so is
/// a file this user may not write unless `policy` allows it; the stamp is taken from
/// the open file, so it describes the bytes that will be read.
pub(crate) fn open_current(path: &Path, policy: WritePolicy) -> Result<Opened, ToolError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Opened::Missing),
        Err(e) => return Err(io_error(path, "read", &e)),
    };
    check_regular(path, &meta)?;
    check_writable(path, &meta, policy)?;
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
pub(crate) fn read_current(path: &Path, policy: WritePolicy) -> Result<Current, ToolError> {
    match open_current(path, policy)? {
        Opened::Missing => Ok(Current::Missing),
        Opened::File { file, stamp } => Ok(Current::File {
            bytes: read_all(file, stamp.len, path)?,
            stamp,
        }),
    }
}

/// The largest file a tool holds whole in memory to change it: `write_file`'s current
/// file, an edit that cannot be streamed (see `edit/stream.rs`), a notebook. A larger one
/// is refused rather than read: a log or data file of gigabytes in the workspace must
/// not take toolbelt's memory because a model named it.
pub(crate) const MAX_HELD: u64 = 64 * 1024 * 1024;

/// The whole content of an open file whose length is expected to be `len`, at most
/// [`MAX_HELD`] bytes (also when it grows while being read).
pub(crate) fn read_all(file: std::fs::File, len: u64, path: &Path) -> Result<Vec<u8>, ToolError> {
    use std::io::{Read, Seek};
    if len > MAX_HELD {
        return Err(too_large_to_hold(path, len));
    }
    let mut file = file;
    // From the start, whatever was read of it before.
    file.rewind().map_err(|e| io_error(path, "read", &e))?;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
    file.take(MAX_HELD + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, "read", &e))?;
    if bytes.len() as u64 > MAX_HELD {
        return Err(too_large_to_hold(path, bytes.len() as u64));
    }
    Ok(bytes)
}

fn too_large_to_hold(path: &Path, len: u64) -> ToolError {
    ToolError::new(
        ErrorKind::FileTooLarge,
        format!(
            "{} is {len} bytes, over the {MAX_HELD} bytes (64 MiB) a tool holds in memory to change a file; nothing was changed. An edit whose old_string matches exactly, at most 1,000 times, works at any size; otherwise change the file with a shell command.",
            path.display()
        ),
    )
}

/// The error for a file that changed after its diff was shown.
pub(crate) fn changed_since_confirmation(path: &Path) -> ToolError {
    ToolError::new(
        ErrorKind::FileWriteFailure,
        format!(
            "{} changed after the change was proposed for approval; nothing was written. Read the file again and retry.",
            path.display()
        ),
    )
}

/// Creates the parent directories of `path` and replaces it with `bytes`.
pub(crate) fn write_file(
    path: &Path,
    bytes: &[u8],
    policy: WritePolicy,
) -> Result<Replaced, ToolError> {
    use std::io::Write;
    write_with(path, policy, |file| file.write_all(bytes))
}

/// Creates the parent directories of `path` and replaces it with what `fill` writes,
/// after checking (again, at the moment of writing) that this user may write it. The
/// file keeps its owner, group, mode and extended attributes; the write is atomic
/// unless the result says [`Replaced::InPlace`]. A `fill` that fails with
/// [`ChangedWhileWriting`] gives the "changed since the confirmation" error.
pub(crate) fn write_with(
    path: &Path,
    policy: WritePolicy,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Result<Replaced, ToolError> {
    match std::fs::metadata(path) {
        Ok(meta) => {
            check_regular(path, &meta)?;
            check_writable(path, &meta, policy)?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| io_error(parent, "create", &e))?;
            }
        }
        Err(e) => return Err(io_error(path, "write", &e)),
    }
    atomic_write::replace_with(path, fill).map_err(|e| {
        if e.get_ref()
            .is_some_and(|inner| inner.is::<ChangedWhileWriting>())
        {
            changed_since_confirmation(path)
        } else {
            io_error(path, "write", &e)
        }
    })
}

/// The error a `fill` gives when the file it copies from changed under it.
#[derive(Debug, thiserror::Error)]
#[error("the file changed while the new content was written")]
pub(crate) struct ChangedWhileWriting;

/// A sentence for a result, saying how the file was written when that is not the
/// usual atomic replacement ("" otherwise).
pub(crate) fn how_written(replaced: Replaced) -> String {
    match replaced {
        Replaced::Atomically => String::new(),
        Replaced::InPlace(reason) => format!(
            " It was written in place, not atomically, because {}; owner, group, mode and attributes are unchanged.",
            reason.describe()
        ),
    }
}

/// Refuses a file this user may not write (see [`may_write`]), unless the settings
/// allow overwriting read-only files.
pub(crate) fn check_writable(
    path: &Path,
    meta: &std::fs::Metadata,
    policy: WritePolicy,
) -> Result<(), ToolError> {
    use std::os::unix::fs::MetadataExt;
    if policy.overwrite_read_only
        || may_write(path, meta).map_err(|e| io_error(path, "write", &e))?
    {
        return Ok(());
    }
    Err(ToolError::new(
        ErrorKind::PermissionDenied,
        format!(
            "{} is read-only (mode {:04o}, owner uid {}): this user has no write permission for it, so nothing was written. \
             Ask the person to make it writable (for example chmod u+w) if it should change; \
             they can also let toolbelt replace read-only files with the setting tools.files.overwriteReadOnly: true.",
            path.display(),
            meta.mode() & 0o7777,
            meta.uid()
        ),
    ))
}

/// Whether this process may write the file, by its permission bits.
///
/// For any user but root this is the kernel's own answer, `faccessat(W_OK,
/// AT_EACCESS)` for the effective user and groups (ACLs included). Root passes every
/// permission check, so for root the answer is read from the mode instead: a file with
/// no write bit at all (`chmod a-w`: 0444, 0555) was made read-only on purpose and is
/// refused; a file that some class may write is writable. Root is not held to the
/// "other" class of a file another user owns, because a checkout owned by a regular
/// user and edited by root (a container with a mounted directory) is the common case.
/// A read-only file system or an immutable file is an error, not "read-only": no
/// setting can override those.
pub(crate) fn may_write(path: &Path, meta: &std::fs::Metadata) -> std::io::Result<bool> {
    use rustix::fs::{Access, AtFlags, CWD};
    use std::os::unix::fs::MetadataExt;
    if rustix::process::geteuid().is_root() {
        return Ok(meta.mode() & 0o222 != 0);
    }
    match rustix::fs::accessat(CWD, path, Access::WRITE_OK, AtFlags::EACCESS) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::ACCESS) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Runs a file change of `path` off the async runtime, unless the call was cancelled
/// before it started or the session's editor holds unsaved changes of the file
/// ([`crate::editor_buffers`]). It is not raced against the cancellation token: once the
/// write starts it runs to its atomic rename, so a cancel never leaves a half-done state
/// to report. `what` names the change in messages ("edit", "write").
pub(crate) async fn run_change(
    ctx: &toolbelt_core::ExecContext,
    what: &str,
    path: &Path,
    change: impl FnOnce() -> Result<toolbelt_core::ToolResult, ToolError> + Send + 'static,
) -> toolbelt_core::ToolResult {
    use toolbelt_core::ToolResult;
    if let Err(e) = crate::editor_buffers::no_unsaved_changes(&ctx.env, path, &ctx.cancel).await {
        return ToolResult::error(e);
    }
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
pub(crate) fn io_error(path: &Path, action: &str, e: &std::io::Error) -> ToolError {
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
pub(crate) fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod sequence_tests;
