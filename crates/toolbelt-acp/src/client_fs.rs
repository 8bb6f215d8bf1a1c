//! The editor's files (`fs/read_text_file`), when it offers them: the file tools read
//! the editor's text of a file, unsaved changes included, and refuse to change a file
//! whose unsaved changes they would overwrite ([`toolbelt_core::EditorBuffers`]). Writes stay
//! toolbelt's own (confined to the workspace, atomic, checkpointed); an editor that
//! offers `fs/write_text_file` is then given the new text (`updates.rs`).

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol_schema::v1::ReadTextFileResponse;
use serde_json::json;
use toolbelt_core::BoxFuture;
use toolbelt_core::EditorBuffers;

use crate::rpc::Peer;

/// One session's editor, asked through `fs/read_text_file`.
pub(crate) struct ClientFiles {
    pub peer: Arc<Peer>,
    pub session_id: String,
}

impl EditorBuffers for ClientFiles {
    fn text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let params = json!({"sessionId": self.session_id, "path": path});
            let answer = self.peer.request("fs/read_text_file", params).await.ok()?;
            serde_json::from_value::<ReadTextFileResponse>(answer)
                .ok()
                .map(|r| r.content)
        })
    }
}
