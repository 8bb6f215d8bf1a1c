//! What a server asks of its client (issue 46), with the real
//! `@modelcontextprotocol/server-everything`, which offers `trigger-elicitation-request`
//! and `trigger-sampling-request` only to a client that declares elicitation and
//! sampling: headless runs decline and refuse (and say so), a stream-JSON client answers
//! through control requests, the session's model samples only once allowed, and an
//! untrusted workspace cannot allow it.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use toolbelt_model::fake_server::{FakeOpenAi, Recorded, Reply};
use toolbelt_model::{FinishReason, ModelTurn, ToolCall};

use super::{Project, stderr, stdout};

/// The system prompt of server-everything's sampling request: its conversations are
/// answered by their own route of the fake model.
const SAMPLED: &str = "You are a helpful test server.";

fn call(id: &str, tool: &str, arguments: Value) -> Reply {
    Reply::turn(ModelTurn {
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: format!("mcp__everything__{tool}"),
            arguments: arguments.to_string(),
        }],
        finish_reason: FinishReason::ToolCalls,
        ..Default::default()
    })
}

/// The tool results a request carries.
fn tool_results(body: &Value) -> Vec<String> {
    (body["messages"].as_array().into_iter().flatten())
        .filter(|m| m["role"] == "tool")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

fn main_requests(model: &FakeOpenAi) -> Vec<Recorded> {
    (model.requests().into_iter())
        .filter(|r| r.route.is_none())
        .collect()
}

fn sampled_requests(model: &FakeOpenAi) -> Vec<Recorded> {
    (model.requests().into_iter())
        .filter(|r| r.route.as_deref() == Some(SAMPLED))
        .collect()
}

#[test]
fn headless_declines_an_elicitation_and_refuses_sampling_and_says_why() {
    let Some(script) = super::resources::everything_or_skip() else {
        return;
    };
    let project = Project::new(json!({"mcpServers": {
        "everything": {"command": "node", "args": [script], "trust": true}
    }}));
    let out = project.run(&[
        "tools",
        "call",
        "mcp__everything__trigger-elicitation-request",
        "{}",
    ]);
    let text = stdout(&out);
    assert!(text.contains("User declined"), "{text}\n{}", stderr(&out));
    assert!(
        stderr(&out).contains("declined: nobody can be asked in this run"),
        "{}",
        stderr(&out)
    );
    let out = project.run(&[
        "tools",
        "call",
        "mcp__everything__trigger-sampling-request",
        r#"{"prompt": "hello", "maxTokens": 50}"#,
    ]);
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        all.contains("refused the sampling request of MCP server \"everything\"")
            && all.contains("nobody can approve it in this run"),
        "{all}"
    );
}

/// A one-shot run (`-p`) calls the sampling tool; returns what the model server saw.
async fn headless_sampling(project: &Project, trusted: bool) -> FakeOpenAi {
    let model = FakeOpenAi::start(vec![
        call(
            "c1",
            "trigger-sampling-request",
            json!({"prompt": "ping", "maxTokens": 100000}),
        ),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    model.add_route(SAMPLED, vec![Reply::text("pong from the model")]);
    let url = model.base_url();
    let mut command = project.command(&["-p", "go", "--openai-base-url", &url, "-m", "fake"]);
    if !trusted {
        command.env_remove("TOOLBELT_TRUST_WORKSPACE");
    }
    let out = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("toolbelt hung")
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(model.violations().is_empty(), "{:?}", model.violations());
    model
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_allowed_in_the_settings_runs_headless_on_the_sessions_model_with_the_servers_limits()
 {
    let Some(script) = super::resources::everything_or_skip() else {
        return;
    };
    let project = Project::new(json!({"mcpServers": {
        "everything": {"command": "node", "args": [script], "trust": true, "sampling": "allow"}
    }}));
    let model = headless_sampling(&project, true).await;
    let sampled = sampled_requests(&model);
    assert_eq!(sampled.len(), 1, "{:?}", model.requests());
    let body = &sampled[0].body;
    // The server's system prompt and message, its temperature, its maxTokens capped,
    // and no tools.
    assert_eq!(body["messages"][0]["content"], SAMPLED, "{body}");
    assert!(
        body["messages"][1]["content"].to_string().contains("ping"),
        "{body}"
    );
    assert_eq!(body["max_tokens"], 8192, "{body}");
    assert!(
        (body["temperature"].as_f64().unwrap() - 0.7).abs() < 1e-6,
        "{body}"
    );
    assert!(
        body.get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty)),
        "{body}"
    );
    // The server got the text, the model's name and why it stopped.
    let results = tool_results(&main_requests(&model)[1].body).join("\n");
    assert!(results.contains("pong from the model"), "{results}");
    assert!(results.contains("\"model\": \"fake\""), "{results}");
    assert!(results.contains("\"stopReason\": \"endTurn\""), "{results}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_workspace_cannot_allow_headless_sampling() {
    let Some(script) = super::resources::everything_or_skip() else {
        return;
    };
    // The person's own settings name the server; the cloned folder's file tries to let
    // it sample unasked.
    let project = Project::new(json!({"mcpServers": {
        "everything": {"command": "node", "args": [&script], "trust": true, "sampling": "allow"}
    }}));
    let user = project.dir.path().join("home/.qwen");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("settings.json"),
        json!({"mcpServers": {"everything": {"command": "node", "args": [&script], "trust": true}}})
            .to_string(),
    )
    .unwrap();
    let model = headless_sampling(&project, false).await;
    assert!(
        sampled_requests(&model).is_empty(),
        "{:?}",
        model.requests()
    );
    let results = tool_results(&main_requests(&model)[1].body).join("\n");
    assert!(
        results.contains("nobody can approve it in this run"),
        "{results}"
    );
}

/// A stream-JSON session with one prompt; `answer` gives the response to each of
/// toolbelt's `elicitation` and `mcp_sampling` requests. Returns every message read.
async fn stream_session(
    project: &Project,
    url: &str,
    mut answer: impl FnMut(&Value) -> Value,
) -> Vec<Value> {
    let args = [
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--channel=SDK",
        "--openai-base-url",
        url,
        "-m",
        "fake",
    ];
    let mut command = project.command(&args);
    command.stdin(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let opening = [
        json!({"type": "control_request", "request_id": "init", "request": {"subtype": "initialize"}}),
        json!({"type": "user", "session_id": "", "parent_tool_use_id": null,
               "message": {"role": "user", "content": "go"}}),
    ];
    for line in opening {
        let pipe = stdin.as_mut().unwrap();
        pipe.write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    let mut messages = Vec::new();
    let reading = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            let subtype = message["request"]["subtype"].as_str().unwrap_or_default();
            if message["type"] == "control_request"
                && ["elicitation", "mcp_sampling"].contains(&subtype)
            {
                let reply = json!({"type": "control_response", "response": {
                    "subtype": "success", "request_id": message["request_id"],
                    "response": answer(&message["request"])}});
                let pipe = stdin.as_mut().unwrap();
                pipe.write_all(format!("{reply}\n").as_bytes())
                    .await
                    .unwrap();
            }
            if message["type"] == "result" {
                // The turn ended: closing stdin ends the session.
                stdin = None;
            }
            messages.push(message);
        }
    };
    tokio::time::timeout(Duration::from_secs(60), reading)
        .await
        .expect("toolbelt hung");
    let status = child.wait().await.unwrap();
    assert!(status.success(), "{messages:?}");
    messages
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_json_client_answers_an_elicitation_and_the_server_gets_the_content() {
    let Some(script) = super::resources::everything_or_skip() else {
        return;
    };
    let project = Project::new(json!({"mcpServers": {
        "everything": {"command": "node", "args": [script], "trust": true}
    }}));
    let model = FakeOpenAi::start(vec![
        call("c1", "trigger-elicitation-request", json!({})),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let mut asked = Vec::new();
    stream_session(&project, &model.base_url(), |request| {
        asked.push(request.clone());
        json!({"action": "accept", "content": {"name": "Ada Lovelace", "check": true, "integer": 7}})
    })
    .await;
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["mcp_server_name"], "everything");
    assert_eq!(asked[0]["mode"], "form");
    assert_eq!(asked[0]["requested_schema"]["required"], json!(["name"]));
    let results = tool_results(&main_requests(&model)[1].body).join("\n");
    assert!(
        results.contains("User provided the requested information"),
        "{results}"
    );
    assert!(results.contains("- Name: Ada Lovelace"), "{results}");
    assert!(results.contains("- Favorite Integer: 7"), "{results}");
    assert!(model.violations().is_empty(), "{:?}", model.violations());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_json_client_approves_one_sampling_request_and_denies_the_next() {
    let Some(script) = super::resources::everything_or_skip() else {
        return;
    };
    let project = Project::new(json!({"mcpServers": {
        "everything": {"command": "node", "args": [script], "trust": true}
    }}));
    let model = FakeOpenAi::start(vec![
        call(
            "c1",
            "trigger-sampling-request",
            json!({"prompt": "first", "maxTokens": 64}),
        ),
        call(
            "c2",
            "trigger-sampling-request",
            json!({"prompt": "second", "maxTokens": 64}),
        ),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    model.add_route(SAMPLED, vec![Reply::text("pong from the model")]);
    let mut asked = Vec::new();
    stream_session(&project, &model.base_url(), |request| {
        asked.push(request.clone());
        if asked.len() == 1 {
            json!({"behavior": "allow"})
        } else {
            json!({"behavior": "deny", "message": "not this time"})
        }
    })
    .await;
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0]["mcp_server_name"], "everything");
    assert_eq!(asked[0]["system_prompt"], SAMPLED);
    assert_eq!(asked[0]["max_tokens"], 64);
    assert!(
        asked[0]["messages"][0]["text"]
            .as_str()
            .unwrap()
            .contains("first")
    );
    // Only the approved request reached the model.
    assert_eq!(sampled_requests(&model).len(), 1);
    let main = main_requests(&model);
    let first = tool_results(&main[1].body).join("\n");
    assert!(first.contains("pong from the model"), "{first}");
    let second = tool_results(&main[2].body).join("\n");
    assert!(second.contains("not this time"), "{second}");
    assert!(model.violations().is_empty(), "{:?}", model.violations());
}

/// A resource the model read from a server that offers subscriptions is subscribed to;
/// the server's `notifications/resources/updated` reaches the model as a reminder with
/// its next request. server-everything sends one for each subscription at once when
/// `toggle-subscriber-updates` starts its updates (and every 5 s after).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribed_resource_that_changed_is_named_to_the_model() {
    let Some(script) = super::resources::everything_or_skip() else {
        return;
    };
    // The first request needs the server's resource tools.
    let project = Project::new(json!({"mcp": {"waitAtStart": true}, "mcpServers": {
        "everything": {"command": "node", "args": [script], "trust": true}
    }}));
    let uri = "demo://resource/dynamic/text/3";
    let read = Reply::turn(ModelTurn {
        tool_calls: vec![ToolCall {
            id: "c0".into(),
            name: "read_mcp_resource".into(),
            arguments: json!({"server": "everything", "uri": uri}).to_string(),
        }],
        finish_reason: FinishReason::ToolCalls,
        ..Default::default()
    });
    let model = FakeOpenAi::start(vec![
        read,
        call("c1", "toggle-subscriber-updates", json!({})),
        call("c2", "echo", json!({"message": "again"})),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let url = model.base_url();
    let mut command = project.command(&["-p", "go", "--openai-base-url", &url, "-m", "fake"]);
    let out = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("toolbelt hung")
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(model.violations().is_empty(), "{:?}", model.violations());
    let reminder = format!("The MCP server \"everything\" says the resource {uri} changed");
    let said = |r: &Recorded| {
        (r.body["messages"].as_array().into_iter().flatten())
            .any(|m| m["content"].as_str().is_some_and(|c| c.contains(&reminder)))
    };
    let requests = main_requests(&model);
    assert_eq!(requests.len(), 4);
    // Not before the server said so; said once it did (the notification comes before
    // the toggle's result; the echo's round trip leaves its handler time to run).
    assert!(!said(&requests[1]), "{}", requests[1].body);
    assert!(said(&requests[3]), "{}", requests[3].body);
}
