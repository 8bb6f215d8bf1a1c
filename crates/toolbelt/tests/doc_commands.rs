#![allow(clippy::too_many_lines)]
//! Every command the documentation shows is run: the shell snippets of README.md and
//! docs/*.md, and the example lines of `toolbelt --help` and of every subcommand's
//! `--help`. A snippet that does not work fails this test; there is no skip list.
//!
//! **What is a snippet.** In a fenced block marked `sh`, `bash` or `console`: in `sh` and
//! `bash` every line that is not blank or a comment is a command (a trailing `\` joins
//! the next line); in `console` the lines starting with `$ ` are commands and the lines
//! after one, up to the next command, are its output as the doc shows it. In `--help`,
//! the indented lines under `Examples:`, with the `(explanation)` after two spaces cut.
//!
//! **How it runs.** Each block (each `--help` example on its own) gets a fresh temporary
//! folder laid out like a checkout: a copy of `examples/`, the files of
//! `tests/fixtures/docs/checkout/` (a `src/main.rs`, a `servers.json`, ...), `git init`,
//! with `HOME` and `TOOLBELT_HOME` of its own beside it (never the real home). Each line
//! runs with `bash -c` in that folder, in order, stdin closed (`/dev/null`); a line that
//! starts with `export` or `cd` is also put in front of every later line of its block,
//! so a block reads as a person types it. `toolbelt` on `PATH` is the binary under
//! test. The model is a fake OpenAI-compatible server on 127.0.0.1 (`OPENAI_BASE_URL`,
//! `OPENAI_MODEL`, `OPENAI_API_KEY` are set to it) that answers every request with
//! [`ANSWER`]. A run whose stderr says a replayed answer no longer fits
//! (`[replay: ...`) fails.
//!
//! **Markers**, in a line's trailing comment:
//! - `exits N`: the exit code must be N (without it: 0).
//! - a comment that starts with `interactive`: the line runs in a pseudo-terminal that
//!   answers cursor-position queries as a terminal does; the test waits for the input
//!   box (and for the answer to a first prompt given with `-i`), presses Ctrl-D and
//!   expects exit 0.
//!
//! A `toolbelt mcp serve --http ADDR:PORT` line is a server: the test starts it, sends
//! an MCP `initialize` over HTTP (with the bearer token when the line sets one) and
//! expects 200, then ends it with SIGTERM and expects the exit code of a clean end (0).
//!
//! **Output.** Where a `console` block shows output, each shown line must match a line
//! of the command's stdout and stderr, in order (lines may come between); `...` in a
//! shown line matches any text.
//!
//! **Substitutions** (slow, networked or machine-specific things, each checked in a
//! cheaper but real way):
//!
//! | in the doc | in the test |
//! |---|---|
//! | `http://127.0.0.1:8000/v1` (a model server) | the fake server's URL |
//! | `:8765` in `mcp serve --http` | a free port |
//! | `https://docs.rs/tokio` (`web_fetch`) | a page served on 127.0.0.1, the user settings allowing that host (`tools.webFetch.allowHosts`) |
//! | `/abs/path` and `/abs/lib` (`--help`'s placeholders for absolute paths) | the checkout and a `lib/` folder beside it |
//! | `cargo install --path P` | `cargo` on `PATH` is a stub that records its arguments; the test checks with `cargo metadata` that P is the package `toolbelt` with the binary `toolbelt` |
//! | `cargo build --release -p P` (also inside `examples/tour.sh`) | the stub; `cargo metadata` has package P with a binary, and `target/release/toolbelt` in the checkout is the binary under test, so the tour itself runs for real |
//! | `cargo run -p P --example E` | the stub; `cargo metadata` has package P with example E (CI's `cargo test --workspace` builds it) |
//! | `cargo test --workspace` | the stub; `.ci/run` runs exactly that command |
//! | `bash scripts/setup.sh` | the checkout's `scripts/setup.sh` is a stub; the real one exists and `.ci/run` runs it |
//!
//! Any other `cargo` command fails the test until it gets a row here.

// A test target: a failed unwrap is a failed test, with its location.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "agent_cli/pty.rs"]
#[allow(dead_code)]
mod pty;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use toolbelt_model::fake_server::{FakeOpenAi, Reply};

/// What the fake model answers to every request.
const ANSWER: &str = "The fake model's answer.";
/// What an MCP client sends a stdio `toolbelt mcp serve` before it closes the pipe.
const MCP_SESSION: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"doc","version":"1"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    "\n",
);
/// How long one line may run.
const LINE_DEADLINE: Duration = Duration::from_secs(60);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

// ---------------------------------------------------------------------------------
// Extraction

#[derive(Debug, Clone)]
struct Snippet {
    /// `README.md:42` or `toolbelt tools call --help`.
    source: String,
    command: String,
    code: i32,
    interactive: bool,
    output: Vec<String>,
}

#[derive(Debug)]
struct Block {
    lines: Vec<Snippet>,
}

/// Where a line's trailing comment starts (a `#` after whitespace, outside quotes).
fn comment_start(line: &str) -> Option<usize> {
    let (mut single, mut double, mut prev_space) = (false, false, true);
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev_space => return Some(i),
            _ => {}
        }
        prev_space = c.is_whitespace();
    }
    None
}

/// A command line and the markers of its comment.
fn snippet(source: String, line: &str) -> Snippet {
    let (command, comment) = match comment_start(line) {
        Some(i) => (line[..i].trim_end(), line[i + 1..].trim()),
        None => (line, ""),
    };
    let words: Vec<&str> = comment.split_whitespace().collect();
    let code = words
        .windows(2)
        .find(|w| w[0] == "exits")
        .and_then(|w| w[1].trim_end_matches([',', ';', ')', ':']).parse().ok())
        .unwrap_or(0);
    Snippet {
        source,
        command: command.trim().to_string(),
        code,
        interactive: comment.starts_with("interactive"),
        output: Vec::new(),
    }
}

/// The shell blocks of one Markdown text.
fn blocks(name: &str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut current: Option<(String, Block)> = None;
    let mut pending = String::new();
    for (n, line) in text.lines().enumerate() {
        let at = format!("{name}:{}", n + 1);
        if let Some(fence) = line.trim_start().strip_prefix("```") {
            match current.take() {
                Some((_, block)) => out.push(block),
                None if ["sh", "bash", "console"].contains(&fence.trim()) => {
                    let block = Block { lines: Vec::new() };
                    current = Some((fence.trim().to_string(), block));
                }
                None => current = Some((String::new(), Block { lines: Vec::new() })),
            }
            continue;
        }
        let Some((lang, block)) = current.as_mut() else {
            continue;
        };
        match lang.as_str() {
            "" => {}
            "console" => match line.strip_prefix("$ ") {
                Some(cmd) => block.lines.push(snippet(at, cmd)),
                None => {
                    if let Some(last) = block.lines.last_mut() {
                        last.output.push(line.to_string());
                    }
                }
            },
            _ => {
                let t = line.trim();
                if t.is_empty() || (t.starts_with('#') && pending.is_empty()) {
                    continue;
                }
                if let Some(head) = t.strip_suffix('\\') {
                    pending.push_str(head);
                    continue;
                }
                let whole = std::mem::take(&mut pending) + t;
                block.lines.push(snippet(at, &whole));
            }
        }
    }
    out.retain(|b| !b.lines.is_empty());
    out
}

/// README.md and every docs/*.md.
fn doc_blocks() -> Vec<Block> {
    let root = repo();
    let mut files = vec![root.join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    files.extend(pages);
    files
        .iter()
        .flat_map(|f| {
            let name = f.strip_prefix(&root).unwrap().display().to_string();
            blocks(&name, &std::fs::read_to_string(f).unwrap())
        })
        .collect()
}

/// `toolbelt ARGS --help`, wide enough that no example line is wrapped.
fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(args)
        .arg("--help")
        .env("COLUMNS", "400")
        .output()
        .unwrap();
    assert!(out.status.success(), "toolbelt {args:?} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands a help text lists under `Commands:` (not `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| *w != "help")
        .map(str::to_string)
        .collect()
}

/// The example lines of `toolbelt --help` and of every subcommand's, each once.
fn help_examples() -> Vec<Block> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut queue: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(path) = queue.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help(&args);
        for sub in subcommands(&text) {
            let mut next = path.clone();
            next.push(sub);
            queue.push(next);
        }
        let source = format!("toolbelt {} --help", path.join(" "));
        for line in text
            .lines()
            .skip_while(|l| !l.starts_with("Examples:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
        {
            let line = line.trim();
            let command = line.split("  (").next().unwrap_or(line).trim();
            if seen.insert(command.to_string()) {
                out.push(Block {
                    lines: vec![snippet(source.clone(), command)],
                });
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------
// The world a block runs in

/// The fake model server and the page server, shared by every block of a test.
struct Servers {
    _runtime: tokio::runtime::Runtime,
    _model: FakeOpenAi,
    model_url: String,
    page_url: String,
}

fn servers() -> Servers {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let model = runtime.block_on(FakeOpenAi::start(Vec::new())).unwrap();
    model.set_fallback(Reply::text(ANSWER));
    model.set_side_reply(Reply::text(ANSWER));
    let model_url = model.base_url();
    Servers {
        _runtime: runtime,
        _model: model,
        model_url,
        page_url: page_server(),
    }
}

/// A web page on 127.0.0.1 for `web_fetch`: every GET gets the same small HTML page.
fn page_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = "<html><body><h1>tokio::spawn</h1><p>Spawns a new asynchronous task.</p></body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}/tokio")
}

/// One block's temporary checkout, homes and tools.
struct World {
    dir: tempfile::TempDir,
    model_url: String,
    page_url: String,
}

impl World {
    fn new(servers: &Servers) -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let checkout = root.join("repo");
        copy_dir(&repo().join("examples"), &checkout.join("examples"));
        copy_dir(
            &repo().join("crates/toolbelt/tests/fixtures/docs/checkout"),
            &checkout,
        );
        for d in [
            "home/.qwen",
            "tbhome",
            "bin",
            "lib",
            "repo/target/release",
            "repo/scripts",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("lib/x.rs"), "pub fn x() {}\n").unwrap();
        std::fs::write(
            root.join("home/.qwen/settings.json"),
            r#"{"tools": {"webFetch": {"allowHosts": ["127.0.0.1"]}}}"#,
        )
        .unwrap();
        let bin = Path::new(env!("CARGO_BIN_EXE_toolbelt"));
        std::os::unix::fs::symlink(bin, root.join("bin/toolbelt")).unwrap();
        std::os::unix::fs::symlink(bin, checkout.join("target/release/toolbelt")).unwrap();
        let log = root.join("stubs.log");
        let stub = format!(
            "#!/bin/sh\nprintf '%s\\t%s\\n' \"$PWD\" \"$*\" >> '{}'\n",
            log.display()
        );
        write_exec(&root.join("bin/cargo"), &stub);
        write_exec(
            &checkout.join("scripts/setup.sh"),
            &stub.replace("\"$*\"", "\"setup.sh\""),
        );
        let git = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&checkout)
            .status()
            .unwrap();
        assert!(git.success());
        World {
            dir,
            model_url: servers.model_url.clone(),
            page_url: servers.page_url.clone(),
        }
    }

    fn checkout(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    /// The doc's text with this world's addresses and paths.
    fn substitute(&self, command: &str, port: u16) -> String {
        let root = self.dir.path().display().to_string();
        command
            .replace("http://127.0.0.1:8000/v1", &self.model_url)
            .replace("https://docs.rs/tokio", &self.page_url)
            .replace(":8765", &format!(":{port}"))
            .replace("/abs/path", &format!("{root}/repo"))
            .replace("/abs/lib", &format!("{root}/lib"))
    }

    fn env(&self) -> Vec<(String, String)> {
        let root = self.dir.path();
        let path = format!(
            "{}:{}",
            root.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        vec![
            ("PATH".into(), path),
            ("HOME".into(), root.join("home").display().to_string()),
            (
                "TOOLBELT_HOME".into(),
                root.join("tbhome").display().to_string(),
            ),
            (
                "TOOLBELT_SYSTEM_SETTINGS_PATH".into(),
                root.join("none.json").display().to_string(),
            ),
            ("OPENAI_BASE_URL".into(), self.model_url.clone()),
            ("OPENAI_MODEL".into(), "qwen3-coder".into()),
            ("OPENAI_API_KEY".into(), "sk-test".into()),
            ("COLUMNS".into(), "400".into()),
            ("RUST_LOG".into(), String::new()),
        ]
    }

    /// The stubbed commands run since the last call, each `(cwd, args)`.
    fn take_stub_calls(&self) -> Vec<(String, String)> {
        let log = self.dir.path().join("stubs.log");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        text.lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn write_exec(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

// ---------------------------------------------------------------------------------
// The substitutes' checks

/// `cargo metadata` of the repository: each package's name, manifest and targets.
fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn package<'a>(meta: &'a Value, name: &str) -> Option<&'a Value> {
    meta["packages"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)
}

fn has_target(pkg: &Value, kind: &str, name: &str) -> bool {
    pkg["targets"].as_array().is_some_and(|ts| {
        ts.iter().any(|t| {
            t["name"] == name
                && t["kind"]
                    .as_array()
                    .is_some_and(|k| k.iter().any(|k| k == kind))
        })
    })
}

fn flag<'a>(words: &[&'a str], name: &str) -> Option<&'a str> {
    words
        .iter()
        .position(|w| *w == name)
        .and_then(|i| words.get(i + 1).copied())
}

/// Checks one stubbed call against the repository (see the table in the module doc).
fn check_stub(meta: &Value, checkout: &Path, cwd: &str, args: &str) -> Result<(), String> {
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    let words: Vec<&str> = args.split_whitespace().collect();
    let ci_runs = |cmd: &str| ci.lines().any(|l| l.trim() == cmd);
    match words.as_slice() {
        ["setup.sh"]
            if repo().join("scripts/setup.sh").is_file() && ci_runs("bash scripts/setup.sh") =>
        {
            Ok(())
        }
        ["test", "--workspace"] if ci.lines().any(|l| l.contains("cargo test --workspace")) => {
            Ok(())
        }
        ["install", ..] => {
            let path = flag(&words, "--path").ok_or("cargo install without --path")?;
            let rel = Path::new(cwd).join(path);
            let rel = rel
                .strip_prefix(checkout)
                .map_err(|_| format!("{path}: not in the checkout"))?;
            let manifest = repo()
                .join(rel)
                .join("Cargo.toml")
                .canonicalize()
                .map_err(|e| format!("{path}: {e}"))?;
            let pkg = meta["packages"]
                .as_array()
                .and_then(|ps| {
                    ps.iter()
                        .find(|p| p["manifest_path"] == manifest.display().to_string())
                })
                .ok_or(format!("{path}: no package of the workspace"))?;
            if pkg["name"] == "toolbelt" && has_target(pkg, "bin", "toolbelt") {
                Ok(())
            } else {
                Err(format!(
                    "{path}: not the package toolbelt with the binary toolbelt"
                ))
            }
        }
        ["build", "--release", ..] => {
            let name = flag(&words, "-p").ok_or("cargo build without -p")?;
            let pkg = package(meta, name).ok_or(format!("no package {name}"))?;
            if has_target(pkg, "bin", name) {
                Ok(())
            } else {
                Err(format!("{name} has no binary"))
            }
        }
        ["run", ..] => {
            let name = flag(&words, "-p").ok_or("cargo run without -p")?;
            let example = flag(&words, "--example").ok_or("cargo run without --example")?;
            let pkg = package(meta, name).ok_or(format!("no package {name}"))?;
            if has_target(pkg, "example", example) {
                Ok(())
            } else {
                Err(format!("{name} has no example {example}"))
            }
        }
        _ => Err(format!(
            "no substitute for `cargo {args}`: add a row to doc_commands.rs's table"
        )),
    }
}

// ---------------------------------------------------------------------------------
// Running

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run_line(world: &World, script: &str, stdin: Option<&str>) -> Result<Outcome, String> {
    let mut child = Command::new("bash")
        .args(["-c", script])
        .current_dir(world.checkout())
        .env_clear()
        .envs(world.env())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
    }
    let pid = child.id().to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    let out = match rx.recv_timeout(LINE_DEADLINE) {
        Ok(out) => out.map_err(|e| e.to_string())?,
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
            return Err(format!("still running after {LINE_DEADLINE:?}"));
        }
    };
    Ok(Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// A line in a pseudo-terminal: wait for the input box (and the first prompt's answer),
/// then Ctrl-D.
fn run_interactive(world: &World, script: &str, snippet: &Snippet) -> Result<(), String> {
    let env = world.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let first_prompt =
        snippet.command.contains(" -i ") || snippet.command.contains("--prompt-interactive");
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let p = pty::Pty::spawn(
            Path::new("/bin/bash"),
            &world.checkout(),
            world.dir.path(),
            &["-c", script],
            &env,
        );
        p.wait_for("Type a message");
        if first_prompt {
            p.wait_for(ANSWER);
        }
        p.send(pty::keys::CTRL_D);
        p.wait_exit_screen()
    }));
    match result {
        Ok((0, _)) => Ok(()),
        Ok((code, screen)) => Err(format!("exit {code}, screen:\n{screen}")),
        Err(panic) => Err(panic
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_else(|| "the terminal session failed".into())),
    }
}

/// `toolbelt mcp serve --http ...`: it must answer an MCP initialize, then end on SIGTERM.
fn run_server(world: &World, script: &str, port: u16) -> Result<(), String> {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("bash")
        .args(["-c", script])
        .process_group(0)
        .current_dir(world.checkout())
        .env_clear()
        .envs(world.env())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let token = script
        .split_whitespace()
        .find_map(|w| w.strip_prefix("TB_TOKEN="))
        .map(str::to_string);
    // It names its URL on stderr once it listens; a server that never does ends the
    // read when it exits.
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let mut line = String::new();
    while stderr.read_line(&mut line).map_err(|e| e.to_string())? > 0 {
        seen.push_str(&line);
        if line.contains(&format!(":{port}/mcp")) {
            break;
        }
        line.clear();
    }
    let reply = initialize(port, token.as_deref());
    // The whole group: bash and the server it started.
    let _ = Command::new("kill")
        .args(["-TERM", "--", &format!("-{}", child.id())])
        .status();
    let status = child.wait().map_err(|e| e.to_string())?;
    let reply = reply.map_err(|e| format!("{e}; stderr:\n{seen}"))?;
    if !reply.starts_with("HTTP/1.1 200") {
        return Err(format!(
            "initialize was answered {}",
            reply.lines().next().unwrap_or("")
        ));
    }
    match status.code() {
        Some(0 | 143) => Ok(()),
        other => Err(format!("after SIGTERM: exit {other:?}")),
    }
}

fn initialize(port: u16, token: Option<&str>) -> Result<String, String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"doc","version":"1"}}}"#;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| e.to_string())?;
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    Ok(reply)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Does the shown output appear in the real output, in order (`...` matches anything)?
fn output_matches(shown: &[String], real: &str) -> Result<(), String> {
    let mut lines = real.lines();
    for want in shown.iter().filter(|l| !l.trim().is_empty()) {
        let parts: Vec<&str> = want.split("...").collect();
        let fits = |line: &str| {
            let mut rest = line;
            parts.iter().enumerate().all(|(i, p)| {
                if i == 0 && !want.starts_with("...") {
                    return rest.strip_prefix(p).map(|r| rest = r).is_some();
                }
                rest.find(p)
                    .map(|at| rest = &rest[at + p.len()..])
                    .is_some()
            }) && (want.ends_with("...") || rest.is_empty())
        };
        if !lines.any(fits) {
            return Err(format!("the output has no line like {want:?} (in order)"));
        }
    }
    Ok(())
}

/// Runs one block in a fresh world; the failures, each naming its line.
fn run_block(servers: &Servers, meta: &Value, block: &Block) -> Vec<String> {
    let world = World::new(servers);
    let mut prelude = String::new();
    let mut failures = Vec::new();
    for s in &block.lines {
        let port = free_port();
        let command = world.substitute(&s.command, port);
        let script = format!("{prelude}{command}");
        let fail = |why: String| format!("{}: `{}`: {why}", s.source, s.command);
        let result = if s.interactive {
            run_interactive(&world, &script, s)
        } else if command.contains("mcp serve --http") {
            run_server(&world, &script, port)
        } else if command.contains("mcp serve") {
            run_line(&world, &script, Some(MCP_SESSION)).and_then(|o| {
                check_outcome(s, &o)?;
                // The answer to tools/list names the tools.
                if o.stdout.contains(r#""id":2"#) && o.stdout.contains(r#""name":"read_file""#) {
                    Ok(())
                } else {
                    Err(format!(
                        "no tools/list answer naming read_file:\n{}",
                        o.stdout
                    ))
                }
            })
        } else {
            run_line(&world, &script, None).and_then(|o| check_outcome(s, &o))
        };
        if let Err(why) = result {
            failures.push(fail(why));
        }
        for (cwd, args) in world.take_stub_calls() {
            if let Err(why) = check_stub(meta, &world.checkout(), &cwd, &args) {
                failures.push(fail(why));
            }
        }
        if command.starts_with("export ") || command.starts_with("cd ") {
            prelude.push_str(&command);
            prelude.push('\n');
        }
    }
    failures
}

fn check_outcome(s: &Snippet, o: &Outcome) -> Result<(), String> {
    let both = format!("{}\n{}", o.stdout, o.stderr);
    if o.code != s.code {
        return Err(format!(
            "exit {} (the doc expects {}); stdout:\n{}\nstderr:\n{}",
            o.code, s.code, o.stdout, o.stderr
        ));
    }
    if o.stderr.contains("[replay: ") || o.stdout.contains("[replay: ") {
        return Err(format!("a replayed answer no longer fits:\n{both}"));
    }
    output_matches(&s.output, &both).map_err(|e| format!("{e}; it printed:\n{both}"))
}

/// Runs blocks on a few threads; every failure, sorted.
fn run_all(blocks: &[Block]) -> Vec<String> {
    let servers = servers();
    let meta = metadata();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(block) = blocks.get(i) else { break };
                    let found = run_block(&servers, &meta, block);
                    failures.lock().unwrap().extend(found);
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    failures
}

// ---------------------------------------------------------------------------------
// The tests

#[test]
fn every_command_in_readme_and_docs_runs() {
    let blocks = doc_blocks();
    let count: usize = blocks.iter().map(|b| b.lines.len()).sum();
    // A parser that found nothing would pass vacuously.
    assert!(
        count >= 40,
        "only {count} commands found in README.md and docs/"
    );
    let failures = run_all(&blocks);
    assert!(
        failures.is_empty(),
        "{} of {count} documented commands fail:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn every_example_in_help_runs() {
    let blocks = help_examples();
    assert!(
        blocks.len() >= 5,
        "only {} --help examples found",
        blocks.len()
    );
    let failures = run_all(&blocks);
    assert!(
        failures.is_empty(),
        "{} --help examples fail:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn every_docs_page_is_linked_from_the_readme_and_every_link_resolves() {
    let root = repo();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            readme.contains(&format!("](docs/{name}")),
            "README.md does not link docs/{name}"
        );
    }
    let mut pages = vec![root.join("README.md")];
    pages.extend(
        std::fs::read_dir(root.join("docs"))
            .unwrap()
            .map(|e| e.unwrap().path()),
    );
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        for target in text.split("](").skip(1).filter_map(|t| t.split(')').next()) {
            if target.starts_with("http") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let path = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            assert!(
                path.exists(),
                "{}: link to {target}: no such file",
                page.display()
            );
            if !anchor.is_empty() {
                let heads = std::fs::read_to_string(&path).unwrap_or_default();
                let found = heads
                    .lines()
                    .filter(|l| l.starts_with('#'))
                    .any(|h| slug(h) == anchor);
                assert!(
                    found,
                    "{}: link to {target}: no such heading",
                    page.display()
                );
            }
        }
    }
}

/// GitHub's anchor for a heading line.
fn slug(heading: &str) -> String {
    heading
        .trim_start_matches('#')
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The runner fails a snippet that does not work: a broken command, a wrong exit code,
/// output that differs, a cargo command without a substitute.
#[test]
fn a_broken_snippet_fails() {
    let doc = "```sh\ntoolbelt tools call no_such_tool '{}'\ntoolbelt tools when 'false'   # exits 1\ncargo publish\n```\n\
               ```console\n$ toolbelt tools when 'true'\nfalse\n```\n";
    let blocks = blocks("broken.md", doc);
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0].lines[1].code, 1);
    let failures = run_all(&blocks);
    let joined = failures.join("\n");
    assert_eq!(failures.len(), 3, "{joined}");
    assert!(
        joined.contains("broken.md:2: `toolbelt tools call no_such_tool '{}'`: exit 2"),
        "{joined}"
    );
    assert!(
        joined.contains("no substitute for `cargo publish`"),
        "{joined}"
    );
    assert!(joined.contains("no line like \"false\""), "{joined}");
}
