//! What a settings key that names files may name, decided by the file that wrote it.
//!
//! Some keys make toolbelt read files by name. A name from the person's own files (the
//! user and system layers) or from the defaults may name the person's own files; a name
//! from a project's `.qwen/settings.json`, trusted or not, names only files inside that
//! project. Trust lets a project run its commands; it does not make the project's words
//! the person's: `context.fileName: [".env", "oauth_creds.json"]` joined onto `~/.qwen`
//! would put the person's keys into the prompt sent to the model server.
//!
//! The keys, and where each is contained:
//!
//! | key | read from | contained by |
//! |---|---|---|
//! | `context.fileName` | `~/.qwen/` and the folders from the git root down | [`Settings::context_file_names`]: the person's names for `~/.qwen`, the merged names for the project (read inside it only) |
//! | `tools.manifests` | folders or files of manifests | [`Settings::named_by`]: a project's entries must lie inside the project (and are read as its files); restricted when untrusted |
//! | `context.includeDirectories` | more roots for every file tool | restricted when untrusted (`untrusted.rs`); a trusted project widens its roots by design |
//! | `context.envKeys` | environment variables, for `when` clauses | restricted when untrusted; a trusted project may list them: its commands already run with the person's environment, so a `when` clause learns nothing they could not |
//! | `mcpServers.*.cwd`, `lsp.servers`, `hooks` | commands and their files | restricted when untrusted |
//!
//! A project's strings are not expanded (`$VAR`) while the folder is untrusted (see
//! [`Settings::load`]): expanded, any key a `when` clause can read (`config.<path>`)
//! would carry a variable's value to the project's manifests.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::{ContextFileNames, Settings, SettingsLayer};

/// The context file names read when no settings file names any.
pub const DEFAULT_CONTEXT_FILE_NAMES: [&str; 2] = ["QWEN.md", "AGENTS.md"];

/// Who wrote the value a key has after merging.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedBy {
    /// The person's own files (user, system), a default, or settings built in code.
    Person,
    /// The project's `.qwen/settings.json`: it may name files inside the project only.
    Project,
}

/// `context.fileName`, split by where each list may be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFileNamesByPlace {
    /// Names looked for in the person's own folder (`~/.qwen`): the person's own
    /// settings' names, or the defaults. Never a project's.
    pub own: Vec<String>,
    /// Names looked for in the project's folders (git root down to the working
    /// directory): the merged names, whoever wrote them (a project's file is read
    /// inside the project only).
    pub project: Vec<String>,
    /// When a project's settings wrote `project`, the folder they belong to: the
    /// folders above it (a git root of the person's, such as a home directory kept in
    /// git) are searched with `own`. `None` when the person's names are used throughout.
    pub project_folder: Option<PathBuf>,
}

impl ContextFileNamesByPlace {
    /// The names to look for in `dir`, a folder of the project's search (not `~/.qwen`).
    pub fn for_project_dir(&self, dir: &Path) -> &[String] {
        // Compared resolved, so a link to the project is the project.
        let resolved = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        match &self.project_folder {
            Some(folder) if !resolved(dir).starts_with(resolved(folder)) => &self.own,
            _ => &self.project,
        }
    }
}

impl Settings {
    /// Who wrote the value of the key at `path` (`["tools", "manifests"]`): the project
    /// when the workspace layer gives it (the highest layer that sets it).
    pub fn named_by(&self, path: &[&str]) -> NamedBy {
        match self.origin(path) {
            Some((SettingsLayer::Workspace, _)) => NamedBy::Project,
            _ => NamedBy::Person,
        }
    }

    /// The value of the key at `path` as the person's own files give it, the
    /// workspace layer left out: the highest user or system layer that sets it.
    fn persons_value(&self, path: &[&str]) -> Option<&Value> {
        self.layers
            .iter()
            .rev()
            .filter(|(layer, ..)| *layer != SettingsLayer::Workspace)
            .find_map(|(_, _, value)| {
                let mut node = value;
                for key in path {
                    node = node.get(key)?;
                }
                Some(node)
            })
    }

    /// The context file names, by where they may be read: a project's names are never
    /// joined onto the person's folders.
    pub fn context_file_names(&self) -> ContextFileNamesByPlace {
        let names = |given: Option<&ContextFileNames>| match given {
            Some(names) if !names.0.is_empty() => names.0.clone(),
            _ => DEFAULT_CONTEXT_FILE_NAMES.map(String::from).to_vec(),
        };
        let project = names(self.context.file_name.as_ref());
        let key = ["context", "fileName"];
        let (own, project_folder) = match self.origin(&key) {
            Some((SettingsLayer::Workspace, file)) => {
                // Each layer was checked on its own at load, so the person's value parses.
                let persons = self
                    .persons_value(&key)
                    .and_then(|v| ContextFileNames::deserialize(v).ok());
                // `<project>/.qwen/settings.json`.
                let folder = file.parent().and_then(Path::parent).map(Path::to_path_buf);
                (names(persons.as_ref()), folder)
            }
            _ => (project.clone(), None),
        };
        ContextFileNamesByPlace {
            own,
            project,
            project_folder,
        }
    }
}
