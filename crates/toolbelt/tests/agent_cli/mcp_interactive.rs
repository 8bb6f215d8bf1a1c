//! An MCP server's prompts and resources in the interactive agent, with the reference
//! server `@modelcontextprotocol/server-everything` (skipped outside CI when
//! `scripts/setup.sh` has not installed it).

use serde_json::json;
use toolbelt_model::fake_server::{FakeOpenAi, Reply};

use crate::pty::{Pty, keys};
use crate::support::Workspace;

/// The reference server's script, or `None` (skipped) outside CI when it is missing.
fn server_everything() -> Option<std::path::PathBuf> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../.cache/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok();
    if node && script.exists() {
        return Some(script);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "@modelcontextprotocol/server-everything is not available and CI must run this test; \
         scripts/setup.sh installs it"
    );
    eprintln!("skipped: @modelcontextprotocol/server-everything is not available");
    None
}

/// The text of each user message of the last request.
fn last_user_texts(server: &FakeOpenAi) -> Vec<String> {
    let body = server.last_request().unwrap().body;
    (body["messages"].as_array().unwrap().iter())
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The interactive agent in `w` on the fake model `server`, with server-everything
/// (`script`) configured, once its first frame is up.
fn agent_with_everything(w: &Workspace, server: &FakeOpenAi, script: &std::path::Path) -> Pty {
    let url = server.base_url();
    let servers = json!({"mcpServers": {"everything": {"command": "node", "args": [script]}}});
    let servers = servers.to_string();
    let args = [
        "--openai-base-url",
        url.as_str(),
        "-m",
        "fake-model",
        "--mcp-config",
        servers.as_str(),
    ];
    let pty = Pty::spawn(
        std::path::Path::new(env!("CARGO_BIN_EXE_toolbelt")),
        &w.ws(),
        w.dir.path(),
        &args,
        &[],
    );
    pty.wait_for(" mode (shift+tab");
    pty
}

/// [`agent_with_everything`] once the server's prompts and resources are listed (the
/// first frame waits for them: `mcp.waitAtStart`).
fn agent_with_everything_listed(
    w: &Workspace,
    server: &FakeOpenAi,
    script: &std::path::Path,
) -> Pty {
    w.write(
        ".qwen/settings.json",
        &json!({"mcp": {"waitAtStart": true}}).to_string(),
    );
    agent_with_everything(w, server, script)
}

/// Ctrl-D, and the agent exits 0.
fn quit(pty: Pty) {
    pty.send(keys::CTRL_D);
    let (code, screen) = pty.wait_exit_screen();
    assert_eq!(code, 0, "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_prompt_runs_as_a_slash_command_and_a_resource_is_attached() {
    let Some(script) = server_everything() else {
        return;
    };
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![Reply::text("sunny there"), Reply::text("read it")])
        .await
        .unwrap();
    let pty = agent_with_everything(&w, &server, &script);

    // A required argument missing: named, and nothing is sent.
    pty.line("/everything:args-prompt state=NY");
    pty.wait_for("needs the argument city");
    assert!(server.last_request().is_none());

    pty.line("/everything:args-prompt city=Lima");
    pty.wait_until("the answer", |s| {
        s.contains("sunny there") && !s.contains("esc to cancel")
    });
    let texts = last_user_texts(&server);
    assert!(texts[0].starts_with("What's weather in Lima?"), "{texts:?}");

    pty.line("what is in @everything:demo://resource/dynamic/text/5");
    pty.wait_until("the answer", |s| {
        s.contains("read it") && !s.contains("esc to cancel")
    });
    let texts = last_user_texts(&server);
    let last = texts.last().unwrap();
    assert!(
        last.contains("--- everything:demo://resource/dynamic/text/5 ---\nResource 5: This is a plaintext resource"),
        "{texts:?}"
    );
    quit(pty);
}

/// The first prompt names a resource of a server still starting (the agent's first frame
/// comes well before node's server is up): the resource is read once the server is up,
/// not refused as "offers no resources".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_of_a_server_still_starting_is_attached_once_it_is_up() {
    let Some(script) = server_everything() else {
        return;
    };
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![Reply::text("read it")])
        .await
        .unwrap();
    let pty = agent_with_everything(&w, &server, &script);
    pty.line("what is in @everything:demo://resource/dynamic/text/4");
    pty.wait_until("the answer", |s| {
        s.contains("read it") && !s.contains("esc to cancel")
    });
    let texts = last_user_texts(&server);
    assert!(
        texts[0].contains("--- everything:demo://resource/dynamic/text/4 ---\nResource 4: This is a plaintext resource"),
        "{texts:?}"
    );
    quit(pty);
}

/// The number before " resources" on the last `/mcp` screen.
fn resource_count(screen: &str) -> Option<usize> {
    let at = screen.rfind(" resources (")?;
    let digits: String = screen[..at]
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.chars().rev().collect::<String>().parse().ok()
}

/// A server that adds a resource during a run announces `resources/list_changed`; its
/// resources are listed again, and `/mcp` counts the new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_added_during_a_run_is_counted_after_the_announcement() {
    use toolbelt_model::{FinishReason, ModelTurn, ToolCall};
    let Some(script) = server_everything() else {
        return;
    };
    let w = Workspace::new();
    let gzip = Reply::turn(ModelTurn {
        tool_calls: vec![ToolCall {
            id: "g1".into(),
            name: "mcp__everything__gzip-file-as-resource".into(),
            arguments: json!({"name": "new.gz", "data": "data:text/plain;base64,aGk="}).to_string(),
        }],
        finish_reason: FinishReason::ToolCalls,
        ..Default::default()
    });
    let server = FakeOpenAi::start(vec![gzip, Reply::text("zipped")])
        .await
        .unwrap();
    let url = server.base_url();
    let servers =
        json!({"mcpServers": {"everything": {"command": "node", "args": [script], "trust": true}}});
    let servers = servers.to_string();
    let args = [
        "--openai-base-url",
        url.as_str(),
        "-m",
        "fake-model",
        "--mcp-config",
        servers.as_str(),
    ];
    // `/mcp` below counts the server's resources: it must be up before the prompt shows.
    w.write(
        ".qwen/settings.json",
        &json!({"mcp": {"waitAtStart": true}}).to_string(),
    );
    let pty = Pty::spawn(
        std::path::Path::new(env!("CARGO_BIN_EXE_toolbelt")),
        &w.ws(),
        w.dir.path(),
        &args,
        &[],
    );
    pty.wait_for(" mode (shift+tab");
    pty.line("/mcp");
    let before = resource_count(&pty.wait_for(" resources (")).unwrap();
    pty.line("zip something");
    pty.wait_until("the answer", |s| {
        s.contains("zipped") && !s.contains("esc to cancel")
    });
    pty.line("/mcp");
    // The last count on the screen is the second `/mcp`'s once it shows.
    let after = pty.wait_until("a higher count", |s| resource_count(s) == Some(before + 1));
    assert_eq!(resource_count(&after), Some(before + 1), "{after}");
    quit(pty);
}

/// Waiting for a server the prompt names ends when the person cancels: Esc during a start
/// that would take the server's whole `startupTimeout` (a minute here) ends the run at
/// once, for `@server:uri` and for `/server:prompt`, and nothing reaches the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn esc_ends_the_wait_for_a_server_the_prompt_names() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![Reply::text("never asked")])
        .await
        .unwrap();
    let url = server.base_url();
    // A server that never answers `initialize`.
    let servers = json!({"mcpServers": {"mute": {"command": "sleep", "args": ["300"],
        "startupTimeout": 60000}}});
    let servers = servers.to_string();
    let args = [
        "--openai-base-url",
        url.as_str(),
        "-m",
        "fake-model",
        "--mcp-config",
        servers.as_str(),
    ];
    let pty = Pty::spawn(
        std::path::Path::new(env!("CARGO_BIN_EXE_toolbelt")),
        &w.ws(),
        w.dir.path(),
        &args,
        &[],
    );
    pty.wait_for(" mode (shift+tab");
    pty.line("what is in @mute:doc://a");
    pty.wait_for("esc to cancel");
    pty.send(keys::ESC);
    pty.wait_until("the run to end", |s| {
        s.contains("Request cancelled") && !s.contains("esc to cancel")
    });
    // The same for a prompt command of that server.
    pty.line("/mute:greet");
    pty.wait_for("esc to cancel");
    pty.send(keys::ESC);
    pty.wait_until("the second run to end", |s| {
        s.matches("Request cancelled").count() == 2 && !s.contains("esc to cancel")
    });
    assert!(server.last_request().is_none(), "the model was asked");
    quit(pty);
}

/// What a server asks during a call is asked in the terminal's question dialog (issue
/// 46): server-everything's elicitation is declined there, and its sampling request,
/// approved, is answered by the session's model, whose answer the server passes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_elicitation_and_sampling_request_are_asked_in_the_dialog() {
    use toolbelt_model::{FinishReason, ModelTurn, ToolCall};
    let Some(script) = server_everything() else {
        return;
    };
    let call = |id: &str, tool: &str, arguments: serde_json::Value| {
        Reply::turn(ModelTurn {
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: format!("mcp__everything__{tool}"),
                arguments: arguments.to_string(),
            }],
            finish_reason: FinishReason::ToolCalls,
            ..Default::default()
        })
    };
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![
        call("c1", "trigger-elicitation-request", json!({})),
        call(
            "c2",
            "trigger-sampling-request",
            json!({"prompt": "ping", "maxTokens": 32}),
        ),
        Reply::text("all done"),
    ])
    .await
    .unwrap();
    let sampled = "You are a helpful test server.";
    server.add_route(sampled, vec![Reply::text("pong from the model")]);
    let url = server.base_url();
    let servers =
        json!({"mcpServers": {"everything": {"command": "node", "args": [script], "trust": true}}});
    let servers = servers.to_string();
    let args = [
        "--openai-base-url",
        &url,
        "-m",
        "fake-model",
        "--mcp-config",
        &servers,
    ];
    let pty = Pty::spawn(
        std::path::Path::new(env!("CARGO_BIN_EXE_toolbelt")),
        &w.ws(),
        w.dir.path(),
        &args,
        &[],
    );
    pty.wait_for(" mode (shift+tab");
    pty.line("ask the server");
    pty.wait_for("\"everything\" asks for input");
    pty.send("2");
    pty.wait_for("asks the session's model to answer");
    pty.send("1");
    pty.wait_until("the answer", |s| {
        s.contains("all done") && !s.contains("esc to cancel")
    });
    let results: Vec<String> = (server.requests().into_iter())
        .filter(|r| r.route.is_none())
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect();
    let results = results.join("\n");
    assert!(results.contains("User declined"), "{results}");
    assert!(results.contains("pong from the model"), "{results}");
    assert!(server.violations().is_empty(), "{:?}", server.violations());
    quit(pty);
}

/// A prompt command's arguments complete as they are typed: the names of the arguments,
/// then the values the server offers for one (`completion/complete`), narrowed by the
/// arguments already typed (server-everything's `completable-prompt` offers the members
/// of the department chosen).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_commands_arguments_complete_from_the_server() {
    let Some(script) = server_everything() else {
        return;
    };
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![Reply::text("promoted")])
        .await
        .unwrap();
    let pty = agent_with_everything_listed(&w, &server, &script);
    pty.send("/everything:compl");
    pty.wait_for("/everything:completable-prompt");
    pty.send(keys::TAB);
    pty.wait_for("department=");
    pty.send("department=Eng");
    pty.wait_for("department=Engineering");
    pty.send(keys::TAB);
    pty.send("name=");
    pty.wait_until("the members of Engineering", |s| {
        s.contains("name=Alice") && s.contains("name=Charlie") && !s.contains("name=David")
    });
    pty.send(keys::TAB);
    pty.send(keys::ENTER);
    pty.wait_until("the answer", |s| {
        s.contains("promoted") && !s.contains("esc to cancel")
    });
    let texts = last_user_texts(&server);
    assert!(
        texts[0].contains("Please promote Alice to the head of the Engineering team."),
        "{texts:?}"
    );
    quit(pty);
}

/// `@` completes a server's resources (`@server:uri`) before files: the static documents
/// of server-everything are offered as their name is typed, Tab takes the one
/// selected, and the resource it names is attached to the prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_completes_a_servers_resources_and_the_chosen_one_is_attached() {
    let Some(script) = server_everything() else {
        return;
    };
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![Reply::text("read the architecture")])
        .await
        .unwrap();
    let pty = agent_with_everything_listed(&w, &server, &script);
    pty.send("summarize @everything:demo://resource/static/document/arch");
    pty.wait_for("@everything:demo://resource/static/document/architecture.md");
    pty.send(keys::TAB);
    pty.send(keys::ENTER);
    pty.wait_until("the answer", |s| {
        s.contains("read the architecture") && !s.contains("esc to cancel")
    });
    let texts = last_user_texts(&server);
    let last = texts.last().unwrap();
    assert!(
        last.contains("--- everything:demo://resource/static/document/architecture.md ---"),
        "{texts:?}"
    );
    quit(pty);
}
