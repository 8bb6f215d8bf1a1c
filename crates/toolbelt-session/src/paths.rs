//! Where a session keeps its files: the toolbelt home and one directory per project in
//! it, for spilled output, saved conversations and logs.

use std::path::{Path, PathBuf};

/// `$TOOLBELT_HOME` (default `~/.toolbelt`), or the system temp directory when there is
/// no home.
pub fn toolbelt_home() -> PathBuf {
    std::env::var_os("TOOLBELT_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".toolbelt")))
        .unwrap_or_else(|| std::env::temp_dir().join("toolbelt"))
}

/// One directory name per project: the path made readable (`home-me-src-app`), then a
/// hash of the exact path, so `/a/b-c` and `/a/b/c` never share a directory.
fn project_dir_name(project: &Path) -> String {
    use sha2::Digest;
    use std::os::unix::ffi::OsStrExt;
    let readable: String = project
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let readable: String = readable.trim_matches('-').chars().take(80).collect();
    let digest = sha2::Sha256::digest(project.as_os_str().as_bytes());
    let hash: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    format!("{readable}-{hash}")
}

/// `<toolbelt home>/tmp/<project>`: spilled output and job logs, readable by the model.
pub(crate) fn session_dir(project: &Path) -> PathBuf {
    toolbelt_home().join("tmp").join(project_dir_name(project))
}

/// `<toolbelt home>/sessions/<project>`: the saved conversations (`--continue`,
/// `--resume`) and the interactive input history. Outside every directory the model's
/// tools can read, like the logs: tool output in them may hold secrets.
pub fn sessions_dir(project: &Path) -> PathBuf {
    toolbelt_home()
        .join("sessions")
        .join(project_dir_name(project))
}

/// `<toolbelt home>/logs/<project>`: MCP server logs. Outside every directory the
/// model's tools can read: a server's stderr may hold what it was given (tokens in a
/// URL, headers), and the model must not read it back.
pub(crate) fn log_dir(project: &Path) -> PathBuf {
    toolbelt_home().join("logs").join(project_dir_name(project))
}

/// `<toolbelt home>/history/<project>`: the project's file checkpoints (issue 34).
/// Outside every directory the model's tools can read or write, and never inside the
/// project's `.git`.
pub(crate) fn history_dir(project: &Path) -> PathBuf {
    toolbelt_home()
        .join("history")
        .join(project_dir_name(project))
}

/// `p` against `cwd` when it is relative.
pub(crate) fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projects_never_share_a_session_directory() {
        let a = session_dir(Path::new("/a/b-c"));
        let b = session_dir(Path::new("/a/b/c"));
        assert_ne!(a, b);
        assert!(a.ends_with(project_dir_name(Path::new("/a/b-c"))));
        assert!(project_dir_name(Path::new("/a/b-c")).starts_with("a-b-c-"));
        assert_ne!(log_dir(Path::new("/a/b-c")), a);
        assert!(!log_dir(Path::new("/a")).starts_with(session_dir(Path::new("/a"))));
    }
}
