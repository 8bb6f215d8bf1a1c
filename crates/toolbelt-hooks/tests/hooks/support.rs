//! Settings files in a temporary home and project, hook scripts, and a real HTTP server
//! on 127.0.0.1.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use toolbelt_config::{
    settings::Settings, settings::SettingsLayer, settings::SettingsPaths, settings::WorkspaceTrust,
};
use toolbelt_engine::{
    hooks::HookEvent, hooks::HookOutcome, hooks::HookRequest, hooks::HookRunner,
};
use toolbelt_hooks::{HookConfig, HookEngine, SessionInfo};

/// A home (`~/.qwen`, `~/.claude`) and a project (`.qwen`, `.claude`) of their own.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    pub trusted: bool,
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        for d in [".qwen", ".claude"] {
            std::fs::create_dir_all(home.join(d)).unwrap();
            std::fs::create_dir_all(project.join(d)).unwrap();
        }
        Fixture {
            _dir: dir,
            home: home.canonicalize().unwrap(),
            project: project.canonicalize().unwrap(),
            trusted: true,
        }
    }

    pub fn user_file(&self) -> PathBuf {
        self.home.join(".qwen/settings.json")
    }

    pub fn project_file(&self) -> PathBuf {
        self.project.join(".qwen/settings.json")
    }

    /// Writes a settings file.
    pub fn write(&self, file: &Path, value: &Value) {
        std::fs::write(file, serde_json::to_string_pretty(value).unwrap()).unwrap();
    }

    /// Writes `hooks` into the user's settings.
    pub fn user_hooks(&self, hooks: Value) {
        self.write(&self.user_file(), &json!({ "hooks": hooks }));
    }

    /// An executable script in the project (`#!/bin/bash` unless `body` has its own line).
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.project.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        let text = if body.starts_with("#!") {
            body.to_string()
        } else {
            format!("#!/bin/bash\n{body}\n")
        };
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    pub fn paths(&self) -> SettingsPaths {
        let trust = if self.trusted {
            WorkspaceTrust::Trusted
        } else {
            WorkspaceTrust::FromFolders {
                project: self.project.clone(),
                trusted_folders: None,
            }
        };
        SettingsPaths {
            user: Some(self.user_file()),
            workspace: Some(self.project_file()),
            system: None,
            trust,
            claude_hooks: vec![
                (
                    SettingsLayer::Workspace,
                    self.project.join(".claude/settings.json"),
                ),
                (
                    SettingsLayer::Workspace,
                    self.project.join(".claude/settings.local.json"),
                ),
                (SettingsLayer::User, self.home.join(".claude/settings.json")),
            ],
        }
    }

    pub fn settings(&self) -> Settings {
        Settings::load(&self.paths()).unwrap()
    }

    /// The engine of the settings (which must be without errors).
    pub fn engine(&self) -> HookEngine {
        let settings = self.settings();
        let config = HookConfig::from_settings(&settings).unwrap();
        HookEngine::new(
            config,
            self.session(),
            settings.security.allowed_http_hook_urls.clone(),
        )
    }

    pub fn session(&self) -> SessionInfo {
        SessionInfo {
            session_id: "session-1".into(),
            transcript_path: Some(self.project.join("transcript.jsonl")),
            cwd: self.project.clone(),
        }
    }
}

/// A PreToolUse request for the shell tool with `command`.
pub fn shell_call(command: &str) -> HookRequest {
    let mut request = HookRequest::new(HookEvent::PreToolUse)
        .field("tool_name", "run_shell_command")
        .field("tool_input", json!({ "command": command }))
        .field("tool_use_id", "call-1");
    request.target = Some("run_shell_command".into());
    request.aliases = vec!["Bash".into(), "Shell".into()];
    request.permission_mode = Some("default".into());
    request
}

/// Runs the request's hooks to their end.
pub async fn run(engine: &HookEngine, request: HookRequest) -> HookOutcome {
    engine.run(request, CancellationToken::new()).await
}

/// A command hook group for `event` with `matcher`.
pub fn command_group(matcher: &str, command: &str) -> Value {
    json!({"matcher": matcher, "hooks": [{"type": "command", "command": command}]})
}

/// One request as the HTTP server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub head: String,
    pub body: Value,
}

impl Seen {
    /// A header's value (names compared without case).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }
}

/// An HTTP/1.1 server on 127.0.0.1 that answers every request with `status`,
/// `content_type` and `body`, and keeps what it was sent.
pub struct Server {
    pub port: u16,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub async fn start(status: u16, content_type: &'static str, body: String) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let kept = kept.clone();
                let body = body.clone();
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut stream).await else {
                        return;
                    };
                    kept.lock().unwrap().push(request);
                    let reply = format!(
                        "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(reply.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Server { port, seen }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&data).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let head = text[..end].to_string();
            let length: usize = head
                .lines()
                .find_map(|l| {
                    let (n, v) = l.split_once(':')?;
                    n.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            if data.len() >= end + 4 + length {
                let body =
                    serde_json::from_slice(&data[end + 4..end + 4 + length]).unwrap_or(Value::Null);
                return Some(Seen { head, body });
            }
        }
    }
}
