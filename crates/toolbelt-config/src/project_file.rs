//! Files toolbelt reads *by itself* from a project: context files (`QWEN.md`,
//! `AGENTS.md`), sub-agent definitions, declared-tool manifests, skills. No tool call
//! names them, so no `WorkspaceRoots::resolve` (toolbelt-core) checks them; this is their one
//! checkpoint instead.
//!
//! A cloned repository is not trusted to point anywhere: `QWEN.md -> ~/.ssh/id_rsa`
//! would put the key in the system prompt, and so in the model provider's logs;
//! `AGENTS.md -> /dev/zero` or a FIFO would hang or exhaust the session before it starts.
//! So [`read_in_project`] resolves the path (`..` and every symbolic link) *before*
//! checking that it lies in the project, opens the resolved path without following a
//! link in its last component (one swapped in after the check is refused, not followed)
//! and without blocking (a FIFO), checks that what it opened is a regular file, and
//! reads at most a given number of bytes.
//!
//! Architecture Invariant: every file toolbelt reads by itself from a project goes
//! through [`read_in_project`] (the person's own files, `~/.qwen/...`, through
//! [`read_own`]); one that leaves the project is skipped with a warning.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Why a file was not read. The messages name no content, only the path and the reason,
/// so a warning built from one leaks nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProjectFileError {
    /// The path resolves (through a symbolic link or `..`) outside the project.
    #[error("it leads outside the project (to {}); it is not read", target.display())]
    Outside {
        /// Where the path leads.
        target: PathBuf,
    },
    /// Not a regular file (a directory, FIFO, socket or device).
    #[error("it is not a regular file; it is not read")]
    NotRegular,
    /// Longer than the limit.
    #[error("it is longer than {limit} bytes; it is not read")]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// Opening or reading failed (the operating system's message).
    #[error("cannot read it: {0}")]
    Io(String),
}

/// The bytes of `path`, which must resolve inside `project` (itself resolved here) and
/// be a regular file of at most `limit` bytes.
pub fn read_in_project(
    path: &Path,
    project: &Path,
    limit: u64,
) -> Result<Vec<u8>, ProjectFileError> {
    let project = project
        .canonicalize()
        .map_err(|e| ProjectFileError::Io(e.to_string()))?;
    let real = path
        .canonicalize()
        .map_err(|e| ProjectFileError::Io(e.to_string()))?;
    if !real.starts_with(&project) {
        return Err(ProjectFileError::Outside { target: real });
    }
    read_resolved(&real, limit)
}

/// The bytes of the person's own file at `path` (`~/.qwen/QWEN.md`; links are theirs
/// and followed), which must be a regular file of at most `limit` bytes.
pub fn read_own(path: &Path, limit: u64) -> Result<Vec<u8>, ProjectFileError> {
    let real = path
        .canonicalize()
        .map_err(|e| ProjectFileError::Io(e.to_string()))?;
    read_resolved(&real, limit)
}

/// Whether `path` resolves inside `project` (both resolved here); `false` when either
/// cannot be resolved. For folders a loader lists before reading their files.
pub fn is_in_project(path: &Path, project: &Path) -> bool {
    match (path.canonicalize(), project.canonicalize()) {
        (Ok(real), Ok(project)) => real.starts_with(project),
        _ => false,
    }
}

/// The bytes of the regular file at the resolved `path`, at most `limit` of them, opened
/// without following a symbolic link in the last component (one swapped in since it was
/// resolved) and without blocking on a FIFO.
fn read_resolved(path: &Path, limit: u64) -> Result<Vec<u8>, ProjectFileError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // O_NOFOLLOW on a link: the last component was swapped for one.
            Some(libc::ELOOP) => ProjectFileError::NotRegular,
            _ => ProjectFileError::Io(e.to_string()),
        })?;
    let meta = file
        .metadata()
        .map_err(|e| ProjectFileError::Io(e.to_string()))?;
    if !meta.is_file() {
        return Err(ProjectFileError::NotRegular);
    }
    if meta.len() > limit {
        return Err(ProjectFileError::TooLarge { limit });
    }
    let mut bytes = Vec::new();
    // The file may grow between the check and the read.
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| ProjectFileError::Io(e.to_string()))?;
    if bytes.len() as u64 > limit {
        return Err(ProjectFileError::TooLarge { limit });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_file_inside_is_read_and_a_link_inside_to_inside_too() {
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("real.md"), "text").unwrap();
        symlink("real.md", project.path().join("QWEN.md")).unwrap();
        let got = read_in_project(&project.path().join("QWEN.md"), project.path(), 100);
        assert_eq!(got.unwrap(), b"text");
    }

    #[test]
    fn a_link_out_of_the_project_is_not_read() {
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("id_rsa"), "SECRET KEY").unwrap();
        symlink(
            outside.path().join("id_rsa"),
            project.path().join("QWEN.md"),
        )
        .unwrap();
        let err =
            read_in_project(&project.path().join("QWEN.md"), project.path(), 100).unwrap_err();
        assert!(matches!(err, ProjectFileError::Outside { .. }), "{err}");
        assert!(!err.to_string().contains("SECRET"));
        // Through a linked directory, and through `..`, too.
        symlink(outside.path(), project.path().join("dir")).unwrap();
        for path in ["dir/id_rsa", "sub/../dir/id_rsa"] {
            std::fs::create_dir_all(project.path().join("sub")).unwrap();
            let err = read_in_project(&project.path().join(path), project.path(), 100);
            assert!(
                matches!(err, Err(ProjectFileError::Outside { .. })),
                "{path}"
            );
        }
    }

    #[test]
    fn devices_fifos_and_directories_are_not_read() {
        let project = tempfile::tempdir().unwrap();
        let fifo = project.path().join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        // Would block forever on open or read if opened as a file.
        assert_eq!(read_resolved(&fifo, 100), Err(ProjectFileError::NotRegular));
        assert_eq!(
            read_resolved(Path::new("/dev/zero"), 100),
            Err(ProjectFileError::NotRegular)
        );
        assert_eq!(
            read_resolved(project.path(), 100),
            Err(ProjectFileError::NotRegular)
        );
    }

    #[test]
    fn a_file_over_the_limit_is_not_read() {
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("big"), "x".repeat(101)).unwrap();
        assert_eq!(
            read_in_project(&project.path().join("big"), project.path(), 100),
            Err(ProjectFileError::TooLarge { limit: 100 })
        );
    }

    #[test]
    fn a_link_as_last_component_is_not_followed_by_read_resolved() {
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("a"), "x").unwrap();
        symlink("a", project.path().join("link")).unwrap();
        assert_eq!(
            read_resolved(&project.path().join("link"), 100),
            Err(ProjectFileError::NotRegular)
        );
    }
}
