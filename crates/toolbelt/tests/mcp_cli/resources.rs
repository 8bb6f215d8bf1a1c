//! MCP resources and prompts with the reference server `server-everything`: the resource
//! tools, `@server:uri`, prompts as commands (`-p`, stream-JSON) and `mcp list`'s counts.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use super::{Project, server_everything, stderr, stdout, testserver, toolbelt};

/// `server_everything()`, or `None` (skipped) outside CI when it is not installed.
pub(crate) fn everything_or_skip() -> Option<PathBuf> {
    match server_everything() {
        Ok(script) => Some(script),
        Err(why) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "@modelcontextprotocol/server-everything is not available and CI must run this \
                 test ({why}); scripts/setup.sh installs it"
            );
            eprintln!("skipped: @modelcontextprotocol/server-everything is not available: {why}");
            None
        }
    }
}

fn everything_project(script: &Path) -> Project {
    Project::new(json!({"mcpServers": {
        "everything": {"command": "node", "args": [script]}
    }}))
}

/// A fake OpenAI endpoint that answers `text` to every request, on a runtime of its own.
fn fake_model(
    text: &str,
) -> (
    tokio::runtime::Runtime,
    toolbelt_model::fake_server::FakeOpenAi,
) {
    use toolbelt_model::fake_server::{FakeOpenAi, Reply};
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let model = runtime.block_on(FakeOpenAi::start(Vec::new())).unwrap();
    model.set_fallback(Reply::text(text));
    (runtime, model)
}

/// The text of the user message of the model's first request.
fn first_user_text(model: &toolbelt_model::fake_server::FakeOpenAi) -> String {
    let requests = model.requests();
    let messages = requests[0].body["messages"].as_array().unwrap().clone();
    let user = messages.iter().find(|m| m["role"] == "user").unwrap();
    match &user["content"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[test]
fn mcp_list_counts_tools_resources_and_prompts() {
    let Some(script) = everything_or_skip() else {
        return;
    };
    let project = everything_project(&script);
    let out = project.run(&["mcp", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let counts = &listed[0]["counts"];
    assert_eq!(listed[0]["transport"], "stdio");
    assert_eq!(listed[0]["status"], "connected");
    assert!(counts["tools"].as_u64().unwrap() > 5, "{counts}");
    assert!(counts["resources"].as_u64().unwrap() > 0, "{counts}");
    assert_eq!(counts["resourceTemplates"], 2, "{counts}");
    assert!(counts["prompts"].as_u64().unwrap() >= 2, "{counts}");
    let out = project.run(&["mcp", "list"]);
    let text = stdout(&out);
    let line = format!(
        "{} tools, {} resources (2 templates), {} prompts",
        counts["tools"], counts["resources"], counts["prompts"]
    );
    assert!(text.contains(&line), "{text}");
}

#[test]
fn resource_tools_list_and_read_text_and_blob_resources() {
    let Some(script) = everything_or_skip() else {
        return;
    };
    let project = everything_project(&script);
    let out = project.run(&["tools", "list"]);
    for tool in ["list_mcp_resources", "read_mcp_resource"] {
        assert!(stdout(&out).contains(tool), "{}", stdout(&out));
    }
    let out = project.run(&["tools", "call", "list_mcp_resources", "{}"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Server \"everything\":"), "{text}");
    assert!(
        text.contains("- demo://resource/static/document/"),
        "{text}"
    );
    assert!(text.contains("Resource templates (2):"), "{text}");
    assert!(
        text.contains("- demo://resource/dynamic/text/{resourceId}"),
        "{text}"
    );

    let read = |uri: &str| {
        let args = json!({"server": "everything", "uri": uri}).to_string();
        project.run(&["tools", "call", "read_mcp_resource", &args, "--json"])
    };
    // What the model reads: the first part's text.
    let model_text = |out: &Output| {
        let result: Value = serde_json::from_str(&stdout(out)).unwrap();
        result["llm_content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let out = read("demo://resource/dynamic/text/3");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = model_text(&out);
    assert!(
        text.starts_with("Resource 3: This is a plaintext resource"),
        "{text}"
    );
    // A base64 blob of text/plain comes back decoded.
    let out = read("demo://resource/dynamic/blob/4");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = model_text(&out);
    assert!(
        text.starts_with("Resource 4: This is a base64 blob"),
        "{text}"
    );

    // Unknown uri, unknown server: tool errors that say so.
    let out = read("demo://resource/nowhere");
    assert!(!out.status.success());
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("resources/read failed"), "{said}");
    let args = json!({"server": "nobody", "uri": "demo://x"}).to_string();
    let out = project.run(&["tools", "call", "read_mcp_resource", &args]);
    assert!(!out.status.success());
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        said.contains("no MCP server named \"nobody\"; servers with resources: everything"),
        "{said}"
    );
}

/// Claude Code's names for the resource tools work in permission rules.
#[test]
fn a_deny_rule_on_read_mcp_resource_tool_refuses_the_read() {
    let Some(script) = everything_or_skip() else {
        return;
    };
    let project = Project::new(json!({
        "mcpServers": {"everything": {"command": "node", "args": [script]}},
        "permissions": {"deny": ["ReadMcpResourceTool"]}
    }));
    let args = json!({"server": "everything", "uri": "demo://resource/dynamic/text/1"}).to_string();
    let out = project.run(&["tools", "call", "read_mcp_resource", &args]);
    assert!(!out.status.success());
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!said.contains("plaintext resource"), "{said}");
    assert!(said.to_lowercase().contains("denied"), "{said}");
    // The listing is another tool: not denied.
    let out = project.run(&["tools", "call", "list_mcp_resources", "{}"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Asking a server that has no resources for one is an error that names the servers
/// that have some.
#[test]
fn reading_from_a_server_without_resources_says_which_servers_have_them() {
    let Some(script) = everything_or_skip() else {
        return;
    };
    let project = Project::new(json!({"mcpServers": {
        "everything": {"command": "node", "args": [script]},
        "t": {"command": testserver()}
    }}));
    let args = json!({"server": "t", "uri": "demo://x"}).to_string();
    let out = project.run(&["tools", "call", "read_mcp_resource", &args]);
    assert!(!out.status.success());
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        said.contains("MCP server \"t\" offers no resources; servers with resources: everything"),
        "{said}"
    );
}

/// A server without resources: the resource tools are not offered.
#[test]
fn resource_tools_are_offered_only_when_a_server_has_resources() {
    let project = Project::new(json!({"mcpServers": {"t": {"command": testserver()}}}));
    let out = project.run(&["tools", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("mcp__t__"), "{text}");
    // Not in the session's table; named only among the tools offered elsewhere, with
    // its condition.
    let (offered, elsewhere) = text
        .split_once("Offered in other sessions")
        .unwrap_or((text.as_str(), ""));
    assert!(!offered.contains("list_mcp_resources"), "{text}");
    assert!(
        elsewhere.contains("list_mcp_resources  an MCP server has resources"),
        "{text}"
    );
}

#[test]
fn at_server_uri_in_a_prompt_attaches_the_resource() {
    let Some(script) = everything_or_skip() else {
        return;
    };
    let project = everything_project(&script);
    let (_runtime, model) = fake_model("noted");
    let url = model.base_url();
    let out = project.run(&[
        "--openai-base-url",
        &url,
        "-m",
        "m",
        "-p",
        "summarize @everything:demo://resource/dynamic/text/7 please",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let user = first_user_text(&model);
    assert!(
        user.contains("--- everything:demo://resource/dynamic/text/7 ---\nResource 7: This is a plaintext resource"),
        "{user}"
    );
}

#[test]
fn a_prompt_with_arguments_runs_as_a_slash_command() {
    let Some(script) = everything_or_skip() else {
        return;
    };
    let project = everything_project(&script);
    let (_runtime, model) = fake_model("sunny");
    let url = model.base_url();
    let out = project.run(&[
        "--openai-base-url",
        &url,
        "-m",
        "m",
        "-p",
        "/everything:args-prompt city=\"New York\" state=NY",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let user = first_user_text(&model);
    assert!(
        user.starts_with("What's weather in New York, NY?"),
        "{user}"
    );

    // Missing the required argument: named, and nothing reaches the model.
    let out = project.run(&[
        "--openai-base-url",
        &url,
        "-m",
        "m",
        "-p",
        "/everything:args-prompt state=NY",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("/everything:args-prompt needs the argument city"),
        "{}",
        stderr(&out)
    );
    assert_eq!(model.requests().len(), 1);
}

#[test]
fn stream_json_lists_prompts_as_commands_and_runs_one() {
    let Some(script) = everything_or_skip() else {
        return;
    };
    let project = everything_project(&script);
    let (_runtime, model) = fake_model("sunny");
    let url = model.base_url();
    let input = [
        json!({"type": "control_request", "request_id": "init", "request": {"subtype": "initialize"}}),
        json!({"type": "control_request", "request_id": "cmds", "request": {"subtype": "supported_commands"}}),
        json!({"type": "user", "session_id": "", "parent_tool_use_id": null,
               "message": {"role": "user", "content": "/everything:args-prompt city=Oslo"}}),
        json!({"type": "user", "session_id": "", "parent_tool_use_id": null,
               "message": {"role": "user", "content": "and @everything:demo://resource/dynamic/text/2"}}),
    ];
    let out = run_stream_json(&project, &url, &input);
    assert!(out.status.success(), "{}", stderr(&out));
    let messages: Vec<Value> = stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let commands = messages
        .iter()
        .find(|m| m["response"]["request_id"] == "cmds")
        .map(|m| m["response"]["response"]["commands"].clone())
        .unwrap_or_else(|| panic!("no supported_commands answer: {messages:?}"));
    let args_prompt = commands
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "everything:args-prompt")
        .unwrap_or_else(|| panic!("{commands}"));
    assert_eq!(args_prompt["argumentHint"], "city=... [state=...]");
    // `system/init` is what the session had at its start: servers start in the
    // background, so the server's prompts are there only if it was already up.
    let init = messages
        .iter()
        .find(|m| m["type"] == "system" && m["subtype"] == "init")
        .unwrap();
    let up = init["mcp_servers"][0]["status"] == "connected";
    assert_eq!(
        up,
        init["slash_commands"]
            .as_array()
            .unwrap()
            .contains(&json!("everything:args-prompt")),
        "{init}"
    );
    let user = first_user_text(&model);
    assert!(user.starts_with("What's weather in Oslo?"), "{user}");
    // The second message's `@server:uri` reached the model with the resource's text.
    let requests = model.requests();
    let last = requests.last().unwrap().body["messages"].to_string();
    assert!(
        last.contains("--- everything:demo://resource/dynamic/text/2 ---\\nResource 2: This is a plaintext resource"),
        "{last}"
    );
}

/// `toolbelt --input-format stream-json --output-format stream-json` in `project`
/// against the fake model at `url`, given `input` (one message a line) and end of input.
fn run_stream_json(project: &Project, url: &str, input: &[Value]) -> Output {
    let input = input
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    let mut child = Command::new(toolbelt())
        .args(["--openai-base-url", url, "-m", "m"])
        .args([
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
        ])
        .current_dir(project.root())
        .env("HOME", project.dir.path().join("home"))
        .env("TOOLBELT_HOME", project.dir.path().join("home/.toolbelt"))
        .env("TOOLBELT_TRUST_WORKSPACE", "1")
        .env(
            "TOOLBELT_SYSTEM_SETTINGS_PATH",
            project.dir.path().join("no-system-settings.json"),
        )
        .env_remove("TOOLBELT_LOG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

/// The first message names a resource of a server still starting (servers start beside
/// the first turn; node takes a few hundred milliseconds): it is read once the server is
/// up, not refused as "offers no resources".
#[test]
fn stream_json_reads_a_resource_of_a_server_still_starting() {
    let Some(script) = everything_or_skip() else {
        return;
    };
    let project = everything_project(&script);
    let (_runtime, model) = fake_model("noted");
    let url = model.base_url();
    let input = [
        json!({"type": "user", "session_id": "", "parent_tool_use_id": null,
        "message": {"role": "user", "content": "summarize @everything:demo://resource/dynamic/text/3"}}),
    ];
    let out = run_stream_json(&project, &url, &input);
    assert!(out.status.success(), "{}", stderr(&out));
    let user = first_user_text(&model);
    assert!(
        user.contains("--- everything:demo://resource/dynamic/text/3 ---\nResource 3: This is a plaintext resource"),
        "{user}\n{}",
        stderr(&out)
    );
}

/// A resource the server makes during the run (server-everything's gzip tool registers a
/// session resource): the model reads it, and a binary blob is named with its type and
/// size, not dumped.
#[test]
fn a_binary_resource_made_during_the_run_is_named_not_dumped() {
    use toolbelt_model::fake_server::{FakeOpenAi, Reply};
    use toolbelt_model::{FinishReason, ModelTurn, ToolCall};
    let Some(script) = everything_or_skip() else {
        return;
    };
    let project = Project::new(json!({"mcpServers": {
        "everything": {"command": "node", "args": [script], "trust": true}
    }}));
    let call = |id: &str, name: &str, arguments: Value| {
        Reply::turn(ModelTurn {
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: arguments.to_string(),
            }],
            finish_reason: FinishReason::ToolCalls,
            ..Default::default()
        })
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let model = runtime
        .block_on(FakeOpenAi::start(vec![
            call(
                "g1",
                "mcp__everything__gzip-file-as-resource",
                json!({"name": "hi.gz", "data": "data:text/plain;base64,aGVsbG8gd29ybGQ="}),
            ),
            call(
                "r1",
                "read_mcp_resource",
                json!({"server": "everything", "uri": "demo://resource/session/hi.gz"}),
            ),
            Reply::text("done"),
        ]))
        .unwrap();
    let url = model.base_url();
    let out = project.run(&["--openai-base-url", &url, "-m", "m", "-p", "zip it"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = model.requests();
    let messages = requests.last().unwrap().body["messages"].clone();
    let read = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "r1")
        .unwrap_or_else(|| panic!("{messages}"));
    let text = read["content"].as_str().unwrap();
    assert!(
        text.starts_with("[Resource demo://resource/session/hi.gz: ")
            && text.ends_with(" bytes of application/gzip, not shown]"),
        "{text}"
    );
}
