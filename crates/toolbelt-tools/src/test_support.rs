//! A workspace in a temporary directory, an environment over it, and a registry with
//! every built-in tool: what tool tests share.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use toolbelt_config::settings::Settings;
use toolbelt_core::{
    ConfirmationDetails, ErrorKind, ExecContext, Invocation, OutputPolicy, ToolEnvironment,
    ToolError, ToolResult, WorkspaceRoots,
};
use toolbelt_engine::{registry::ToolRegistry, rules::PermissionRules, rules::RuleList};

pub(crate) struct Fixture {
    pub dir: tempfile::TempDir,
    pub env: Arc<ToolEnvironment>,
    registry: ToolRegistry,
}

pub(crate) fn fixture() -> Fixture {
    fixture_with(25_000, 1_000, Settings::default())
}

/// A workspace of two directories, `ws` and `ws2`.
pub(crate) fn fixture_two_roots() -> Fixture {
    build(25_000, 1_000, Settings::default(), &["ws", "ws2"], &[])
}

pub(crate) fn fixture_with(max_chars: usize, max_lines: usize, settings: Settings) -> Fixture {
    build(max_chars, max_lines, settings, &["ws"], &[])
}

/// A workspace whose permission rules are `rules`, path rules anchored at `ws` (as the
/// binary anchors them at the primary workspace directory).
pub(crate) fn fixture_with_rules(rules: &[(RuleList, &str)]) -> Fixture {
    build(25_000, 1_000, Settings::default(), &["ws"], rules)
}

fn build(
    max_chars: usize,
    max_lines: usize,
    settings: Settings,
    roots: &[&str],
    rules: &[(RuleList, &str)],
) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    for root in roots {
        std::fs::create_dir(dir.path().join(root)).unwrap();
    }
    std::fs::create_dir(dir.path().join("outside")).unwrap();
    let roots = WorkspaceRoots::new(roots.iter().map(|r| dir.path().join(r))).unwrap();
    let mut permission_rules =
        PermissionRules::new(&crate::rule_vocabulary()).with_base(roots.primary().unwrap(), None);
    for (list, text) in rules {
        permission_rules.add(*list, text);
    }
    let roots = roots.with_path_policy(permission_rules.path_policy());
    let mut env = ToolEnvironment::new(roots, Arc::new(settings), dir.path().join("session"));
    env.output = OutputPolicy::new(max_chars, max_lines, dir.path().join("spill"));
    // The person's home is the fixture's too: `save_memory` with the global scope
    // writes there, never to the real `~/.qwen`.
    env.user_home = Some(dir.path().join("home"));
    let env = Arc::new(env);
    let mut registry = ToolRegistry::new();
    crate::register_builtins(&mut registry, &env);
    Fixture { dir, env, registry }
}

impl Fixture {
    /// The same workspace with another environment (the built-in registry keeps the old).
    pub(crate) fn with_env(mut self, env: ToolEnvironment) -> Fixture {
        self.env = Arc::new(env);
        self
    }

    /// The same workspace with other settings (the built-in registry keeps the old).
    pub(crate) fn with_settings(mut self, settings: Settings) -> Fixture {
        let mut env = (*self.env).clone();
        env.settings = Arc::new(settings);
        self.env = Arc::new(env);
        self
    }

    /// The workspace root, resolved.
    pub(crate) fn ws(&self) -> PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }
    /// A directory beside the workspace, outside it.
    pub(crate) fn outside(&self) -> PathBuf {
        self.dir.path().join("outside").canonicalize().unwrap()
    }
    /// Writes a file under the workspace and returns its absolute path.
    pub(crate) fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) -> String {
        let p = self.ws().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p.to_str().unwrap().to_string()
    }
    pub(crate) fn path(&self, rel: &str) -> String {
        self.ws().join(rel).to_str().unwrap().to_string()
    }
    pub(crate) fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.ws().join(rel)).unwrap()
    }
    /// The registry of every built-in tool over this workspace.
    pub(crate) fn registry(&self) -> &ToolRegistry {
        &self.registry
    }
    pub(crate) fn build(&self, tool: &str, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        self.registry.build(tool, args).map(|(_, call)| call)
    }
    /// Builds, asks for confirmation (approving it) and executes, as the CLI does with
    /// `--yes`.
    pub(crate) async fn call(&self, tool: &str, args: Value) -> ToolResult {
        self.call_confirmed(tool, args).await.0
    }
    pub(crate) async fn call_confirmed(
        &self,
        tool: &str,
        args: Value,
    ) -> (ToolResult, Option<ConfirmationDetails>) {
        match self.build(tool, args) {
            Ok(call) => {
                let details = call.confirmation().await;
                // What asked is approved; what did not runs unasked, as in a scheduler.
                let mut ctx = ExecContext::new(self.env.clone());
                if details.is_some() {
                    ctx = ctx.approved();
                }
                let result = call.execute(ctx).await;
                (result, details)
            }
            Err(e) => (ToolResult::error(e), None),
        }
    }
}

pub(crate) fn err_kind(r: &ToolResult) -> Option<ErrorKind> {
    r.error.as_ref().map(|e| e.kind)
}

impl Fixture {
    /// Every registered tool name with the names and JSON types of its parameters.
    pub(crate) fn tools_and_parameters(&self) -> Vec<(String, Vec<(String, String)>)> {
        self.registry
            .all()
            .map(|r| {
                let params = r.tool.parameter_schema()["properties"]
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .map(|(name, schema)| {
                                let kind = schema["type"].as_str().unwrap_or("string");
                                (name.clone(), kind.to_string())
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                (r.name.to_string(), params)
            })
            .collect()
    }
}

/// Runs git in `dir` (a test's own repository); panics with what git said on failure.
pub(crate) fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Makes `dir` a repository on branch `main` with one commit (`README.md`), its own
/// author and no signing, so nothing of the machine's git configuration matters.
pub(crate) fn git_repo(dir: &std::path::Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.name", "Test"]);
    git(dir, &["config", "user.email", "test@example.com"]);
    git(dir, &["config", "commit.gpgsign", "false"]);
    std::fs::write(dir.join("README.md"), "hello\n").unwrap();
    git(dir, &["add", "README.md"]);
    git(dir, &["commit", "-q", "-m", "first"]);
}
