//! The `hooks` of every settings file, kept apart from the merged settings.
//!
//! Settings merge key by key, a higher layer's value replacing a lower one's. Hooks do
//! not: every file's hooks run, one after another in configuration order (Qwen Code and
//! Claude Code concatenate them). So each file's `hooks` value is kept whole with its
//! file, for `toolbelt-hooks` to read, and kept *as written*, before `$VAR` expansion: a
//! command hook's variables are its shell's to expand when it runs (quoted as the
//! person quoted them), and an http hook's headers expand only the variables its
//! `allowedEnvVars` names. Expanding every variable here would let a settings file send
//! any variable of toolbelt's environment in a header.
//!
//! Claude Code's files give their `hooks` and nothing else: `~/.claude/settings.json`
//! (user), the project's `.claude/settings.json` and `.claude/settings.local.json`
//! (workspace), so a person who switches keeps their hooks.
//!
//! Configuration order: the project's hooks, the user's, the system's, then Claude
//! Code's (project, local, user). A workspace file's hooks are kept in an untrusted
//! folder too, marked as not trusted: `toolbelt hooks list` shows them and says why they
//! do not run; they never run.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{SettingsError, SettingsLayer, SettingsPaths, UntrustedWorkspace, parse_settings_text};

/// One settings file's `hooks`.
#[derive(Debug, Clone, PartialEq)]
pub struct HookLayer {
    /// The layer the file belongs to (Claude Code's project files are workspace files).
    pub layer: SettingsLayer,
    /// Whether the file is Claude Code's (`.claude/settings*.json`).
    pub claude: bool,
    /// The file.
    pub file: PathBuf,
    /// Its `hooks` value, as written (no `$VAR` expanded).
    pub hooks: Value,
    /// False for a workspace file in a folder that is not trusted: listed, never run.
    pub trusted: bool,
}

/// Claude Code's settings files for a project at `project_dir` (its `hooks` only):
/// the project's two files (unless the project is the home directory, where
/// `.claude/settings.json` is the user's), then the user's.
pub(super) fn claude_files(
    project_dir: &Path,
    home: Option<&Path>,
) -> Vec<(SettingsLayer, PathBuf)> {
    let user = home.map(|h| h.join(".claude/settings.json"));
    let mut files = Vec::new();
    let project_file = project_dir.join(".claude/settings.json");
    let same_as_user = user.as_ref().is_some_and(|u| {
        u == &project_file
            || matches!(
                (std::fs::canonicalize(u), std::fs::canonicalize(&project_file)),
                (Ok(a), Ok(b)) if a == b
            )
    });
    if !same_as_user {
        files.push((SettingsLayer::Workspace, project_file));
    }
    files.push((
        SettingsLayer::Workspace,
        project_dir.join(".claude/settings.local.json"),
    ));
    if let Some(user) = user {
        files.push((SettingsLayer::User, user));
    }
    files
}

/// The `hooks` of one toolbelt settings file as written, before expansion.
pub(super) fn raw_hooks(value: &Value) -> Option<Value> {
    value.get("hooks").filter(|h| !h.is_null()).cloned()
}

/// Every file's hooks in configuration order: the toolbelt files' (`own`, their
/// `hooks` as written, in the order read), then Claude Code's files, which are read
/// here. A workspace file's hooks in an untrusted folder are kept as not trusted and,
/// for Claude Code's files, named in `untrusted` (the toolbelt file's `hooks` key is
/// named there by the trust filter already).
pub(super) fn collect(
    paths: &SettingsPaths,
    own: Vec<(SettingsLayer, PathBuf, Value)>,
    trusted: bool,
    untrusted: &mut Option<UntrustedWorkspace>,
) -> Result<Vec<HookLayer>, SettingsError> {
    let rank = |layer: SettingsLayer| match layer {
        SettingsLayer::Workspace => 0,
        SettingsLayer::User => 1,
        SettingsLayer::System => 2,
    };
    let mut own = own;
    own.sort_by_key(|(layer, ..)| rank(*layer));
    let mut layers: Vec<HookLayer> = own
        .into_iter()
        .map(|(layer, file, hooks)| HookLayer {
            trusted: trusted || layer != SettingsLayer::Workspace,
            layer,
            claude: false,
            file,
            hooks,
        })
        .collect();
    for (layer, file) in &paths.claude_hooks {
        let Some(hooks) = read_claude_hooks(*layer, file)? else {
            continue;
        };
        let layer_trusted = trusted || *layer != SettingsLayer::Workspace;
        if !layer_trusted {
            note_untrusted(untrusted, paths, file);
        }
        layers.push(HookLayer {
            layer: *layer,
            claude: true,
            file: file.clone(),
            hooks,
            trusted: layer_trusted,
        });
    }
    Ok(layers)
}

/// The `hooks` of one Claude Code settings file; `None` when the file or the key is
/// absent. A file that is not JSON is an error naming it, as a toolbelt file's would be.
fn read_claude_hooks(layer: SettingsLayer, file: &Path) -> Result<Option<Value>, SettingsError> {
    let Some(text) = super::read_settings_file(layer, file)? else {
        return Ok(None);
    };
    let value = parse_settings_text(&text).map_err(|e| SettingsError::Parse {
        path: file.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.message().to_string(),
    })?;
    Ok(value.get("hooks").filter(|h| !h.is_null()).cloned())
}

/// Adds a Claude Code project file whose hooks were ignored to the untrusted-workspace
/// report (made when the toolbelt file had nothing ignored).
fn note_untrusted(untrusted: &mut Option<UntrustedWorkspace>, paths: &SettingsPaths, file: &Path) {
    let project = match &paths.trust {
        super::WorkspaceTrust::FromFolders { project, .. } => project.clone(),
        super::WorkspaceTrust::Trusted => PathBuf::new(),
    };
    let report = untrusted.get_or_insert_with(|| UntrustedWorkspace {
        file: file.to_path_buf(),
        project,
        ignored: Vec::new(),
    });
    if report.file == file {
        report.ignored.push("hooks".to_string());
    } else {
        report
            .ignored
            .push(format!("hooks (in {})", file.display()));
    }
}

/// The file whose `disableAllHooks: true` turns every hook off, if one does: any
/// layer's (a workspace file's only in a trusted folder, since the trust filter removed
/// it otherwise).
pub(super) fn disabled_by(layers: &[(SettingsLayer, PathBuf, Value)]) -> Option<PathBuf> {
    layers
        .iter()
        .find(|(_, _, value)| value.get("disableAllHooks") == Some(&Value::Bool(true)))
        .map(|(_, file, _)| file.clone())
}

/// `security.allowedHttpHookUrls`: the user's and system's list (the system's winning)
/// when either sets one, else the workspace's. A repository may narrow where its hooks
/// send data, never replace the person's list.
pub(super) fn allowed_http_hook_urls(
    layers: &[(SettingsLayer, PathBuf, Value)],
) -> Option<Vec<String>> {
    let list_of = |value: &Value| {
        value
            .pointer("/security/allowedHttpHookUrls")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| i.as_str().map(str::to_string))
                    .collect::<Vec<_>>()
            })
    };
    let own = layers
        .iter()
        .filter(|(layer, ..)| *layer != SettingsLayer::Workspace)
        .filter_map(|(_, _, value)| list_of(value))
        .next_back();
    own.or_else(|| {
        layers
            .iter()
            .filter(|(layer, ..)| *layer == SettingsLayer::Workspace)
            .find_map(|(_, _, value)| list_of(value))
    })
}
