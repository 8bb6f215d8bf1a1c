//! A session does not wait for its MCP servers: a server held back until the model has
//! its first request joins later, with a note to the model, and a server that cannot
//! start leaves the session running and says why in `mcp list`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{FinishReason, ModelTurn, ToolCall};

use super::{Project, stderr, stdout, testserver};

/// The tool names a recorded request offered.
fn offered(body: &Value) -> Vec<String> {
    (body["tools"].as_array().into_iter().flatten())
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

/// The texts of a request's messages, whatever their role.
fn texts(body: &Value) -> Vec<String> {
    (body["messages"].as_array().into_iter().flatten())
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_request_does_not_wait_for_a_slow_server_whose_tools_join_later_with_a_note() {
    let project = Project::new(json!({}));
    // The slow server starts only once the model has the session's first request: it
    // cannot be up before that request, whatever the machine's speed.
    let gate = project.dir.path().join("gate");
    let slow = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; exec '{}'",
        gate.display(),
        testserver()
    );
    let servers = json!({"mcpServers": {
        "slow": {"command": "sh", "args": ["-c", slow], "trust": true, "startupTimeout": 30000},
        "fast": {"command": testserver()},
        "broken": {"command": "/nonexistent/mcp-server"}
    }});
    // The model calls the slow server's tool before it is offered (a model may know a
    // server's tools): the call waits for the server's start, not a second copy.
    let call = Reply::turn(ModelTurn {
        tool_calls: vec![ToolCall {
            id: "c1".into(),
            name: "mcp__slow__echo".into(),
            arguments: json!({"message": "late"}).to_string(),
        }],
        finish_reason: FinishReason::ToolCalls,
        ..Default::default()
    });
    let model = FakeOpenAi::start(vec![call, Reply::text("done")])
        .await
        .unwrap();
    let url = model.base_url();
    let config = servers.to_string();
    let args = [
        "-p",
        "go",
        "--openai-base-url",
        &url,
        "-m",
        "fake",
        "--mcp-config",
        &config,
    ];
    let started = Instant::now();
    let child = project.command(&args).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while model.request_count() == 0 {
        assert!(Instant::now() < deadline, "no model request");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let first = model.requests()[0].clone();
    std::fs::write(&gate, "").unwrap();
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("toolbelt hung")
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("done"), "{}", stdout(&out));

    // A deadline, not a synchronisation: far under the slow server's 30 s start-up
    // timeout, which is what the first request waited for before.
    assert!(
        first.at - started < Duration::from_secs(5),
        "{:?}",
        first.at - started
    );
    assert!(
        !offered(&first.body)
            .iter()
            .any(|t| t.starts_with("mcp__slow__")),
        "{:?}",
        offered(&first.body)
    );
    let requests = model.requests();
    let last = &requests.last().unwrap().body;
    assert!(
        offered(last).iter().any(|t| t == "mcp__slow__echo"),
        "{:?}",
        offered(last)
    );
    let said = texts(last).join("\n");
    assert!(said.contains("echo: late"), "{said}");
    assert!(
        said.contains(
            "The MCP server \"slow\" has finished starting: its tools are now available ("
        ) && said.contains("mcp__slow__echo"),
        "{said}"
    );
    assert!(model.violations().is_empty(), "{:?}", model.violations());

    // The server that cannot start: the session ran; `mcp list` says why.
    let listed = project.run(&[
        "--mcp-config",
        &json!({"mcpServers": {
            "broken": {"command": "/nonexistent/mcp-server"}
        }})
        .to_string(),
        "mcp",
        "list",
        "--json",
    ]);
    let servers: Value = serde_json::from_str(&stdout(&listed)).unwrap();
    assert_eq!(servers[0]["status"], "failed", "{servers}");
    let reason = servers[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("cannot start `/nonexistent/mcp-server`"),
        "{reason}"
    );
}

#[test]
fn the_model_sees_a_call_over_the_servers_timeout_named_with_the_setting() {
    let project = Project::new(json!({"mcpServers": {
        "t": {"command": testserver(), "timeout": 1000}
    }}));
    let started = Instant::now();
    let out = project.run(&[
        "tools",
        "call",
        "mcp__t__sleep",
        r#"{"ms": 120000}"#,
        "--yes",
    ]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        text.contains("did not answer within 1 s (the server's `timeout` setting"),
        "{text}"
    );
    // A deadline far under the tool's two minutes.
    assert!(started.elapsed() < Duration::from_secs(60));
}

/// A declared tool bound to an MCP server's tool is registered over that tool at start:
/// the session waits for that server (and for it only).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_tool_bound_to_a_server_is_offered_from_the_first_request() {
    let project = Project::new(json!({}));
    std::fs::create_dir_all(project.root().join(".qwen/tools")).unwrap();
    let manifest = json!({
        "languageModelTools": [{"name": "shout", "displayName": "Shout", "modelDescription": "Echoes."}],
        "bindings": {"shout": {"mcp": "fast/echo"}}
    });
    std::fs::write(
        project.root().join(".qwen/tools/shout.json"),
        manifest.to_string(),
    )
    .unwrap();
    let config = json!({"mcpServers": {"fast": {"command": testserver()}}}).to_string();
    let model = FakeOpenAi::start(vec![Reply::text("done")]).await.unwrap();
    let url = model.base_url();
    let args = [
        "-p",
        "go",
        "--openai-base-url",
        &url,
        "-m",
        "fake",
        "--mcp-config",
        &config,
    ];
    let out = project.command(&args).output().await.unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let first = &model.requests()[0].body;
    assert!(
        offered(first).iter().any(|t| t == "shout"),
        "{:?}\n{}",
        offered(first),
        stderr(&out)
    );
}
