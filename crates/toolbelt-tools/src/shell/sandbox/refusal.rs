//! Telling the model that the read-only sandbox, not the command, is why an unasked
//! command failed, so it asks for approval instead of retrying variants.
//!
//! The kernel does not report what it refused, so this reads the output: a line with
//! "Permission denied", "Operation not permitted" or "Read-only file system" that names
//! a path. The path is only claimed when the person could have written it outside the
//! sandbox (`access(W_OK)` on it or, when it does not exist, on its directory), so
//! `find`'s "Permission denied" on a directory nobody may read is not blamed on the
//! sandbox. Without such a path the note says the sandbox *may* have refused it.

use std::path::{Path, PathBuf};

use rustix::fs::{Access, access};

const REFUSALS: &[&str] = &[
    "Permission denied",
    "Operation not permitted",
    "Read-only file system",
];

/// The note to add to an unasked command's failed result, if its output shows a
/// refusal. `cwd` resolves relative paths.
pub(crate) fn refusal_note(output: &str, cwd: &Path) -> Option<String> {
    let lines: Vec<&str> = output
        .lines()
        .filter(|l| REFUSALS.iter().any(|r| l.contains(r)))
        .collect();
    if lines.is_empty() {
        return None;
    }
    let blocked = lines
        .iter()
        .filter_map(|l| named_path(l))
        .map(|p| if p.is_absolute() { p } else { cwd.join(p) })
        .find(|p| writable_outside(p));
    Some(match blocked {
        Some(path) => format!(
            "Note: this command ran without the user's approval, in a read-only sandbox. It tried to write {}, \
             which an unapproved command may not do; ask the user to approve it to run it unconfined \
             (retrying it in another form will not help).",
            path.display()
        ),
        None => "Note: this command ran without the user's approval, in a read-only sandbox (no writes, \
                 no network); its failure may have been refused by the sandbox. If it needs to write or \
                 connect, ask the user to approve it to run it unconfined."
            .to_string(),
    })
}

/// The path a refusal line names: the first quoted one (`'x'`, `‘x’`, `"x"`), else the
/// field before the refusal in `prog: path: Permission denied`.
fn named_path(line: &str) -> Option<PathBuf> {
    for (open, close) in [('\'', '\''), ('‘', '’'), ('"', '"')] {
        if let Some(start) = line.find(open) {
            let rest = &line[start + open.len_utf8()..];
            if let Some(end) = rest.find(close)
                && end > 0
            {
                return Some(PathBuf::from(&rest[..end]));
            }
        }
    }
    let fields: Vec<&str> = line.split(": ").collect();
    let at = fields
        .iter()
        .position(|f| REFUSALS.iter().any(|r| f.contains(r)))?;
    // `bash: /x: Permission denied` names the path second; the first field is the program.
    (at >= 2)
        .then(|| fields[at - 1].trim())
        .filter(|f| !f.is_empty())
        .map(PathBuf::from)
}

/// Whether the person could write `path` (or create it in its directory).
fn writable_outside(path: &Path) -> bool {
    if path.symlink_metadata().is_ok() {
        return access(path, Access::WRITE_OK).is_ok();
    }
    path.parent()
        .is_some_and(|dir| access(dir, Access::WRITE_OK).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_path_the_person_could_write() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x");
        let out = format!(
            "touch: cannot touch '{}': Permission denied\n",
            target.display()
        );
        let note = refusal_note(&out, dir.path()).unwrap();
        assert!(
            note.contains(&format!("tried to write {}", target.display())),
            "{note}"
        );
        let bash = format!("bash: line 1: {}: Read-only file system", target.display());
        assert!(
            refusal_note(&bash, dir.path())
                .unwrap()
                .contains("tried to write")
        );
    }

    #[test]
    fn a_path_nobody_may_write_is_not_blamed_on_the_sandbox() {
        // (Tests may run as root, who may write anything that exists: a path in a
        // directory that does not exist is one nobody could write.)
        let dir = tempfile::tempdir().unwrap();
        let line = format!("find: '{}/gone/x': Permission denied", dir.path().display());
        let note = refusal_note(&line, Path::new("/"));
        let note = note.unwrap();
        assert!(note.contains("may have been refused"), "{note}");
        assert!(refusal_note("all fine\n", Path::new("/")).is_none());
    }
}
