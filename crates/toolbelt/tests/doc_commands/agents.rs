//! Every editor configuration the docs show for `toolbelt --acp` (a JSON block's
//! `agent_servers` entries: Zed, JetBrains; a CodeCompanion adapter's `commands` in a
//! Lua block) starts, as the editor would start it, an agent that answers the Agent
//! Client Protocol's `initialize`; then the editor closes the pipe and the agent ends.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use serde_json::Value;

use super::LINE_DEADLINE;
use super::extract::{doc_files, json_blocks};
use super::world::{World, servers};

/// What an editor sends first.
const INITIALIZE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#,
    "\n"
);

/// The bodies of the blocks fenced as `lang`, with where each starts.
fn fenced(name: &str, text: &str, lang: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current: Option<(String, String)> = None;
    let mut inside_other = false;
    for (n, line) in text.lines().enumerate() {
        if let Some(fence) = line.trim_start().strip_prefix("```") {
            if let Some(block) = current.take() {
                out.push(block);
            } else if inside_other {
                inside_other = false;
            } else if fence.trim() == lang {
                current = Some((format!("{name}:{}", n + 1), String::new()));
            } else {
                inside_other = true;
            }
            continue;
        }
        if let Some((_, body)) = current.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

/// The quoted strings of the first `{ ... }` after `commands = { default =` in a Lua
/// block: the command line CodeCompanion runs.
fn lua_command(body: &str) -> Option<Vec<String>> {
    let start = body.find("commands = { default = {")? + "commands = { default = {".len();
    let list = &body[start..start + body[start..].find('}')?];
    Some(
        list.split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect(),
    )
}

/// A command line for `bash -c`: each word in single quotes, the environment first.
fn script(env: &[(String, String)], words: &[String]) -> String {
    let quote = |w: &str| format!("'{}'", w.replace('\'', r"'\''"));
    let mut parts: Vec<String> = env
        .iter()
        .map(|(k, v)| format!("{k}={}", quote(v)))
        .collect();
    parts.extend(words.iter().map(|w| quote(w)));
    parts.join(" ")
}

/// An agent an editor is configured to start: where the docs show it, its environment
/// and its command line.
type Agent = (String, Vec<(String, String)>, Vec<String>);

/// The `agent_servers` entries of the JSON blocks.
fn json_agents(name: &str, text: &str) -> Vec<Agent> {
    let mut out = Vec::new();
    for (at, body) in json_blocks(name, text) {
        let value: Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{at}: not JSON: {e}"));
        let Some(map) = value.get("agent_servers").and_then(Value::as_object) else {
            continue;
        };
        for (agent, entry) in map {
            let mut words = vec![entry["command"].as_str().unwrap().to_string()];
            if let Some(args) = entry["args"].as_array() {
                words.extend(args.iter().map(|a| a.as_str().unwrap().to_string()));
            }
            let env = entry["env"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                        .collect()
                })
                .unwrap_or_default();
            out.push((format!("{at} ({agent})"), env, words));
        }
    }
    out
}

/// Starts `script` in `world` as an editor starts its agent: sends `initialize`, reads
/// the answer, closes the pipe, waits for the end. The answer's line and the exit code.
fn editor_starts(world: &World, script: &str) -> Result<(String, i32), String> {
    let mut child = Command::new("bash")
        .args(["-c", script])
        .current_dir(&world.cwd)
        .env_clear()
        .envs(world.env())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(INITIALIZE.as_bytes())
        .map_err(|e| e.to_string())?;
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let answer = rx.recv_timeout(LINE_DEADLINE);
    drop(stdin);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait()));
    let code = match rx.recv_timeout(LINE_DEADLINE) {
        Ok(status) => status.map_err(|e| e.to_string())?.code().unwrap_or(-1),
        Err(_) => return Err("still running after its input closed".to_string()),
    };
    let answer = answer.map_err(|_| "no answer to initialize".to_string())?;
    Ok((answer, code))
}

#[test]
fn every_editor_configuration_starts_an_acp_agent() {
    let servers = servers();
    let mut found = 0;
    for (name, text) in doc_files() {
        let mut agents = json_agents(&name, &text);
        for (at, body) in fenced(&name, &text, "lua") {
            if let Some(words) = lua_command(&body) {
                agents.push((at, Vec::new(), words));
            }
        }
        for (at, env, words) in agents {
            assert_eq!(words[0], "toolbelt", "{at}: {words:?}");
            let world = World::new(&servers);
            let (line, code) = editor_starts(&world, &script(&env, &words))
                .unwrap_or_else(|e| panic!("{at}: {e}"));
            assert_eq!(code, 0, "{at}: {line}");
            let answer: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("{at}: not a JSON answer ({e}): {line}"));
            assert_eq!(answer["id"], 1, "{at}: {answer}");
            assert_eq!(answer["result"]["protocolVersion"], 1, "{at}: {answer}");
            assert_eq!(
                answer["result"]["agentInfo"]["name"], "toolbelt",
                "{at}: {answer}"
            );
            found += 1;
        }
    }
    // Zed, JetBrains and CodeCompanion at least: a parser that found none would pass.
    assert!(found >= 3, "only {found} editor configurations found");
}

#[test]
fn a_codecompanion_adapter_names_its_command_line() {
    let body = "commands = { default = { \"toolbelt\", \"--acp\" } },\n";
    assert_eq!(
        lua_command(body),
        Some(vec!["toolbelt".to_string(), "--acp".to_string()])
    );
    assert_eq!(
        script(&[("K".into(), "a b".into())], &["x'y".to_string()]),
        r"K='a b' 'x'\''y'"
    );
}
