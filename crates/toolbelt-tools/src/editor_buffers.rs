//! The file tools and the editor a session runs in ([`toolbelt_core::EditorBuffers`]):
//! `read_file` reads the editor's text of a file, unsaved changes included, and a change
//! to a file is refused while the editor holds unsaved changes it would overwrite.

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use toolbelt_core::{ErrorKind, ToolEnvironment, ToolError};

/// How long the editor has to answer; then the file on disk is used.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// The editor's text of `path`; `None` without an editor, when it does not have the file,
/// does not answer in time, or the call is cancelled.
pub(crate) async fn text(
    env: &ToolEnvironment,
    path: &Path,
    cancel: &CancellationToken,
) -> Option<String> {
    let editor = env.editor.get()?;
    tokio::select! {
        biased;
        () = cancel.cancelled() => None,
        answer = tokio::time::timeout(ANSWER_WITHIN, editor.text(path)) => answer.ok().flatten(),
    }
}

/// Refuses a change to `path` while the editor's text differs from the file on disk
/// (line endings aside: editors hand out `\n`): writing would replace what the person
/// typed and has not saved.
pub(crate) async fn no_unsaved_changes(
    env: &ToolEnvironment,
    path: &Path,
    cancel: &CancellationToken,
) -> Result<(), ToolError> {
    let Some(buffer) = text(env, path, cancel).await else {
        return Ok(());
    };
    let on_disk = match on_disk(path) {
        Ok(Some(text)) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        // Not a regular file, too large for an editor to have sent, unreadable: the
        // change itself says what is wrong with it.
        Ok(None) | Err(_) => return Ok(()),
    };
    if same_text(&buffer, &on_disk) {
        return Ok(());
    }
    Err(ToolError::new(
        ErrorKind::ExecutionDenied,
        format!(
            "{} has unsaved changes in the editor; nothing was written, so they are not lost. Ask the person to save or discard them, then read the file again.",
            path.display()
        ),
    ))
}

/// The most of a file compared with the editor's text: no larger text comes over ACP.
const MAX_COMPARED: u64 = 64 * 1024 * 1024;

/// The file's text, read without blocking on a FIFO or following it into a device:
/// `None` when it is not a regular file or is larger than [`MAX_COMPARED`].
fn on_disk(path: &Path) -> std::io::Result<Option<String>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > MAX_COMPARED {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(MAX_COMPARED + 1).read_to_end(&mut bytes)?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

fn same_text(a: &str, b: &str) -> bool {
    a == b || a.replace("\r\n", "\n") == b.replace("\r\n", "\n")
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use toolbelt_config::settings::Settings;
    use toolbelt_core::EditorBuffers;
    use toolbelt_core::{BoxFuture, WorkspaceRoots};

    use super::*;

    /// An editor holding one text for every file, or never answering.
    struct Editor(Option<String>);

    impl EditorBuffers for Editor {
        fn text<'a>(&'a self, _: &'a Path) -> BoxFuture<'a, Option<String>> {
            Box::pin(async move {
                match &self.0 {
                    Some(text) => Some(text.clone()),
                    None => std::future::pending().await,
                }
            })
        }
    }

    fn env(dir: &Path, editor: Option<Editor>) -> ToolEnvironment {
        let roots = WorkspaceRoots::new(vec![dir.to_path_buf()]).unwrap();
        let env = ToolEnvironment::new(roots, Arc::new(Settings::default()), PathBuf::from(dir));
        if let Some(editor) = editor {
            env.editor.set(Arc::new(editor));
        }
        env
    }

    #[tokio::test]
    async fn a_change_waits_for_unsaved_text_to_be_saved() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "one\r\ntwo\r\n").unwrap();
        let cancel = CancellationToken::new();
        let clean = env(dir.path(), Some(Editor(Some("one\ntwo\n".into()))));
        assert!(no_unsaved_changes(&clean, &file, &cancel).await.is_ok());
        let dirty = env(dir.path(), Some(Editor(Some("one\ntwo\nthree\n".into()))));
        let refused = no_unsaved_changes(&dirty, &file, &cancel)
            .await
            .unwrap_err();
        assert!(
            refused.message.contains("unsaved changes"),
            "{}",
            refused.message
        );
        assert!(
            no_unsaved_changes(&env(dir.path(), None), &file, &cancel)
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn a_fifo_in_place_of_the_file_is_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let cancel = CancellationToken::new();
        let editor = env(dir.path(), Some(Editor(Some("typed\n".into()))));
        // Returns at once: the change's own checks refuse a FIFO.
        assert!(no_unsaved_changes(&editor, &fifo, &cancel).await.is_ok());
    }

    #[tokio::test]
    async fn a_cancelled_call_does_not_wait_for_a_silent_editor() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let silent = env(dir.path(), Some(Editor(None)));
        assert_eq!(text(&silent, &dir.path().join("a"), &cancel).await, None);
    }
}
