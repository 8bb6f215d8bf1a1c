#![allow(clippy::too_many_lines)]
//! `toolbelt mcp serve` with real third-party MCP clients:
//!
//! - the official Python SDK (`mcp`, driven by `tests/fixtures/mcp_clients/python_client.py`)
//!   in both protocol eras: `ClientSession` with the `initialize` handshake, and the
//!   high-level `mcp.Client` on the 2026-07-28 revision (pinned, or found through
//!   `server/discover`), whose roots and confirmations come in rounds (`input_required`).
//!   Over stdio, with the workspace as its root, an elicitation callback that accepts,
//!   declines, cancels or accepts "always", and without elicitation (the refusal, then its
//!   advice followed); over Streamable HTTP (`--http 127.0.0.1:0`, with sessions, without
//!   them in 2026-07-28, and `--stateless`, which cannot ask and says so);
//! - the MCP Inspector CLI (`@modelcontextprotocol/inspector --cli`), which has no
//!   elicitation: over stdio in yolo mode it calls read_file, grep_search, edit and
//!   run_shell_command; in default mode its edit is refused; over Streamable HTTP it lists
//!   and reads; and in each `--protocol-era` (legacy, modern) over stdio and HTTP it
//!   negotiates that era, lists and calls.
//!
//! `scripts/setup.sh` installs both into `.cache/`; where one is missing its tests say so
//! and pass, except under `CI`, where they fail. Each test runs the real binary in a temp
//! workspace with HOME and TOOLBELT_HOME inside the temp dir, and asserts on what the
//! client saw (the JSON the Python client prints, the Inspector's `--format json` result)
//! and on the files on disk.

// Test helpers outside #[test] functions may unwrap: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

/// How long one client run may take, start-up of the interpreter included (the Python SDK
/// takes seconds to import on a loaded machine).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(180);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn toolbelt() -> &'static str {
    env!("CARGO_BIN_EXE_toolbelt")
}

/// A client that `scripts/setup.sh` installs, or why it is not there. Outside CI a missing
/// client skips the test with the reason printed; under CI it fails the test.
fn available<T>(what: &str, found: Result<T, String>) -> Option<T> {
    match found {
        Ok(found) => Some(found),
        Err(why) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{what} is not available and CI must run this test ({why}); scripts/setup.sh \
                 installs it"
            );
            eprintln!("skipped: {what} is not available: {why}");
            None
        }
    }
}

/// The virtualenv's Python with the `mcp` package.
fn python() -> Result<PathBuf, String> {
    let python = repo_root().join(".cache/python/bin/python");
    if !python.exists() {
        return Err(format!(
            "{} is missing (scripts/setup.sh creates it when python3 is available)",
            python.display()
        ));
    }
    Ok(python)
}

/// Node 22 and the Inspector's launcher script.
fn inspector() -> Result<(PathBuf, PathBuf), String> {
    let dir = repo_root().join(".cache/node22/node_modules");
    let node = dir.join(".bin/node");
    let launcher = dir.join("@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    for path in [&node, &launcher] {
        if !path.exists() {
            return Err(format!(
                "{} is missing (scripts/setup.sh installs it when npm is available)",
                path.display()
            ));
        }
    }
    Ok((node, launcher))
}

fn client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_clients/python_client.py")
}

struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Workspace { dir }
    }

    /// The server's working directory and so its workspace (canonical, as tools report
    /// paths).
    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }

    fn path(&self, rel: &str) -> String {
        self.ws().join(rel).to_string_lossy().into_owned()
    }

    fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.ws().join(rel), text).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.ws().join(rel)).unwrap()
    }

    /// What isolates toolbelt from the machine's settings: HOME and TOOLBELT_HOME in the
    /// temp dir, no system settings. Given to the client, which passes them on to the
    /// server it starts.
    fn env(&self) -> Vec<(&'static str, String)> {
        let p = |rel: &str| self.dir.path().join(rel).to_string_lossy().into_owned();
        vec![
            ("HOME", p("home")),
            ("TOOLBELT_HOME", p("tbhome")),
            (
                "TOOLBELT_SYSTEM_SETTINGS_PATH",
                p("no-system-settings.json"),
            ),
        ]
    }

    /// A command in the workspace with the isolating environment, stdin closed, output
    /// piped, killed if the test lets go of it.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> tokio::process::Command {
        self.command_in(program, &self.ws())
    }

    fn command_in(
        &self,
        program: impl AsRef<std::ffi::OsStr>,
        dir: &Path,
    ) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(program);
        cmd.current_dir(dir)
            .env_remove("TOOLBELT_LOG")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_MODEL")
            .envs(self.env())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }
}

struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

async fn finish(cmd: &mut tokio::process::Command, what: &str) -> Finished {
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let out = tokio::time::timeout(CLIENT_TIMEOUT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {CLIENT_TIMEOUT:?}"))
        .unwrap();
    Finished {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The Python client's run: its observations, or a panic with everything it printed.
struct PythonRun {
    out: Value,
    stderr: String,
}

impl PythonRun {
    fn step(&self, i: usize) -> &Value {
        let step = &self.out["steps"][i];
        assert!(
            step.get("error").is_none(),
            "step {i} raised in the client: {step}\nclient stderr:\n{}",
            self.stderr
        );
        step
    }

    /// Step `i`, a tools/call: (isError, joined text, elicitations received).
    fn call(&self, i: usize) -> (bool, String, Vec<Value>) {
        let step = self.step(i);
        let is_error = step["result"]["isError"].as_bool().unwrap_or(false);
        let text = step["text"].as_str().unwrap_or_default().to_string();
        let elicitations = step["elicitations"].as_array().cloned().unwrap_or_default();
        (is_error, text, elicitations)
    }

    fn tools(&self, i: usize) -> Vec<Value> {
        self.step(i)["tools"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("step {i} has no tools: {}", self.out))
    }
}

/// Runs the Python client in the workspace with `steps` against a server it reaches
/// through `target` (`--stdio CMD...` or `--url URL`, last on its command line).
async fn python_client(
    ws: &Workspace,
    python: &Path,
    steps: &Value,
    client_flags: &[&str],
    target: &[&str],
) -> PythonRun {
    python_client_in(ws, &ws.ws(), python, steps, client_flags, target).await
}

/// [`python_client`] in `dir` (a stdio server starts there too).
async fn python_client_in(
    ws: &Workspace,
    dir: &Path,
    python: &Path,
    steps: &Value,
    client_flags: &[&str],
    target: &[&str],
) -> PythonRun {
    let mut cmd = ws.command_in(python, dir);
    cmd.arg(client_script())
        .args(["--steps", &steps.to_string()])
        .args(client_flags)
        .args(target);
    let run = finish(&mut cmd, "the Python MCP client").await;
    assert_eq!(
        run.code,
        Some(0),
        "the Python MCP client failed\nstdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    let out = serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "the Python client printed no JSON ({e})\nstdout:\n{}\nstderr:\n{}",
            run.stdout, run.stderr
        )
    });
    PythonRun {
        out,
        stderr: run.stderr,
    }
}

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name} in {}", Value::from(tools.to_vec())))
}

/// The one elicitation a confirmed call sent: a form whose schema is an object with an
/// optional boolean `always`.
fn assert_confirmation_form(elicitations: &[Value], what: &str) {
    assert_eq!(
        elicitations.len(),
        1,
        "{what}: expected one elicitation/create, got {}",
        Value::from(elicitations.to_vec())
    );
    let request = &elicitations[0]["request"];
    assert!(
        request.get("mode").is_none() || request["mode"] == "form",
        "{what}: {request}"
    );
    assert!(
        !request["message"].as_str().unwrap_or_default().is_empty(),
        "{what}: no message in {request}"
    );
    let schema = &request["requestedSchema"];
    assert_eq!(schema["type"], "object", "{what}: {request}");
    assert_eq!(
        schema["properties"]["always"]["type"], "boolean",
        "{what}: {request}"
    );
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    assert!(
        !required.contains(&json!("always")),
        "{what}: `always` must be optional: {request}"
    );
}

const NOTES: &str = "alpha\nneedle in the haystack\nomega\n";

fn edit_args(ws: &Workspace, rel: &str, old: &str, new: &str) -> Value {
    json!({"file_path": ws.path(rel), "old_string": old, "new_string": new})
}

#[tokio::test]
async fn python_client_over_stdio_lists_reads_searches_and_confirms_edits_both_ways() {
    let Some(python) = available("the MCP Python SDK", python()) else {
        return;
    };
    let run = confirmations_both_ways(&python, &[]).await;
    assert_eq!(run.out["protocolVersion"], "2025-11-25", "{}", run.out);
}

#[tokio::test]
async fn python_client_of_2026_07_28_over_stdio_confirms_in_rounds_both_ways_in_its_roots() {
    let Some(python) = available("the MCP Python SDK", python()) else {
        return;
    };
    let run = confirmations_both_ways(&python, &["--connect", "modern"]).await;
    assert_eq!(run.out["protocolVersion"], "2026-07-28", "{}", run.out);
    // Roots come as an input request of each call (this revision has no notification
    // that they changed): at least once per call that ran.
    assert!(
        run.out["rootsListed"].as_u64().unwrap_or(0) >= 9,
        "{}",
        run.out
    );
}

/// The Python client (`client_flags` choose the era) with the workspace as its root,
/// over stdio, started in another directory: it lists, reads, searches, and confirms,
/// declines, cancels and "always" allows edits and commands. Its run, checked.
async fn confirmations_both_ways(python: &Path, client_flags: &[&str]) -> PythonRun {
    let ws = Workspace::new();
    ws.write("notes.txt", NOTES);
    ws.write("accepted.txt", "status = old\n");
    ws.write("declined.txt", "status = old\n");
    ws.write("always.txt", "one = old\ntwo = old\n");
    let steps = json!([
        {"op": "list"},
        {"op": "call", "name": "read_file", "arguments": {"absolute_path": ws.path("notes.txt")}},
        {"op": "call", "name": "grep_search", "arguments": {"pattern": "needle"}},
        {"op": "call", "name": "edit", "answer": "accept",
         "arguments": edit_args(&ws, "accepted.txt", "status = old", "status = new")},
        {"op": "call", "name": "edit", "answer": "decline",
         "arguments": edit_args(&ws, "declined.txt", "status = old", "status = new")},
        // `tee` writes a file, so the command needs confirmation (a plain `echo` is on
        // toolbelt's read-only list and would run without asking).
        {"op": "call", "name": "run_shell_command", "answer": "accept",
         "arguments": {"command": "echo interop-$((6 * 7)) | tee shell-ran.txt"}},
        {"op": "call", "name": "run_shell_command", "answer": "decline",
         "arguments": {"command": "echo hi"}},
        {"op": "call", "name": "edit", "answer": "cancel",
         "arguments": edit_args(&ws, "declined.txt", "status = old", "status = new")},
        // "always" allows the tool for the rest of the connection: the next edit does not
        // ask (the client would have declined).
        {"op": "call", "name": "edit", "answer": "accept-always",
         "arguments": edit_args(&ws, "always.txt", "one = old", "one = new")},
        {"op": "call", "name": "edit", "answer": "decline",
         "arguments": edit_args(&ws, "always.txt", "two = old", "two = new")},
    ]);
    // The server starts elsewhere, with a match of its own: the client's one root is the
    // workspace.
    let elsewhere = ws.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("decoy.txt"), "needle in the decoy\n").unwrap();
    let root = ws.ws().to_string_lossy().into_owned();
    let mut flags = vec!["--root", root.as_str()];
    flags.extend_from_slice(client_flags);
    let run = python_client_in(
        &ws,
        &elsewhere,
        python,
        &steps,
        &flags,
        &["--stdio", toolbelt(), "mcp", "serve"],
    )
    .await;

    let tools = run.tools(0);
    for name in ["read_file", "grep_search", "edit", "run_shell_command"] {
        let t = tool(&tools, name);
        assert!(
            t["inputSchema"]["type"] == "object",
            "{name} has no object input schema: {t}"
        );
    }
    let read_file = tool(&tools, "read_file");
    assert!(
        !read_file["title"].as_str().unwrap_or_default().is_empty(),
        "read_file has no title: {read_file}"
    );
    assert_eq!(
        read_file["annotations"]["readOnlyHint"], true,
        "{read_file}"
    );
    assert_ne!(
        tool(&tools, "edit")["annotations"]["readOnlyHint"],
        true,
        "edit is not read-only"
    );

    let (is_error, text, elicitations) = run.call(1);
    assert!(!is_error, "read_file failed: {text}");
    assert!(text.contains("needle in the haystack"), "{text}");
    assert!(elicitations.is_empty(), "read_file asked: {elicitations:?}");

    let (is_error, text, elicitations) = run.call(2);
    assert!(!is_error, "grep_search failed: {text}");
    assert!(text.contains("notes.txt"), "{text}");
    assert!(text.contains("needle in the haystack"), "{text}");
    assert!(
        !text.contains("decoy"),
        "searched the server's directory: {text}"
    );
    assert!(
        elicitations.is_empty(),
        "grep_search asked: {elicitations:?}"
    );

    let (is_error, text, elicitations) = run.call(3);
    assert_confirmation_form(&elicitations, "edit (accepted)");
    assert!(!is_error, "the accepted edit failed: {text}");
    assert_eq!(ws.read("accepted.txt"), "status = new\n");

    let (is_error, text, elicitations) = run.call(4);
    assert_confirmation_form(&elicitations, "edit (declined)");
    assert!(is_error, "a declined edit must be an error result: {text}");
    assert!(text.contains("did not allow"), "{text}");
    assert_eq!(
        ws.read("declined.txt"),
        "status = old\n",
        "declined, yet changed"
    );

    let (is_error, text, elicitations) = run.call(5);
    assert_confirmation_form(&elicitations, "run_shell_command");
    assert!(!is_error, "the shell command failed: {text}");
    assert!(text.contains("interop-42"), "{text}");
    assert_eq!(ws.read("shell-ran.txt"), "interop-42\n");

    // A read-only command never asks (the client would have declined).
    let (is_error, text, elicitations) = run.call(6);
    assert!(elicitations.is_empty(), "`echo hi` asked: {elicitations:?}");
    assert!(!is_error, "`echo hi` failed: {text}");
    assert!(text.contains("hi"), "{text}");

    let (is_error, text, elicitations) = run.call(7);
    assert_confirmation_form(&elicitations, "edit (cancelled)");
    assert!(is_error, "a cancelled edit must be an error result: {text}");
    assert_eq!(
        ws.read("declined.txt"),
        "status = old\n",
        "cancelled, yet changed"
    );

    let (is_error, text, elicitations) = run.call(8);
    assert_confirmation_form(&elicitations, "edit (always)");
    assert!(!is_error, "the edit accepted with always failed: {text}");
    let (is_error, text, elicitations) = run.call(9);
    assert!(
        elicitations.is_empty(),
        "asked again after always: {elicitations:?}"
    );
    assert!(!is_error, "the second edit failed: {text}");
    assert_eq!(ws.read("always.txt"), "one = new\ntwo = new\n");
    run
}

#[tokio::test]
async fn python_client_without_elicitation_is_refused_with_how_to_allow_the_call() {
    let Some(python) = available("the MCP Python SDK", python()) else {
        return;
    };
    refused_without_elicitation(&python, &[]).await;
}

#[tokio::test]
async fn python_client_of_2026_07_28_without_elicitation_is_refused_with_how_to_allow_the_call() {
    let Some(python) = available("the MCP Python SDK", python()) else {
        return;
    };
    refused_without_elicitation(&python, &["--connect", "modern"]).await;
}

/// A client (`client_flags`: its era) that offers no elicitation: an edit is refused with
/// the advice, a read runs, and the advice followed lets the edit run.
async fn refused_without_elicitation(python: &Path, client_flags: &[&str]) {
    let mut flags = vec!["--elicitation", "none"];
    flags.extend_from_slice(client_flags);
    let ws = Workspace::new();
    ws.write("notes.txt", NOTES);
    ws.write("target.txt", "status = old\n");
    let steps = json!([
        {"op": "call", "name": "edit",
         "arguments": edit_args(&ws, "target.txt", "status = old", "status = new")},
        {"op": "call", "name": "read_file", "arguments": {"absolute_path": ws.path("notes.txt")}},
    ]);
    let run = python_client(
        &ws,
        python,
        &steps,
        &flags,
        &["--stdio", toolbelt(), "mcp", "serve"],
    )
    .await;

    let (is_error, text, _) = run.call(0);
    assert!(
        is_error,
        "an edit nobody could confirm must be refused: {text}"
    );
    assert!(text.contains("offers no elicitation"), "{text}");
    assert!(text.contains("--approval-mode"), "{text}");
    assert_eq!(
        ws.read("target.txt"),
        "status = old\n",
        "refused, yet changed"
    );

    // Read-only tools never ask, so they work without elicitation.
    let (is_error, text, _) = run.call(1);
    assert!(!is_error, "read_file failed: {text}");
    assert!(text.contains("needle in the haystack"), "{text}");

    // What the refusal advises works for the same client.
    let run = python_client(
        &ws,
        python,
        &steps,
        &flags,
        &[
            "--stdio",
            toolbelt(),
            "mcp",
            "serve",
            "--approval-mode",
            "auto-edit",
        ],
    )
    .await;
    let (is_error, text, _) = run.call(0);
    assert!(!is_error, "the edit failed in auto-edit mode: {text}");
    assert_eq!(ws.read("target.txt"), "status = new\n");
}

#[tokio::test]
async fn python_high_level_client_roots_are_the_workspace_not_the_servers_directory() {
    let Some(python) = available("the MCP Python SDK", python()) else {
        return;
    };
    let ws = Workspace::new();
    ws.write("notes.txt", NOTES);
    // The server starts in another directory that has a match of its own; the client's
    // one root is the workspace.
    let elsewhere = ws.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("decoy.txt"), "needle in the decoy\n").unwrap();
    let steps = json!([
        {"op": "call", "name": "grep_search", "arguments": {"pattern": "needle"}},
    ]);
    let root = ws.ws().to_string_lossy().into_owned();
    let run = python_client_in(
        &ws,
        &elsewhere,
        &python,
        &steps,
        // The SDK's high-level `Client`, which probes `server/discover` before the
        // initialize handshake.
        &["--root", &root, "--connect", "auto"],
        &["--stdio", toolbelt(), "mcp", "serve"],
    )
    .await;
    assert_eq!(run.out["serverInfo"]["name"], "toolbelt", "{}", run.out);
    // `server/discover` offers 2026-07-28, so the client speaks it: the roots come as an
    // input request of the call.
    assert_eq!(run.out["protocolVersion"], "2026-07-28", "{}", run.out);
    assert_eq!(run.out["rootsListed"], 1, "{}", run.out);
    let (is_error, text, _) = run.call(0);
    assert!(!is_error, "grep_search failed: {text}\n{}", run.stderr);
    assert!(text.contains("needle in the haystack"), "{text}");
    assert!(
        !text.contains("decoy"),
        "searched the server's directory: {text}"
    );
}

/// `toolbelt mcp serve --http 127.0.0.1:0` in the workspace, and its URL once it listens.
struct HttpServer {
    child: tokio::process::Child,
    url: String,
    stderr: tokio::task::JoinHandle<String>,
}

const LISTENING: &str = "toolbelt: MCP over Streamable HTTP at ";

impl HttpServer {
    async fn start(ws: &Workspace) -> HttpServer {
        HttpServer::start_with(ws, &[]).await
    }

    async fn start_with(ws: &Workspace, flags: &[&str]) -> HttpServer {
        let mut child = ws
            .command(toolbelt())
            .args(["mcp", "serve", "--http", "127.0.0.1:0"])
            .args(flags)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = String::new();
        let url = tokio::time::timeout(CLIENT_TIMEOUT, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(url) = line.strip_prefix(LISTENING) {
                    return Some(url.trim().to_string());
                }
                seen.push_str(&line);
                seen.push('\n');
            }
            None
        })
        .await
        .unwrap_or_else(|_| panic!("the server did not say where it listens:\n{seen}"))
        .unwrap_or_else(|| panic!("the server ended before it listened:\n{seen}"));
        assert!(url.ends_with("/mcp"), "{url}");
        // Keep reading stderr so the server never blocks on a full pipe; it is shown when
        // a test fails.
        let stderr = tokio::spawn(async move {
            let mut rest = String::new();
            let _ = lines.get_mut().read_to_string(&mut rest).await;
            seen + &rest
        });
        HttpServer { child, url, stderr }
    }

    async fn stop(mut self) -> String {
        let _ = self.child.kill().await;
        self.stderr.await.unwrap_or_default()
    }
}

#[tokio::test]
async fn python_client_over_streamable_http_lists_reads_and_edits() {
    let Some(python) = available("the MCP Python SDK", python()) else {
        return;
    };
    let ws = Workspace::new();
    ws.write("notes.txt", NOTES);
    ws.write("target.txt", "status = old\n");
    let server = HttpServer::start(&ws).await;
    let steps = json!([
        {"op": "list"},
        {"op": "call", "name": "read_file", "arguments": {"absolute_path": ws.path("notes.txt")}},
        {"op": "call", "name": "edit", "answer": "accept",
         "arguments": edit_args(&ws, "target.txt", "status = old", "status = new")},
    ]);
    let url = server.url.clone();
    let run = python_client(&ws, &python, &steps, &[], &["--url", &url]).await;
    let server_stderr = server.stop().await;
    let context = format!("server stderr:\n{server_stderr}");

    let tools = run.tools(0);
    for name in ["read_file", "grep_search", "edit", "run_shell_command"] {
        tool(&tools, name);
    }
    let (is_error, text, elicitations) = run.call(1);
    assert!(!is_error, "read_file failed: {text}\n{context}");
    assert!(elicitations.is_empty(), "read_file asked: {elicitations:?}");
    assert!(text.contains("needle in the haystack"), "{text}");

    let (is_error, text, elicitations) = run.call(2);
    assert_confirmation_form(&elicitations, "edit over HTTP");
    assert!(!is_error, "the accepted edit failed: {text}\n{context}");
    assert_eq!(ws.read("target.txt"), "status = new\n", "{context}");
}

/// Over HTTP the 2026-07-28 revision has no sessions: each request stands alone. The
/// client's roots and its person's answer come in rounds all the same; no "always" is
/// offered (no connection would remember it); and a background command outlives the
/// request that started it.
#[tokio::test]
async fn python_client_of_2026_07_28_over_streamable_http_confirms_in_rounds_without_sessions() {
    let Some(python) = available("the MCP Python SDK", python()) else {
        return;
    };
    let ws = Workspace::new();
    ws.write("notes.txt", NOTES);
    ws.write("target.txt", "status = old\n");
    ws.write("declined.txt", "status = old\n");
    let server = HttpServer::start(&ws).await;
    let steps = json!([
        {"op": "list"},
        {"op": "call", "name": "grep_search", "arguments": {"pattern": "needle"}},
        {"op": "call", "name": "edit", "answer": "accept",
         "arguments": edit_args(&ws, "target.txt", "status = old", "status = new")},
        {"op": "call", "name": "edit", "answer": "decline",
         "arguments": edit_args(&ws, "declined.txt", "status = old", "status = new")},
        {"op": "call", "name": "run_shell_command", "answer": "accept",
         "arguments": {"command": "sleep 4391", "is_background": true}},
        {"op": "call", "name": "read_file", "arguments": {"absolute_path": ws.path("notes.txt")}},
    ]);
    let url = server.url.clone();
    let root = ws.ws().to_string_lossy().into_owned();
    let flags = ["--connect", "modern", "--root", &root];
    let run = python_client(&ws, &python, &steps, &flags, &["--url", &url]).await;
    assert_eq!(run.out["protocolVersion"], "2026-07-28", "{}", run.out);
    for name in ["read_file", "grep_search", "edit", "run_shell_command"] {
        tool(&run.tools(0), name);
    }
    let (is_error, text, elicitations) = run.call(1);
    assert!(
        !is_error && elicitations.is_empty(),
        "{text} {elicitations:?}"
    );
    assert!(text.contains("needle in the haystack"), "{text}");

    let (is_error, text, elicitations) = run.call(2);
    assert_eq!(elicitations.len(), 1, "{elicitations:?}");
    let schema = &elicitations[0]["request"]["requestedSchema"];
    assert!(
        schema["properties"].get("always").is_none(),
        "no connection to remember \"always\" for: {schema}"
    );
    assert!(!is_error, "the accepted edit failed: {text}");
    assert_eq!(ws.read("target.txt"), "status = new\n");
    let (is_error, text, elicitations) = run.call(3);
    assert_eq!(elicitations.len(), 1, "{elicitations:?}");
    assert!(is_error && text.contains("did not allow"), "{text}");
    assert_eq!(
        ws.read("declined.txt"),
        "status = old\n",
        "declined, yet changed"
    );

    let (is_error, text, _) = run.call(4);
    assert!(!is_error, "the background command failed: {text}");
    let pid: i32 = text
        .lines()
        .find_map(|l| l.strip_prefix("PID: "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no PID in {text}"));
    let job = rustix::process::pidfd_open(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::PidfdFlags::empty(),
    )
    .unwrap();
    // The requests after it (and the client's end) ended no connection of the job's.
    let mut fds = [rustix::event::PollFd::new(
        &job,
        rustix::event::PollFlags::IN,
    )];
    let second = rustix::event::Timespec {
        tv_sec: 1,
        tv_nsec: 0,
    };
    assert_eq!(
        rustix::event::poll(&mut fds, Some(&second)).unwrap(),
        0,
        "the background command ended with the request that started it"
    );
    let (is_error, text, _) = run.call(5);
    assert!(!is_error && text.contains("needle"), "{text}");
    // The server's end ends it.
    server.stop().await;
}

#[tokio::test]
async fn python_client_of_2026_07_28_over_stateless_http_is_told_why_an_edit_cannot_be_confirmed() {
    let Some(python) = available("the MCP Python SDK", python()) else {
        return;
    };
    refused_over_stateless_http(&python, &["--connect", "modern"]).await;
}

#[tokio::test]
async fn python_client_over_stateless_http_reads_and_is_told_why_an_edit_cannot_be_confirmed() {
    let Some(python) = available("the MCP Python SDK", python()) else {
        return;
    };
    refused_over_stateless_http(&python, &[]).await;
}

/// A client (`client_flags`: its era) of a `--stateless` server: reads, and its edit is
/// refused with why and how to allow it.
async fn refused_over_stateless_http(python: &Path, client_flags: &[&str]) {
    let ws = Workspace::new();
    ws.write("notes.txt", NOTES);
    ws.write("target.txt", "status = old\n");
    let server = HttpServer::start_with(&ws, &["--stateless"]).await;
    let steps = json!([
        {"op": "call", "name": "read_file", "arguments": {"absolute_path": ws.path("notes.txt")}},
        // The client could confirm, but a stateless server cannot ask.
        {"op": "call", "name": "edit", "answer": "accept",
         "arguments": edit_args(&ws, "target.txt", "status = old", "status = new")},
    ]);
    let url = server.url.clone();
    let run = python_client(&ws, python, &steps, client_flags, &["--url", &url]).await;
    let server_stderr = server.stop().await;
    let context = format!("server stderr:\n{server_stderr}");

    let (is_error, text, _) = run.call(0);
    assert!(!is_error, "read_file failed: {text}\n{context}");
    assert!(text.contains("needle in the haystack"), "{text}");
    let (is_error, text, elicitations) = run.call(1);
    assert!(
        elicitations.is_empty(),
        "a stateless server asked: {elicitations:?}"
    );
    assert!(is_error, "the edit ran unconfirmed: {text}\n{context}");
    assert!(text.contains("stateless"), "{text}");
    assert!(text.contains("--approval-mode"), "{text}");
    assert_eq!(
        ws.read("target.txt"),
        "status = old\n",
        "refused, yet changed"
    );
}

/// The Inspector CLI against `toolbelt mcp serve <server_args>` over stdio: `--format json`
/// output parsed, exit code checked (0; 5 is its code for an `isError` tool result).
async fn inspector_cli(
    ws: &Workspace,
    inspector: &(PathBuf, PathBuf),
    method_args: &[&str],
    server_args: &[&str],
    expected_code: i32,
) -> Value {
    let mut target = vec!["--cwd".to_string(), ws.ws().to_string_lossy().into_owned()];
    // The Inspector starts a stdio server with a minimal environment: pass what isolates
    // toolbelt explicitly (its -e flags go before the server command too).
    for (key, value) in ws.env() {
        target.extend(["-e".to_string(), format!("{key}={value}")]);
    }
    let server = [toolbelt(), "mcp", "serve"]
        .into_iter()
        .chain(server_args.iter().copied());
    target.extend(server.map(str::to_string));
    inspector_cli_at(ws, inspector, method_args, &target, expected_code).await
}

/// The Inspector CLI with `method_args` against `target` (its last arguments: a server
/// command line or a URL).
async fn inspector_cli_at(
    ws: &Workspace,
    (node, launcher): &(PathBuf, PathBuf),
    method_args: &[&str],
    target: &[String],
    expected_code: i32,
) -> Value {
    let mut cmd = ws.command(node);
    cmd.arg(launcher)
        .arg("--cli")
        .args(["--format", "json"])
        .args(method_args)
        .args(target);
    let run = finish(&mut cmd, "the MCP Inspector CLI").await;
    assert_eq!(
        run.code,
        Some(expected_code),
        "the Inspector's exit code ({method_args:?})\nstdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "the Inspector printed no JSON ({e})\nstdout:\n{}\nstderr:\n{}",
            run.stdout, run.stderr
        )
    })
}

/// The text of a tools/call result the Inspector printed, after checking its `isError`.
fn inspector_text(out: &Value, is_error: bool, what: &str) -> String {
    let result = &out["result"];
    assert_eq!(result["isError"], is_error, "{what}: {out}");
    result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no content in {out}"))
        .iter()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn inspector_cli_lists_tools_and_calls_read_grep_edit_and_shell() {
    let Some(inspector) = available("the MCP Inspector (Node 22)", inspector()) else {
        return;
    };
    let ws = Workspace::new();
    ws.write("notes.txt", NOTES);
    ws.write("target.txt", "status = old\n");

    let out = inspector_cli(&ws, &inspector, &["--method", "tools/list"], &[], 0).await;
    let tools = out["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("no tools in {out}"));
    for name in ["read_file", "grep_search", "edit", "run_shell_command"] {
        tool(&tools, name);
    }

    let call = |name: &'static str, args: Value| {
        let args = args.to_string();
        let ws = &ws;
        let inspector = &inspector;
        async move {
            // The Inspector has no elicitation: edit and shell run only in yolo mode.
            let out = inspector_cli(
                ws,
                inspector,
                &[
                    "--method",
                    "tools/call",
                    "--tool-name",
                    name,
                    "--tool-args-json",
                    &args,
                ],
                &["--approval-mode", "yolo"],
                0,
            )
            .await;
            inspector_text(&out, false, name)
        }
    };

    let text = call("read_file", json!({"absolute_path": ws.path("notes.txt")})).await;
    assert!(text.contains("needle in the haystack"), "{text}");

    let text = call("grep_search", json!({"pattern": "needle"})).await;
    assert!(text.contains("notes.txt"), "{text}");
    assert!(text.contains("needle in the haystack"), "{text}");

    call(
        "edit",
        edit_args(&ws, "target.txt", "status = old", "status = new"),
    )
    .await;
    assert_eq!(ws.read("target.txt"), "status = new\n");

    let text = call(
        "run_shell_command",
        json!({"command": "echo interop-$((6 * 7)) | tee shell-ran.txt"}),
    )
    .await;
    assert!(text.contains("interop-42"), "{text}");
    assert_eq!(ws.read("shell-ran.txt"), "interop-42\n");
}

#[tokio::test]
async fn inspector_cli_without_yolo_is_refused_and_the_file_is_unchanged() {
    let Some(inspector) = available("the MCP Inspector (Node 22)", inspector()) else {
        return;
    };
    let ws = Workspace::new();
    ws.write("target.txt", "status = old\n");
    let args = edit_args(&ws, "target.txt", "status = old", "status = new").to_string();
    let out = inspector_cli(
        &ws,
        &inspector,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "edit",
            "--tool-args-json",
            &args,
        ],
        &[],
        5,
    )
    .await;
    let text = inspector_text(&out, true, "edit without elicitation");
    assert!(text.contains("--approval-mode"), "{text}");
    assert_eq!(
        ws.read("target.txt"),
        "status = old\n",
        "refused, yet changed"
    );
}

#[tokio::test]
async fn inspector_cli_over_streamable_http_lists_tools_and_reads_a_file() {
    let Some(inspector) = available("the MCP Inspector (Node 22)", inspector()) else {
        return;
    };
    let ws = Workspace::new();
    ws.write("notes.txt", NOTES);
    let server = HttpServer::start(&ws).await;
    let url = [server.url.clone()];
    let listed = inspector_cli_at(&ws, &inspector, &["--method", "tools/list"], &url, 0).await;
    let args = json!({"absolute_path": ws.path("notes.txt")}).to_string();
    let read = inspector_cli_at(
        &ws,
        &inspector,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "read_file",
            "--tool-args-json",
            &args,
        ],
        &url,
        0,
    )
    .await;
    let server_stderr = server.stop().await;

    let tools = listed["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("no tools in {listed}\nserver stderr:\n{server_stderr}"));
    for name in ["read_file", "grep_search", "edit", "run_shell_command"] {
        tool(&tools, name);
    }
    let text = inspector_text(&read, false, "read_file over HTTP");
    assert!(text.contains("needle in the haystack"), "{text}");
}

/// The Inspector CLI in each protocol era (`--protocol-era legacy` is the `initialize`
/// handshake, `modern` the 2026-07-28 revision): over stdio and over Streamable HTTP it
/// negotiates that era, lists the tools and calls them; an edit runs in yolo mode and
/// is refused, with how to allow it, in default mode (the Inspector has no elicitation).
#[tokio::test]
async fn inspector_cli_lists_and_calls_tools_in_both_protocol_eras_over_stdio_and_http() {
    let Some(inspector) = available("the MCP Inspector (Node 22)", inspector()) else {
        return;
    };
    let ws = Workspace::new();
    ws.write("notes.txt", NOTES);
    let server = HttpServer::start(&ws).await;
    let url = [server.url.clone()];
    let read = json!({"absolute_path": ws.path("notes.txt")}).to_string();
    for (era, version) in [("legacy", "2025-11-25"), ("modern", "2026-07-28")] {
        let method = |method: &'static str| ["--protocol-era", era, "--method", method];
        let call = |tool: &'static str, args: &str| {
            [
                "--protocol-era",
                era,
                "--method",
                "tools/call",
                "--tool-name",
                tool,
                "--tool-args-json",
            ]
            .into_iter()
            .map(str::to_string)
            .chain([args.to_string()])
            .collect::<Vec<_>>()
        };
        let call_args = call("read_file", &read);
        let call_args: Vec<&str> = call_args.iter().map(String::as_str).collect();
        let target = format!("{era} over stdio");
        let out = inspector_cli(&ws, &inspector, &method("initialize"), &[], 0).await;
        assert_eq!(out["result"]["protocolVersion"], version, "{target}: {out}");
        let out = inspector_cli(&ws, &inspector, &method("tools/list"), &[], 0).await;
        let tools = out["result"]["tools"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for name in ["read_file", "grep_search", "edit", "run_shell_command"] {
            tool(&tools, name);
        }
        let out = inspector_cli(&ws, &inspector, &call_args, &[], 0).await;
        let text = inspector_text(&out, false, &target);
        assert!(text.contains("needle in the haystack"), "{target}: {text}");

        let file = format!("{era}.txt");
        ws.write(&file, "status = old\n");
        let edit = edit_args(&ws, &file, "status = old", "status = new").to_string();
        let edit_args = call("edit", &edit);
        let edit_args: Vec<&str> = edit_args.iter().map(String::as_str).collect();
        let out = inspector_cli(&ws, &inspector, &edit_args, &[], 5).await;
        let text = inspector_text(&out, true, &target);
        assert!(text.contains("--approval-mode"), "{target}: {text}");
        assert_eq!(
            ws.read(&file),
            "status = old\n",
            "{target}: refused, yet changed"
        );
        let yolo = ["--approval-mode", "yolo"];
        let out = inspector_cli(&ws, &inspector, &edit_args, &yolo, 0).await;
        inspector_text(&out, false, &target);
        assert_eq!(ws.read(&file), "status = new\n", "{target}");

        let target = format!("{era} over HTTP");
        let out = inspector_cli_at(&ws, &inspector, &method("initialize"), &url, 0).await;
        assert_eq!(out["result"]["protocolVersion"], version, "{target}: {out}");
        let out = inspector_cli_at(&ws, &inspector, &method("tools/list"), &url, 0).await;
        let tools = out["result"]["tools"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for name in ["read_file", "grep_search", "edit", "run_shell_command"] {
            tool(&tools, name);
        }
        let out = inspector_cli_at(&ws, &inspector, &call_args, &url, 0).await;
        let text = inspector_text(&out, false, &target);
        assert!(text.contains("needle in the haystack"), "{target}: {text}");
    }
    server.stop().await;
}

/// The rounds of 2026-07-28 driven by hand, as a hostile or confused client might: an
/// answer runs only the call it was asked about, once, under the handle it was given.
#[tokio::test]
async fn python_client_of_2026_07_28_cannot_answer_for_another_call_or_a_made_up_handle() {
    let Some(python) = available("the MCP Python SDK", python()) else {
        return;
    };
    let ws = Workspace::new();
    ws.write("asked.txt", "status = old\n");
    ws.write("other.txt", "status = old\n");
    let asked = edit_args(&ws, "asked.txt", "status = old", "status = new");
    let other = edit_args(&ws, "other.txt", "status = old", "status = new");
    let write = json!({"file_path": ws.path("new.txt"), "content": "written\n"});
    let steps = json!([
        // 0: the question about `asked`.
        {"op": "once", "name": "edit", "arguments": asked},
        // 1: its handle and a yes, sent with other arguments: the other call asks its own
        // question (and `asked` is declined).
        {"op": "once", "name": "edit", "arguments": other,
         "requestState": {"from": 0}, "answerFor": 0, "answer": "accept"},
        // 2: a yes under a handle the server never gave: asked.
        {"op": "once", "name": "write_file", "arguments": write,
         "requestState": "0123456789abcdef0123456789abcdef", "answerFor": 1, "answer": "accept"},
        // 3: the handle of step 2's question and a yes: that call runs.
        {"op": "once", "name": "write_file", "arguments": write,
         "requestState": {"from": 2}, "answerFor": 2, "answer": "accept"},
        // 4: the same handle again: it was used; the call asks again.
        {"op": "once", "name": "write_file", "arguments": write,
         "requestState": {"from": 2}, "answerFor": 2, "answer": "accept"},
    ]);
    let run = python_client(
        &ws,
        &python,
        &steps,
        &["--connect", "modern"],
        &["--stdio", toolbelt(), "mcp", "serve"],
    )
    .await;
    let asks = |i: usize| {
        let step = run.step(i);
        assert_eq!(step["resultType"], "input_required", "step {i}: {step}");
        let requests = step["inputRequests"].as_object().unwrap();
        assert_eq!(requests.len(), 1, "step {i}: {step}");
        let (_, request) = requests.iter().next().unwrap();
        assert_eq!(request["method"], "elicitation/create", "step {i}: {step}");
        step["requestState"].as_str().unwrap().to_string()
    };
    let first = asks(0);
    let second = asks(1);
    assert_ne!(first, second, "a new question has a new handle");
    let third = asks(2);
    let step = run.step(3);
    assert_eq!(step["resultType"], "complete", "{step}");
    assert_ne!(step["result"]["isError"], true, "{step}");
    assert_ne!(asks(4), third, "a handle answers once");
    assert_eq!(ws.read("new.txt"), "written\n");
    assert_eq!(
        ws.read("asked.txt"),
        "status = old\n",
        "ran on another call's answer"
    );
    assert_eq!(
        ws.read("other.txt"),
        "status = old\n",
        "ran on another call's answer"
    );
}

/// 2026-07-28's `subscriptions/listen`: a client that listens for tool list changes
/// hears of a settings edit that takes a tool away, and lists the tools without it.
#[tokio::test]
async fn python_client_of_2026_07_28_hears_of_tool_list_changes_through_listen() {
    let Some(python) = available("the MCP Python SDK", python()) else {
        return;
    };
    let ws = Workspace::new();
    let settings = ws.ws().join(".qwen/settings.json");
    let steps = json!([
        {"op": "list"},
        {"op": "listen", "write": {"path": settings, "text": r#"{"tools": {"exclude": ["web_fetch"]}}"#}},
        {"op": "list"},
    ]);
    let run = python_client(
        &ws,
        &python,
        &steps,
        &["--connect", "modern"],
        &["--stdio", toolbelt(), "mcp", "serve"],
    )
    .await;
    tool(&run.tools(0), "web_fetch");
    let heard = run.step(1);
    assert_eq!(heard["honored"]["toolsListChanged"], true, "{heard}");
    assert!(
        heard["event"]
            .as_str()
            .unwrap_or_default()
            .to_lowercase()
            .contains("tool"),
        "{heard}"
    );
    let after = run.tools(2);
    assert!(
        !after.iter().any(|t| t["name"] == "web_fetch"),
        "web_fetch still offered"
    );
}
