//! The editor a session runs in (an ACP client that offers `fs/read_text_file`), as the
//! file tools see it: the text of a file as the person has it open, unsaved changes
//! included. `read_file` reads that text; a tool that changes a file refuses while the
//! editor holds unsaved changes the change would overwrite (nothing the person typed is
//! lost), and otherwise writes the file itself, confined and checkpointed as always.
//!
//! Empty (no editor) in every front end but ACP.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::BoxFuture;

/// What an editor holds of files.
pub trait EditorBuffers: Send + Sync {
    /// The editor's text of `path` (an absolute path the tools resolved in the workspace),
    /// unsaved changes included; `None` when the editor cannot say (it does not have the
    /// file, it failed or did not answer in time).
    fn text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Option<String>>;
}

/// Where the session's editor is put; shared by every clone of the environment.
#[derive(Clone, Default)]
pub struct EditorSlot(Arc<OnceLock<Arc<dyn EditorBuffers>>>);

impl EditorSlot {
    /// Sets the editor; a second call is ignored.
    pub fn set(&self, editor: Arc<dyn EditorBuffers>) {
        let _ = self.0.set(editor);
    }

    /// The editor, `None` outside one.
    pub fn get(&self) -> Option<&Arc<dyn EditorBuffers>> {
        self.0.get()
    }
}

impl std::fmt::Debug for EditorSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "EditorSlot(set)"
        } else {
            "EditorSlot(empty)"
        })
    }
}
