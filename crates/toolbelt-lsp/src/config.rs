//! The language servers of a session: `.lsp.json` in the project and the user's home, in
//! the layout Qwen Code and Claude Code plugins use (a language name per top-level key,
//! its server as the value), and `lsp.servers` in the settings, in the same layout.
//!
//! The project's file is read only in a trusted folder: a server is a program toolbelt
//! starts by itself, so a cloned repository must not be able to name one (the settings
//! drop a workspace file's `lsp.servers` for the same reason, in
//! `toolbelt_config::settings`). The user's file (`~/.qwen/.lsp.json`) is always read. A
//! bad file is an error that names the file and the key, so the person can fix it; it
//! never silently drops a server.
//!
//! A server over TCP must listen on this machine unless the person's own file (the
//! user's `.lsp.json`, the user or system settings) names it: a project's file must not
//! make toolbelt connect to, and send the project's code to, another machine.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use toolbelt_config::{settings::LspServerSettings, settings::LspTransport, settings::Millis};
use toolbelt_config::{settings::Settings, settings::SettingsLayer};

/// Who wrote the file a server comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigOwner {
    /// The project (its `.lsp.json`, its `.qwen/settings.json`): trusted to start
    /// programs once the folder is, never to reach another machine.
    Project,
    /// The person (`~/.qwen/.lsp.json`, the user or system settings).
    Person,
}

/// How toolbelt talks to a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// The server's stdin and stdout.
    Stdio,
    /// A TCP connection.
    Tcp {
        /// The host (checked to be loopback for a project's server).
        host: String,
        /// The port.
        port: u16,
    },
    /// A Unix socket.
    Unix(PathBuf),
}

/// One configured language server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The key that names it (`python`, `typescript`).
    pub name: String,
    /// The file it came from (named in errors and in `lsp list`).
    pub source: PathBuf,
    /// Where it is in that file, as messages name it (`python`, `lsp.servers.python`).
    pub key: String,
    /// Whether a project's file or the person's own defined it.
    pub owner: ConfigOwner,
    /// The program to start (found on `PATH`); `None` for a socket server that already
    /// listens.
    pub command: Option<String>,
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
    /// How long the start may take: the process, the connection, `initialize`, and the
    /// project's loading before the first answer (`startupTimeout`).
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
    /// Pipes or a socket.
    pub transport: Transport,
}

impl ServerConfig {
    /// The language id of `path` if this server covers its extension.
    pub fn language_of(&self, path: &Path) -> Option<&str> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        self.extension_to_language
            .get(&format!(".{ext}"))
            .map(String::as_str)
    }

    /// The command line as a person reads it, or where it connects.
    pub fn describe(&self) -> String {
        let mut words: Vec<&str> = self.command.iter().map(String::as_str).collect();
        words.extend(self.args.iter().map(String::as_str));
        let run = words.join(" ");
        match (&self.transport, run.is_empty()) {
            (Transport::Stdio, _) => run,
            (Transport::Tcp { host, port }, true) => format!("connects to {host}:{port}"),
            (Transport::Unix(path), true) => format!("connects to {}", path.display()),
            (Transport::Tcp { host, port }, false) => {
                format!("{run}, then connects to {host}:{port}")
            }
            (Transport::Unix(path), false) => format!("{run}, then connects to {}", path.display()),
        }
    }
}

/// A problem with a configuration file: which file, which key, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", file.display())]
pub struct ConfigError {
    /// The file it is about.
    pub file: PathBuf,
    /// What is wrong, naming the key.
    pub message: String,
}

/// What was found: the servers (project first, then the settings, then the user's
/// `.lsp.json`; the first of a name wins) and the problems, one per bad file or entry.
#[derive(Debug, Default, Clone)]
pub struct LspConfig {
    /// The servers read, in order.
    pub servers: Vec<ServerConfig>,
    /// Files or entries that could not be read.
    pub errors: Vec<ConfigError>,
    /// Set when the project's `.lsp.json` exists but the folder is not trusted.
    pub ignored_untrusted: Option<PathBuf>,
}

/// Where one file's servers come from: the file, who wrote it, and what a relative
/// `workspaceFolder` or socket path is taken against.
struct Origin<'a> {
    file: &'a Path,
    owner: ConfigOwner,
    base: &'a Path,
    /// Put before a server's name in messages (`lsp.servers.`).
    prefix: &'a str,
}

impl LspConfig {
    /// Reads `<project>/.lsp.json` (only when `trusted`), the servers of `settings`
    /// (`lsp.servers`) and `<home>/.qwen/.lsp.json`.
    pub fn load(
        project: Option<&Path>,
        home: Option<&Path>,
        trusted: bool,
        settings: &Settings,
    ) -> LspConfig {
        let mut config = LspConfig::default();
        // A user's server works on the session's project, so relative paths are taken
        // against it (or the home without one).
        let base = project.or(home).unwrap_or(Path::new("/"));
        if let Some(root) = project {
            let file = root.join(".lsp.json");
            if file.is_file() {
                if trusted {
                    config.read_file(&file, ConfigOwner::Project, root);
                } else {
                    config.ignored_untrusted = Some(file);
                }
            }
        }
        config.read_settings(settings, base);
        if let Some(home) = home {
            let file = home.join(".qwen").join(".lsp.json");
            if file.is_file() {
                config.read_file(&file, ConfigOwner::Person, base);
            }
        }
        config
    }

    fn read_file(&mut self, file: &Path, owner: ConfigOwner, base: &Path) {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                return self.errors.push(ConfigError {
                    file: file.to_path_buf(),
                    message: format!("cannot read it: {e}"),
                });
            }
        };
        let origin = Origin {
            file,
            owner,
            base,
            prefix: "",
        };
        let (servers, errors) = parse_entries(&text, &origin);
        self.errors.extend(errors);
        self.add(servers);
    }

    /// `lsp.servers`: each entry from the file the settings took it from (their types
    /// were checked when the settings were read).
    fn read_settings(&mut self, settings: &Settings, base: &Path) {
        let mut servers = Vec::new();
        for (name, raw) in &settings.lsp.servers {
            let (owner, file) = match settings.origin(&["lsp", "servers", name]) {
                Some((SettingsLayer::Workspace, file)) => (ConfigOwner::Project, file),
                Some((_, file)) => (ConfigOwner::Person, file),
                // Settings an embedder built: the person's.
                None => (ConfigOwner::Person, Path::new("settings")),
            };
            let origin = Origin {
                file,
                owner,
                base,
                prefix: "lsp.servers.",
            };
            match check(name.clone(), raw.clone(), &origin) {
                Ok(server) => servers.push(server),
                Err(message) => self.errors.push(ConfigError {
                    file: file.to_path_buf(),
                    message,
                }),
            }
        }
        self.add(servers);
    }

    fn add(&mut self, servers: Vec<ServerConfig>) {
        for server in servers {
            if !self.servers.iter().any(|s| s.name == server.name) {
                self.servers.push(server);
            }
        }
    }
}

/// Parses the text of a project's `.lsp.json`. `base` is what a relative
/// `workspaceFolder` or socket path is taken against.
pub fn parse(text: &str, file: &Path, base: &Path) -> Result<Vec<ServerConfig>, ConfigError> {
    let origin = Origin {
        file,
        owner: ConfigOwner::Project,
        base,
        prefix: "",
    };
    let (servers, mut errors) = parse_entries(text, &origin);
    match errors.is_empty() {
        true => Ok(servers),
        false => Err(errors.remove(0)),
    }
}

/// Parses each entry on its own: a bad entry is an error naming its key, and the others
/// still load.
fn parse_entries(text: &str, origin: &Origin<'_>) -> (Vec<ServerConfig>, Vec<ConfigError>) {
    let err = |message: String| ConfigError {
        file: origin.file.to_path_buf(),
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
        let raw = LspServerSettings::deserialize(serde_path_to_error::Deserializer::new(
            value, &mut track,
        ))
        .map_err(|e| {
            let path = track.path().to_string();
            let at = if path == "." || path.is_empty() {
                format!("`{name}`")
            } else {
                format!("`{name}.{path}`")
            };
            format!("{at}: {e}")
        });
        match raw.and_then(|raw| check(name, raw, origin)) {
            Ok(server) => servers.push(server),
            Err(message) => errors.push(err(message)),
        }
    }
    (servers, errors)
}

fn check(
    name: String,
    raw: LspServerSettings,
    origin: &Origin<'_>,
) -> Result<ServerConfig, String> {
    let key = format!("{}{name}", origin.prefix);
    let command = raw.command.clone().filter(|c| !c.trim().is_empty());
    let transport = transport(&key, &raw, command.is_some(), origin)?;
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
            "`{key}.extensionToLanguage` is missing or empty; name the file extensions the server covers (\".py\": \"python\")"
        ));
    }
    let workspace_folder = match raw.workspace_folder {
        None => None,
        Some(w) => {
            let p = toolbelt_core::normalize_lexically(&origin.base.join(&w));
            // As Qwen Code requires: a server works inside the project, never on the
            // home or the whole disk.
            if !p.starts_with(origin.base) {
                return Err(format!(
                    "`{key}.workspaceFolder` ({w}) is outside the project ({}); it must be a folder inside it",
                    origin.base.display()
                ));
            }
            Some(p)
        }
    };
    let ms = |v: Option<Millis>, default: u64, field: &str| -> Result<Duration, String> {
        match v.map_or(default, |m| m.0) {
            0 => Err(format!("`{key}.{field}` must be more than 0 milliseconds")),
            n => Ok(Duration::from_millis(n)),
        }
    };
    Ok(ServerConfig {
        command,
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
        transport,
        source: origin.file.to_path_buf(),
        owner: origin.owner,
        key,
        name,
    })
}

/// The transport and where it connects, checked: a stdio server needs a command, a TCP
/// one a port (and, from a project's file, a loopback host), a Unix one a path.
fn transport(
    key: &str,
    raw: &LspServerSettings,
    has_command: bool,
    origin: &Origin<'_>,
) -> Result<Transport, String> {
    let socket = raw.socket.clone().unwrap_or_default();
    match raw.transport {
        LspTransport::Stdio => {
            if !has_command {
                return Err(format!(
                    "`{key}.command` is missing or empty; a stdio server is a program toolbelt starts"
                ));
            }
            if raw.socket.is_some() {
                return Err(format!(
                    "`{key}.socket` is set but `{key}.transport` is stdio; write \"transport\": \"tcp\" or \"socket\""
                ));
            }
            Ok(Transport::Stdio)
        }
        LspTransport::Tcp => {
            if socket.path.is_some() {
                return Err(format!(
                    "`{key}.socket.path` is for \"transport\": \"socket\"; a TCP server takes `host` and `port`"
                ));
            }
            let Some(port) = socket.port.filter(|p| *p != 0) else {
                return Err(format!(
                    "`{key}.socket.port` is missing; a TCP server needs {{\"host\": \"127.0.0.1\", \"port\": N}}"
                ));
            };
            let host = socket.host.unwrap_or_else(|| "127.0.0.1".into());
            let host = host.trim().to_string();
            if origin.owner == ConfigOwner::Project && !is_loopback_name(&host) {
                return Err(format!(
                    "`{key}.socket.host` is {host}: a project's file may only name this machine (127.0.0.1, ::1, localhost); a server elsewhere belongs in your own ~/.qwen/.lsp.json or user settings"
                ));
            }
            Ok(Transport::Tcp { host, port })
        }
        LspTransport::Socket => {
            if socket.host.is_some() || socket.port.is_some() {
                return Err(format!(
                    "`{key}.socket` names a host or port; a Unix socket takes `path` (or write \"transport\": \"tcp\")"
                ));
            }
            match socket.path.filter(|p| !p.trim().is_empty()) {
                Some(path) => Ok(Transport::Unix(origin.base.join(path))),
                None => Err(format!(
                    "`{key}.socket.path` is missing; a Unix socket server needs {{\"path\": \"...\"}}"
                )),
            }
        }
    }
}

/// Whether `host` names this machine by itself: `localhost` or a loopback address.
pub(crate) fn is_loopback_name(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The files a server's command names (its program when given as a path, and arguments
/// that are existing files relative to `base`): protected configuration, since toolbelt
/// runs them without asking.
pub fn command_files(server: &ServerConfig, base: &Path) -> Vec<PathBuf> {
    server
        .command
        .iter()
        .chain(&server.args)
        .map(|w| base.join(w))
        .filter(|p| p.is_file())
        .collect()
}

#[cfg(test)]
mod tests;
