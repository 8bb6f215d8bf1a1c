//! `.lsp.json`: the language servers of a project and of the user, in the layout Qwen Code
//! and Claude Code plugins use (a language name per top-level key, its server as the value).
//!
//! The project's file is read only in a trusted folder: a server is a program toolbelt
//! starts by itself, so a cloned repository must not be able to name one. The user's file
//! (`~/.qwen/.lsp.json`) is always read. A bad file is an error that names the file and
//! the key, so the person can fix it; it never silently drops a server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

/// One configured language server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The top-level key of `.lsp.json` (`python`, `typescript`).
    pub name: String,
    /// The file it came from (named in errors and in `lsp list`).
    pub source: PathBuf,
    /// The program to start (found on `PATH`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to its environment.
    pub env: BTreeMap<String, String>,
    /// File extension (with its dot, lower case) to LSP language id.
    pub extension_to_language: BTreeMap<String, String>,
    /// Sent as `initializationOptions` in `initialize`.
    pub initialization_options: Option<Value>,
    /// Sent with `workspace/didChangeConfiguration` after `initialize`.
    pub settings: Option<Value>,
    /// The folder the server works on; the session's primary root when absent.
    pub workspace_folder: Option<PathBuf>,
    /// How long `initialize` may take (`startupTimeout`).
    pub startup_timeout: Duration,
    /// How long `shutdown` may take before the group is killed (`shutdownTimeout`).
    pub shutdown_timeout: Duration,
    /// How long one request may take once the server runs (`requestTimeout`, a toolbelt
    /// key; default 30 s).
    pub request_timeout: Duration,
    /// Whether a crashed server is started again on the next call (`restartOnCrash`).
    pub restart_on_crash: bool,
    /// How many restarts after crashes (`maxRestarts`).
    pub max_restarts: u32,
}

impl ServerConfig {
    /// The language id of `path` if this server covers its extension.
    pub fn language_of(&self, path: &Path) -> Option<&str> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        self.extension_to_language
            .get(&format!(".{ext}"))
            .map(String::as_str)
    }
}

/// The file's shape, as written (camelCase keys).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawServer {
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    extension_to_language: BTreeMap<String, String>,
    initialization_options: Option<Value>,
    settings: Option<Value>,
    workspace_folder: Option<String>,
    startup_timeout: Option<u64>,
    shutdown_timeout: Option<u64>,
    request_timeout: Option<u64>,
    #[serde(default)]
    restart_on_crash: bool,
    max_restarts: Option<u32>,
    transport: Option<String>,
}

/// A problem with a configuration file: which file, which key, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", file.display())]
pub struct ConfigError {
    /// The `.lsp.json` it is about.
    pub file: PathBuf,
    /// What is wrong, naming the key.
    pub message: String,
}

/// What was found: the servers (project first, then user; the first of a name wins) and
/// the problems, one per bad file or entry.
#[derive(Debug, Default, Clone)]
pub struct LspConfig {
    /// The servers read, project first.
    pub servers: Vec<ServerConfig>,
    /// Files or entries that could not be read.
    pub errors: Vec<ConfigError>,
    /// Set when the project's `.lsp.json` exists but the folder is not trusted.
    pub ignored_untrusted: Option<PathBuf>,
}

impl LspConfig {
    /// Reads `<project>/.lsp.json` (only when `trusted`) and `<home>/.qwen/.lsp.json`.
    pub fn load(project: Option<&Path>, home: Option<&Path>, trusted: bool) -> LspConfig {
        let mut config = LspConfig::default();
        if let Some(root) = project {
            let file = root.join(".lsp.json");
            if file.is_file() {
                if trusted {
                    config.read_file(&file, root);
                } else {
                    config.ignored_untrusted = Some(file);
                }
            }
        }
        if let Some(home) = home {
            let file = home.join(".qwen").join(".lsp.json");
            if file.is_file() {
                // A user server works on the session's project, so relative
                // `workspaceFolder`s are taken against it (or the home without one).
                config.read_file(&file, project.unwrap_or(home));
            }
        }
        config
    }

    fn read_file(&mut self, file: &Path, base: &Path) {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => return self.error(file, format!("cannot read it: {e}")),
        };
        let (servers, errors) = parse_entries(&text, file, base);
        self.errors.extend(errors);
        for server in servers {
            if !self.servers.iter().any(|s| s.name == server.name) {
                self.servers.push(server);
            }
        }
    }

    fn error(&mut self, file: &Path, message: String) {
        self.errors.push(ConfigError {
            file: file.to_path_buf(),
            message,
        });
    }
}

/// Parses the text of one `.lsp.json`. `base` is what a relative `workspaceFolder` is
/// taken against.
pub fn parse(text: &str, file: &Path, base: &Path) -> Result<Vec<ServerConfig>, ConfigError> {
    let (servers, mut errors) = parse_entries(text, file, base);
    match errors.is_empty() {
        true => Ok(servers),
        false => Err(errors.remove(0)),
    }
}

/// Parses each entry on its own: a bad entry is an error naming its key, and the others
/// still load.
pub(crate) fn parse_entries(
    text: &str,
    file: &Path,
    base: &Path,
) -> (Vec<ServerConfig>, Vec<ConfigError>) {
    let err = |message: String| ConfigError {
        file: file.to_path_buf(),
        message,
    };
    // In the file's order: the first server that covers an extension answers for it.
    let top: serde_json::Map<String, Value> = match serde_json::from_str(text) {
        Ok(top) => top,
        Err(e) => return (Vec::new(), vec![err(format!("not a JSON object: {e}"))]),
    };
    let mut servers = Vec::new();
    let mut errors = Vec::new();
    for (name, value) in top {
        let mut track = serde_path_to_error::Track::new();
        let raw = RawServer::deserialize(serde_path_to_error::Deserializer::new(value, &mut track))
            .map_err(|e| {
                let path = track.path().to_string();
                let at = if path == "." || path.is_empty() {
                    format!("`{name}`")
                } else {
                    format!("`{name}.{path}`")
                };
                format!("{at}: {e}")
            });
        match raw.and_then(|raw| check(name, raw, file, base)) {
            Ok(server) => servers.push(server),
            Err(message) => errors.push(err(message)),
        }
    }
    (servers, errors)
}

fn check(name: String, raw: RawServer, file: &Path, base: &Path) -> Result<ServerConfig, String> {
    if raw.command.trim().is_empty() {
        return Err(format!("`{name}.command` is empty"));
    }
    if let Some(t) = raw.transport.as_deref()
        && t != "stdio"
    {
        return Err(format!(
            "`{name}.transport` is `{t}`; toolbelt talks to language servers over stdio only"
        ));
    }
    let mut extension_to_language = BTreeMap::new();
    for (ext, lang) in raw.extension_to_language {
        let ext = ext.to_ascii_lowercase();
        let ext = if ext.starts_with('.') {
            ext
        } else {
            format!(".{ext}")
        };
        extension_to_language.insert(ext, lang);
    }
    if extension_to_language.is_empty() {
        return Err(format!(
            "`{name}.extensionToLanguage` is missing or empty; name the file extensions the server covers (\".py\": \"python\")"
        ));
    }
    let workspace_folder = match raw.workspace_folder {
        None => None,
        Some(w) => {
            let p = toolbelt_core::workspace::normalize_lexically(&base.join(&w));
            // As Qwen Code requires: a server works inside the project, never on the
            // home or the whole disk.
            if !p.starts_with(base) {
                return Err(format!(
                    "`{name}.workspaceFolder` ({w}) is outside the project ({}); it must be a folder inside it",
                    base.display()
                ));
            }
            Some(p)
        }
    };
    let ms = |v: Option<u64>, default: u64, key: &str| -> Result<Duration, String> {
        match v.unwrap_or(default) {
            0 => Err(format!("`{name}.{key}` must be more than 0 milliseconds")),
            n => Ok(Duration::from_millis(n)),
        }
    };
    let _ = file;
    Ok(ServerConfig {
        command: raw.command,
        args: raw.args,
        env: raw.env,
        extension_to_language,
        initialization_options: raw.initialization_options,
        settings: raw.settings,
        workspace_folder,
        startup_timeout: ms(raw.startup_timeout, 10_000, "startupTimeout")?,
        shutdown_timeout: ms(raw.shutdown_timeout, 5_000, "shutdownTimeout")?,
        request_timeout: ms(raw.request_timeout, 30_000, "requestTimeout")?,
        restart_on_crash: raw.restart_on_crash,
        max_restarts: raw.max_restarts.unwrap_or(3),
        source: file.to_path_buf(),
        name,
    })
}

/// The files a server's command names (its program when given as a path, and arguments
/// that are existing files relative to `base`): protected configuration, since toolbelt
/// runs them without asking.
pub fn command_files(server: &ServerConfig, base: &Path) -> Vec<PathBuf> {
    std::iter::once(&server.command)
        .chain(&server.args)
        .map(|w| base.join(w))
        .filter(|p| p.is_file())
        .collect()
}

#[cfg(test)]
mod tests;
