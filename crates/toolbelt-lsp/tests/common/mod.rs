//! What the tests share: a workspace in a temporary directory, the tool over it, a call.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use toolbelt_config::settings::Settings;
use toolbelt_core::{ExecContext, Tool, ToolEnvironment, ToolResult, WorkspaceRoots};
use toolbelt_lsp::{LspTool, ServerConfig, Servers};

pub struct Workspace {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub env: Arc<ToolEnvironment>,
}

impl Workspace {
    pub fn new() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project").canonicalize_or_create();
        let roots = WorkspaceRoots::new([&root]).unwrap();
        let env = ToolEnvironment::new(
            roots,
            Arc::new(Settings::default()),
            dir.path().join("session"),
        );
        Workspace {
            dir,
            root,
            env: Arc::new(env),
        }
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The servers of `.lsp.json` text, and the tool over them.
    pub fn tool(&self, lsp_json: &str) -> (LspTool, Arc<Servers>) {
        let configs: Vec<ServerConfig> =
            toolbelt_lsp::parse_lsp_json(lsp_json, &self.root.join(".lsp.json"), &self.root)
                .unwrap();
        let servers = Arc::new(Servers::new(configs, self.root.clone()));
        (LspTool::new(self.env.clone(), servers.clone()), servers)
    }
}

trait CanonicalizeOrCreate {
    fn canonicalize_or_create(&self) -> PathBuf;
}

impl CanonicalizeOrCreate for PathBuf {
    fn canonicalize_or_create(&self) -> PathBuf {
        std::fs::create_dir_all(self).unwrap();
        self.canonicalize().unwrap()
    }
}

/// Runs one call. The tests name files relative to the project; the tool takes
/// absolute paths (the workspace's path policy), so they are joined here.
pub async fn call(tool: &LspTool, ws: &Workspace, mut args: Value) -> ToolResult {
    if let Some(rel) = args["filePath"].as_str()
        && !rel.starts_with('/')
    {
        args["filePath"] = Value::String(ws.root.join(rel).to_string_lossy().into_owned());
    }
    let env = &ws.env;
    let invocation = match tool.build(args) {
        Ok(i) => i,
        Err(e) => return ToolResult::error(e),
    };
    invocation.execute(ExecContext::new(env.clone())).await
}

/// Whether any process of group `pgid` can still run.
pub fn group_alive(pgid: u32) -> bool {
    !toolbelt_process::live_members(pgid).is_empty()
}

pub fn read_pid(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A server `scripts/setup.sh` installs under `.cache/lsp/node_modules/.bin` (pyright,
/// typescript-language-server), or `None`: the test is then skipped, except in CI,
/// where setup.sh must have installed it.
pub fn npm_server(bin: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../.cache/lsp/node_modules/.bin")
        .join(bin);
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{bin} is missing: run scripts/setup.sh (it installs {})",
        path.display()
    );
    eprintln!("skipped: {bin} is not installed (run scripts/setup.sh)");
    None
}

/// `pyright-langserver` from `.cache/lsp` (see [`npm_server`]).
pub fn pyright() -> Option<PathBuf> {
    npm_server("pyright-langserver")
}

/// clangd on `PATH` (Debian's package), or `None` outside CI.
pub fn clangd() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    if let Some(bin) = std::env::split_paths(&path)
        .map(|d| d.join("clangd"))
        .find(|p| p.is_file())
    {
        return Some(bin);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "clangd is missing: apt-get install clangd"
    );
    eprintln!("skipped: clangd is not installed (apt-get install clangd)");
    None
}

/// The `.lsp.json` text of one server named `name` covering `extensions` (`".py":
/// "python"` pairs), with a startup timeout that a loaded machine can meet.
pub fn lsp_json(name: &str, command: &Path, args: &[&str], extensions: &[(&str, &str)]) -> String {
    let extensions: serde_json::Map<String, Value> = extensions
        .iter()
        .map(|(e, l)| (e.to_string(), Value::String(l.to_string())))
        .collect();
    serde_json::json!({name: {
        "command": command, "args": args,
        "extensionToLanguage": extensions,
        "startupTimeout": 60000
    }})
    .to_string()
}

/// Runs one call that must succeed and returns its text.
pub async fn ok(ws: &Workspace, tool: &LspTool, args: Value) -> String {
    let result = call(tool, ws, args.clone()).await;
    let text = result.llm_text();
    assert!(!result.is_error(), "{args}: {text}");
    text
}
