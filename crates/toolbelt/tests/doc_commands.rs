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
//! folder with a checkout (a copy of `examples/` and the files of
//! `tests/fixtures/docs/checkout/`: a `src/main.rs`, a `README.md`, ...; `git init`), a
//! project of the person's own beside it (the same fixture files, `git init`), and a
//! `HOME` and `TOOLBELT_HOME` of its own (never the real home) whose
//! `~/.qwen/settings.json` already holds the person's settings. A block runs in the
//! person's project, outside the checkout, unless it uses the checkout's files
//! (`examples/`, `scripts/`, `crates/`, a cargo command). After every line the person's
//! settings must still be there (a snippet may add to them, never overwrite them), and no
//! hook in them may point into the checkout. Each line
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

// The binary's Claude Code flags, as data: the coverage test lists the hidden ones.
#[path = "doc_commands/agents.rs"]
mod agents;
#[path = "../src/claude_flags.rs"]
#[allow(dead_code)]
mod claude_flags;
#[path = "doc_commands/coverage.rs"]
mod coverage;
#[path = "doc_commands/extract.rs"]
mod extract;
#[path = "doc_commands/run.rs"]
mod run;
#[path = "doc_commands/world.rs"]
mod world;

use std::path::{Path, PathBuf};
use std::time::Duration;

use extract::{blocks, doc_blocks, doc_files, help_examples, json_blocks};
use run::{run_all, run_line};
use world::{World, servers};

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

/// Every JSON block parses, and a client configuration shown (`mcpServers`, or VS Code's
/// `servers` with a stdio entry) starts servers that connect: `toolbelt --mcp-config
/// JSON mcp list --json` reports each one `connected`.
#[test]
fn every_json_block_parses_and_every_mcp_config_connects() {
    let servers = servers();
    let mut configs = 0;
    for (name, text) in doc_files() {
        for (at, body) in json_blocks(&name, &text) {
            let value: serde_json::Value =
                serde_json::from_str(&body).unwrap_or_else(|e| panic!("{at}: not JSON: {e}"));
            // A settings example's permission rules must be rules toolbelt accepts.
            if let Some(permissions) = value.get("permissions") {
                let world = World::new(&servers);
                let settings = serde_json::json!({ "permissions": permissions }).to_string();
                let script = format!("toolbelt --settings '{settings}' tools list");
                let out = run_line(&world, &script, None).unwrap();
                assert_eq!(out.code, 0, "{at}: {}", out.stderr);
                assert!(!out.stderr.contains("rule"), "{at}: {}", out.stderr);
            }
            let Some(map) = value.get("mcpServers").or_else(|| value.get("servers")) else {
                continue;
            };
            // VS Code's entries name their transport; toolbelt's stdio entries do not.
            let mut map = map.clone();
            for entry in map.as_object_mut().unwrap().values_mut() {
                if let Some(e) = entry.as_object_mut()
                    && e.remove("type").is_some_and(|t| t != "stdio")
                {
                    panic!("{at}: only stdio entries can be checked here");
                }
            }
            let world = World::new(&servers);
            // toolbelt's own `mcp serve` is left out of toolbelt's sessions (and of `mcp
            // list`): it is started here as the client would, and must list its tools.
            for entry in map.as_object().unwrap().values() {
                let command = entry["command"].as_str().unwrap_or("");
                let args: Vec<&str> = entry["args"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
                    .unwrap_or_default();
                if command == "toolbelt" && args.windows(2).any(|w| w == ["mcp", "serve"]) {
                    let script = format!("{command} {}", args.join(" "));
                    let out = run_line(&world, &script, Some(MCP_SESSION)).unwrap();
                    assert!(
                        out.stdout.contains(r#""id":2"#) && out.stdout.contains("read_file"),
                        "{at}: {}",
                        out.stderr
                    );
                }
            }
            let config = serde_json::json!({ "mcpServers": map }).to_string();
            let script = format!("toolbelt --mcp-config '{config}' mcp list --json");
            let out = run_line(&world, &script, None).unwrap();
            assert_eq!(out.code, 0, "{at}: {}", out.stderr);
            let listed: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
            for server in listed.as_array().unwrap() {
                assert_eq!(server["status"], "connected", "{at}: {server}");
                assert!(
                    server["tools"].as_array().is_some_and(|t| !t.is_empty()),
                    "{at}: {server}"
                );
            }
            configs += 1;
        }
    }
    assert!(
        configs >= 2,
        "only {configs} MCP client configurations found"
    );
}
