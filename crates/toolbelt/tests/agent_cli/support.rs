//! Running the binary in a temp workspace.

use std::path::PathBuf;
use std::process::Stdio;

use serde_json::Value;
use tokio::io::AsyncWriteExt;

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub struct Workspace {
    pub dir: tempfile::TempDir,
}

impl Workspace {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws/src")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Workspace { dir }
    }

    /// The agent's working directory (canonical, as the tools report paths).
    pub fn ws(&self) -> PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.ws().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub fn script(&self, lines: &[Value]) -> PathBuf {
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        let path = self.dir.path().join("script.jsonl");
        std::fs::write(&path, text.join("\n")).unwrap();
        path
    }

    pub async fn run(&self, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Run {
        let mut cmd = self.command(args, env);
        if stdin.is_some() {
            cmd.stdin(Stdio::piped());
        }
        let mut child = cmd.spawn().unwrap();
        if let Some(text) = stdin {
            let mut pipe = child.stdin.take().unwrap();
            pipe.write_all(text.as_bytes()).await.unwrap();
        }
        wait(child).await
    }

    /// The binary with a clean environment, in the workspace, stdin closed, output piped.
    pub fn command(&self, args: &[&str], env: &[(&str, &str)]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolbelt"));
        cmd.args(args)
            .current_dir(self.ws())
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_MODEL")
            // The provider is inferred from these when no OPENAI_* variable is set.
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove("ANTHROPIC_MODEL")
            .env_remove("MAX_THINKING_TOKENS")
            .env_remove("GEMINI_API_KEY")
            .env_remove("GOOGLE_API_KEY")
            .env_remove("GOOGLE_GEMINI_BASE_URL")
            .env_remove("GEMINI_MODEL")
            .env("HOME", self.dir.path().join("home"))
            .env("TOOLBELT_HOME", self.dir.path().join("tbhome"))
            .env(
                "TOOLBELT_SYSTEM_SETTINGS_PATH",
                self.dir.path().join("none.json"),
            )
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }
}

/// Waits for the binary, bounded so a hang fails the test.
pub async fn wait(child: tokio::process::Child) -> Run {
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("toolbelt hung")
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The `result` message of `-o json` output (an array of the SDK protocol's messages).
pub fn json_result(stdout: &str) -> Value {
    let v: Value = serde_json::from_str(stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .find(|m| m["type"] == "result")
        .cloned()
        .unwrap_or_else(|| panic!("no result message in {stdout}"))
}
