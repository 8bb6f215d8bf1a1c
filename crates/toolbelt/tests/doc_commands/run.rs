//! Running a block's lines: plain, in a pseudo-terminal, or as a server; checking exit
//! codes and shown output.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::extract::{Block, Snippet};
use super::pty;
use super::world::{Servers, World, check_stub, metadata, servers};
use super::{ANSWER, LINE_DEADLINE, MCP_SESSION};

pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn run_line(world: &World, script: &str, stdin: Option<&str>) -> Result<Outcome, String> {
    let mut child = Command::new("bash")
        .args(["-c", script])
        .current_dir(&world.cwd)
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
pub fn run_interactive(world: &World, script: &str, snippet: &Snippet) -> Result<(), String> {
    let env = world.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let first_prompt =
        snippet.command.contains(" -i ") || snippet.command.contains("--prompt-interactive");
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let p = pty::Pty::spawn(
            Path::new("/bin/bash"),
            &world.cwd,
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
pub fn run_server(world: &World, script: &str, port: u16) -> Result<(), String> {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("bash")
        .args(["-c", script])
        .process_group(0)
        .current_dir(&world.cwd)
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

pub fn initialize(port: u16, token: Option<&str>) -> Result<String, String> {
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

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Does the shown output appear in the real output, in order (`...` matches anything)?
pub fn output_matches(shown: &[String], real: &str) -> Result<(), String> {
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
pub fn run_block(servers: &Servers, meta: &Value, block: &Block) -> Vec<String> {
    let text: String = block.lines.iter().map(|s| s.command.as_str()).collect();
    let world = World::for_block(servers, &text);
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
        if let Err(why) = result.and_then(|()| world.check_home()) {
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

pub fn check_outcome(s: &Snippet, o: &Outcome) -> Result<(), String> {
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
pub fn run_all(blocks: &[Block]) -> Vec<String> {
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
