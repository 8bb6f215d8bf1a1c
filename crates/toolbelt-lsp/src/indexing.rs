//! What makes a server's first answer a true one beyond the wait for its project's
//! loading (`client.rs`): an empty answer from a server that may still be indexing is
//! asked again ([`until_found`]), and a server asked a workspace-wide question with no
//! file open first gets one (typescript-language-server has no project before a file of
//! it is open, and answers "No Project").

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::client::LspClient;
use crate::config::ServerConfig;

/// At most this many directory entries are looked at to find a file to open.
const MAX_LOOKED_AT: usize = 2000;

/// What is said under an empty answer from a server still indexing.
pub(crate) fn indexing_note(client: &LspClient) -> String {
    format!(
        "\n(the language server `{}` was still indexing the project: this answer may be incomplete; ask again in a moment)",
        client.name()
    )
}

/// Asks with `ask` until the answer is not `empty`, while the server may still be
/// indexing ([`LspClient::busy`]) and its startup window is open, pausing 100 ms, then
/// twice as long each time (at most 1 s). Returns the last answer and whether it came
/// empty from a server that was still busy.
pub(crate) async fn until_found<T, F, Fut>(
    client: &LspClient,
    mut ask: F,
    empty: fn(&T) -> bool,
) -> Result<(T, bool), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let mut pause = Duration::from_millis(100);
    loop {
        let answer = ask().await?;
        if !empty(&answer) || !client.busy() {
            return Ok((answer, false));
        }
        let Some(left) = client.startup_left() else {
            return Ok((answer, true));
        };
        tokio::time::sleep(pause.min(left)).await;
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}

/// Opens one file `config` covers under `root` when the server has none open, and waits
/// until the server loaded the project it belongs to. Nothing happens when no such file
/// is found or read: the question is then asked as it is.
pub(crate) async fn open_a_project_file(client: &LspClient, config: &ServerConfig, root: &Path) {
    if client.has_open_documents().await {
        return;
    }
    let (config, root) = (config.clone(), root.to_path_buf());
    let Ok(Some((file, language))) =
        tokio::task::spawn_blocking(move || a_covered_file(&config, &root)).await
    else {
        return;
    };
    let Ok(text) = crate::operations::read_document(file.clone()).await else {
        return;
    };
    if client.sync_document(&file, &language, &text).await.is_ok() {
        client.wait_until_loaded().await;
    }
}

/// The first file `config` covers under `root`, breadth-first in name order: hidden
/// folders and `node_modules` skipped, links not followed, at most [`MAX_LOOKED_AT`]
/// entries looked at.
fn a_covered_file(config: &ServerConfig, root: &Path) -> Option<(PathBuf, String)> {
    let mut queue = VecDeque::from([root.to_path_buf()]);
    let mut looked_at = 0;
    while let Some(dir) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            looked_at += 1;
            if looked_at > MAX_LOOKED_AT {
                return None;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if kind.is_dir() && !name.starts_with('.') && name != "node_modules" {
                queue.push_back(path);
            } else if kind.is_file()
                && let Some(language) = config.language_of(&path)
            {
                return Some((path, language.to_string()));
            }
        }
    }
    None
}
