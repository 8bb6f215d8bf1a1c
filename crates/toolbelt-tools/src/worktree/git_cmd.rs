//! Running git for the worktree module: always a program and its arguments, never a
//! shell, so no name or path given to it is ever parsed as shell syntax; standard input
//! closed and prompts off, so a fetch that wants a password fails instead of waiting.

use std::path::Path;
use std::process::{Command, Stdio};

use super::WorktreeError;

/// git's standard output (trailing newline removed) when it succeeds; otherwise an error
/// carrying what it said on standard error. `dir` is given with `-C`.
pub(super) fn git(dir: &Path, args: &[&str]) -> Result<String, WorktreeError> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| WorktreeError::Git(format!("cannot run git: {e}")))?;
    if output.status.success() {
        let text = String::from_utf8_lossy(&output.stdout);
        return Ok(text.trim_end_matches('\n').to_string());
    }
    let said = String::from_utf8_lossy(&output.stderr).trim().to_string();
    Err(WorktreeError::Git(format!(
        "`git {}` failed: {}",
        args.join(" "),
        if said.is_empty() {
            format!("exit status {}", output.status)
        } else {
            said
        }
    )))
}

/// Whether git succeeds (a `--verify` or `--quiet` question); a git that cannot run is
/// an error, not a "no".
pub(super) fn git_ok(dir: &Path, args: &[&str]) -> Result<bool, WorktreeError> {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| WorktreeError::Git(format!("cannot run git: {e}")))?;
    Ok(status.success())
}
