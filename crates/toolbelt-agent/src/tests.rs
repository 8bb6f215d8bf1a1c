//! The loop against the fake OpenAI server (which checks that every call is answered
//! once, in order) and against the replay model.

use std::sync::Mutex;
use toolbelt_engine::{scheduler::CallRules, scheduler::Permissions};

use serde_json::{Value, json};
use toolbelt_config::ApprovalMode;
use toolbelt_config::settings::Settings;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ExecContext, Invocation, Kind, Tool, ToolError, ToolResult,
    WorkspaceRoots,
};
use toolbelt_engine::registry::Origin;
use toolbelt_engine::scheduler::CallState;
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{
    ModelTurn, OpenAiClient, OpenAiConfig, ReplayModel, RetryPolicy, parse_script,
};

use super::*;

/// `note` echoes its value; `picture` returns a tiny PNG; `wait` runs until cancelled;
/// `broken` fails, with a text that does not say so.
struct TestTool(&'static str);

struct TestCall(&'static str, String);

impl Tool for TestTool {
    fn name(&self) -> &str {
        self.0
    }
    fn display_name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "test"
    }
    fn kind(&self) -> Kind {
        Kind::Read
    }
    fn parameter_schema(&self) -> &Value {
        static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        SCHEMA
            .get_or_init(|| json!({"type": "object", "properties": {"value": {"type": "string"}}}))
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let v = args["value"].as_str().unwrap_or("").to_string();
        Ok(Box::new(TestCall(self.0, v)))
    }
}

impl Invocation for TestCall {
    fn describe(&self) -> String {
        format!("{} {}", self.0, self.1)
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }
    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            match self.0 {
                "picture" => ToolResult {
                    llm_content: vec![
                        Part::text("a picture"),
                        Part::InlineData {
                            mime_type: "image/png".into(),
                            data: vec![137, 80, 78, 71],
                            display_name: None,
                        },
                    ],
                    return_display: toolbelt_core::Display::markdown("picture"),
                    error: None,
                },
                "broken" => ToolResult {
                    llm_content: vec![Part::text("it broke")],
                    return_display: toolbelt_core::Display::markdown("it broke"),
                    error: Some(ToolError::new(
                        toolbelt_core::ErrorKind::ExecutionFailed,
                        "it broke",
                    )),
                },
                "wait" => {
                    ctx.cancel.cancelled().await;
                    ToolResult::err(toolbelt_core::ErrorKind::Cancelled, "stopped")
                }
                _ => ToolResult::text(format!("noted: {}", self.1)),
            }
        })
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    env: Arc<ToolEnvironment>,
    registry: Arc<ToolRegistry>,
}

fn fixture() -> Fixture {
    fixture_with(&["note", "picture", "wait"])
}

fn fixture_with(tools: &[&'static str]) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let roots = WorkspaceRoots::new([dir.path()]).unwrap();
    let env = Arc::new(ToolEnvironment::new(
        roots,
        Arc::new(Settings::default()),
        dir.path().join("s"),
    ));
    let mut registry = ToolRegistry::new();
    for &name in tools {
        registry.register(Arc::new(TestTool(name)), Origin::BuiltIn);
    }
    Fixture {
        _dir: dir,
        env,
        registry: Arc::new(registry),
    }
}

fn call(id: &str, name: &str, value: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: json!({ "value": value }).to_string(),
    }
}

fn turn(text: &str, calls: Vec<ToolCall>, tokens: u64) -> ModelTurn {
    ModelTurn {
        text: text.into(),
        tool_calls: calls,
        finish_reason: FinishReason::Stop,
        usage: Some(Usage {
            prompt_tokens: tokens,
            completion_tokens: 1,
            total_tokens: tokens + 1,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn agent(f: &Fixture, model: Arc<dyn Model>, max_turns: usize, sink: Option<EventSink>) -> Agent {
    let config = SchedulerConfig::new(CallRules::new(
        Permissions::new(&toolbelt_engine::rules::RuleVocabulary::default()),
        ApprovalMode::Yolo,
        None,
        None,
    ));
    Agent::new(
        model,
        f.registry.clone(),
        f.env.clone(),
        config,
        "system".into(),
        max_turns,
        sink,
    )
}

fn client(server: &FakeOpenAi, images: bool) -> Arc<dyn Model> {
    let mut config = OpenAiConfig::new(server.base_url(), "m");
    config.takes_images = images;
    config.retry = RetryPolicy {
        max_attempts: 2,
        base_delay: Duration::from_millis(1),
        ..Default::default()
    };
    Arc::new(OpenAiClient::new(config).unwrap())
}

fn prompt(text: &str) -> Vec<UserPart> {
    vec![UserPart::Text(text.into())]
}

#[tokio::test]
async fn the_loop_answers_every_call_until_the_model_stops() {
    let f = fixture();
    let server = FakeOpenAi::start(vec![
        Reply::turn(turn(
            "",
            vec![call("a", "note", "1"), call("b", "nope", "2")],
            10,
        )),
        Reply::turn(turn("one more", vec![call("c", "note", "3")], 20)),
        Reply::turn(turn("all done", vec![], 30)),
    ])
    .await
    .unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink: EventSink = {
        let log = log.clone();
        Arc::new(move |e| {
            let line = match e {
                AgentEvent::Assistant { turn, .. } => format!("assistant {turn}"),
                AgentEvent::Tool(SchedulerEvent::Finished(c)) => format!("done {}", c.call_id),
                AgentEvent::Tool(_)
                | AgentEvent::SubAgent { .. }
                | AgentEvent::Delta(_)
                | AgentEvent::Hook(_) => return,
            };
            log.lock().unwrap().push(line);
        })
    };
    let a = agent(&f, client(&server, false), 10, Some(sink));
    let out = a.run(prompt("go"), &CancellationToken::new()).await;
    assert!(matches!(out.stop, StopReason::Answered), "{:?}", out.stop);
    assert_eq!(out.answer, "all done");
    assert_eq!(out.turns, 3);
    assert_eq!(out.usage.prompt_tokens, 60);
    let states: Vec<_> = out.calls.iter().map(|c| c.state).collect();
    assert_eq!(
        states,
        [CallState::Success, CallState::Error, CallState::Success]
    );
    assert_eq!(server.violations(), Vec::<String>::new());
    let second = &server.requests()[1].body["messages"];
    assert_eq!(second[0]["content"], "system");
    assert_eq!(second[3]["content"], "noted: 1");
    assert!(second[4]["content"].as_str().unwrap().contains("not found"));
    assert_eq!(
        *log.lock().unwrap(),
        [
            "assistant 1",
            "done b",
            "done a",
            "assistant 2",
            "done c",
            "assistant 3"
        ]
    );
}

/// A thinking model's thought signatures ride on its answers: the loop must hand each
/// back with the answer (the fake Gemini server refuses a request without them).
#[tokio::test]
async fn the_loop_hands_a_formats_state_back_with_its_answer() {
    use toolbelt_model::fake_gemini::{FakeGemini, GeminiReply};
    let f = fixture();
    let server = FakeGemini::start(vec![
        GeminiReply::calls(
            "",
            &[
                ("a", "note", json!({"value": "1"})),
                ("b", "note", json!({"value": "2"})),
            ],
        ),
        GeminiReply::calls("one more", &[("c", "note", json!({"value": "3"}))]),
        GeminiReply::text("all done"),
    ])
    .await
    .unwrap();
    let mut config = toolbelt_model::GeminiConfig::new(server.base_url(), "gemini-fake");
    config.api_key = Some("k".into());
    config.retry.max_attempts = 1;
    let model: Arc<dyn Model> = Arc::new(toolbelt_model::GeminiModel::new(config).unwrap());
    let out = agent(&f, model, 10, None)
        .run(prompt("go"), &CancellationToken::new())
        .await;
    assert!(matches!(out.stop, StopReason::Answered), "{:?}", out.stop);
    assert_eq!(out.answer, "all done");
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[tokio::test]
async fn the_turn_limit_stops_the_loop_with_every_call_answered() {
    let f = fixture();
    let line = r#"{"tool_calls": [{"name": "note", "arguments": {"value": "x"}}]}"#;
    let script = parse_script(&[line; 5].join("\n"), None).unwrap();
    let a = agent(&f, Arc::new(ReplayModel::new(&script, "r")), 3, None);
    let out = a.run(prompt("loop"), &CancellationToken::new()).await;
    assert!(matches!(out.stop, StopReason::MaxTurns(3)));
    assert_eq!(out.turns, 3);
    assert_eq!(out.calls.len(), 3);
}

#[tokio::test]
async fn a_refusing_model_ends_the_run_with_its_message() {
    let f = fixture();
    let server = FakeOpenAi::start(vec![Reply::status(401, "invalid api key")])
        .await
        .unwrap();
    let out = agent(&f, client(&server, false), 10, None)
        .run(prompt("x"), &CancellationToken::new())
        .await;
    match out.stop {
        StopReason::ModelFailed(e) => assert!(e.to_string().contains("invalid api key")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn images_follow_in_a_user_message_or_become_a_note() {
    for images in [true, false] {
        let f = fixture();
        let server = FakeOpenAi::start(vec![
            Reply::turn(turn("", vec![call("p", "picture", "")], 1)),
            Reply::text("seen"),
        ])
        .await
        .unwrap();
        agent(&f, client(&server, images), 5, None)
            .run(prompt("look"), &CancellationToken::new())
            .await;
        assert_eq!(server.violations(), Vec::<String>::new());
        let messages = server.requests()[1].body["messages"].clone();
        let tool_text = messages[3]["content"].as_str().unwrap().to_string();
        if images {
            assert!(tool_text.contains("attached in the following user message"));
            let url = messages[4]["content"][1]["image_url"]["url"]
                .as_str()
                .unwrap();
            assert_eq!(url, "data:image/png;base64,iVBORw==");
        } else {
            assert!(
                tool_text.contains("image/png content, 4 bytes, not shown"),
                "{tool_text}"
            );
            assert_eq!(messages.as_array().unwrap().len(), 4);
        }
    }
}

/// The result carries the call's real outcome and its images: over Anthropic Messages,
/// `is_error` on the failed result (whose text does not say so) and the image inside
/// the result of the call that made it.
#[tokio::test]
async fn a_failed_call_is_flagged_and_an_image_rides_in_its_result() {
    use toolbelt_model::fake_server::Dialect;
    let f = fixture_with(&["picture", "broken"]);
    let calls = vec![call("p", "picture", ""), call("b", "broken", "")];
    let server = FakeOpenAi::start_speaking(
        Dialect::AnthropicMessages,
        "127.0.0.1:0",
        vec![Reply::turn(turn("", calls, 1)), Reply::text("seen")],
    )
    .await
    .unwrap();
    let mut config = toolbelt_model::AnthropicConfig::new(server.base_url(), "claude-test");
    config.api_key = Some("sk-ant-test".into());
    config.takes_images = true;
    config.retry.max_attempts = 1;
    let model = Arc::new(toolbelt_model::AnthropicClient::new(config).unwrap());
    let out = agent(&f, model, 5, None)
        .run(prompt("look"), &CancellationToken::new())
        .await;
    assert!(matches!(out.stop, StopReason::Answered), "{:?}", out.stop);
    assert_eq!(server.violations(), Vec::<String>::new());
    let messages = server.requests()[1].body["messages"].clone();
    assert_eq!(messages.as_array().unwrap().len(), 3, "{messages}");
    assert_eq!(
        messages[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "p", "content": [
                {"type": "text", "text": "a picture"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
            ]},
            {"type": "tool_result", "tool_use_id": "b", "is_error": true,
                "content": [{"type": "text", "text": "it broke"}]},
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_stops_the_running_tool_and_the_loop() {
    let f = fixture();
    let script = parse_script(
        "{\"tool_calls\": [{\"name\": \"wait\"}]}\n{\"text\": \"never\"}",
        None,
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let sink: EventSink = {
        let cancel = cancel.clone();
        Arc::new(move |e| {
            if let AgentEvent::Tool(SchedulerEvent::Started { .. }) = e {
                cancel.cancel();
            }
        })
    };
    let a = agent(&f, Arc::new(ReplayModel::new(&script, "r")), 5, Some(sink));
    let out = tokio::time::timeout(Duration::from_secs(20), a.run(prompt("x"), &cancel))
        .await
        .unwrap();
    assert!(matches!(out.stop, StopReason::Cancelled));
    assert_eq!(out.calls[0].state, CallState::Cancelled);
    assert_eq!(out.turns, 1);
}

/// A tool source that adds `late` when a call names it, and removes `picture` before
/// the third model request; it records what it was asked.
struct ScriptedSource {
    asked: Mutex<Vec<Vec<String>>>,
}

impl ToolSource for ScriptedSource {
    fn refresh<'a>(
        &'a self,
        current: &'a ToolRegistry,
        unknown: &'a [String],
    ) -> BoxFuture<'a, Option<ToolRegistry>> {
        Box::pin(async move {
            let mut asked = self.asked.lock().unwrap();
            asked.push(unknown.to_vec());
            let mut next = current.clone();
            if unknown.iter().any(|n| n == "late") {
                next.register(Arc::new(TestTool("late")), Origin::BuiltIn);
                return Some(next);
            }
            // Asked before requests 1 and 2, then after the unknown call: the 4th ask
            // comes before request 3.
            if asked.len() == 4 {
                next.retain(|r| r.name != "picture", "the server dropped it");
                return Some(next);
            }
            None
        })
    }
}

fn declared(server: &FakeOpenAi, request: usize) -> Vec<String> {
    server.requests()[request].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn tools_that_change_during_a_run_are_used_and_declared() {
    let f = fixture();
    let server = FakeOpenAi::start(vec![
        Reply::turn(turn("", vec![call("a", "note", "1")], 1)),
        // A tool the source adds only when a call names it.
        Reply::turn(turn("", vec![call("b", "late", "2")], 1)),
        Reply::turn(turn("done", vec![], 1)),
    ])
    .await
    .unwrap();
    let source = Arc::new(ScriptedSource {
        asked: Mutex::new(Vec::new()),
    });
    let a = agent(&f, client(&server, false), 10, None).with_tool_source(source.clone());
    let out = a.run(prompt("go"), &CancellationToken::new()).await;
    assert!(matches!(out.stop, StopReason::Answered), "{:?}", out.stop);
    let states: Vec<_> = out.calls.iter().map(|c| c.state).collect();
    assert_eq!(states, [CallState::Success, CallState::Success]);
    assert_eq!(out.calls[1].result.llm_text(), "noted: 2");
    assert_eq!(
        *source.asked.lock().unwrap(),
        [vec![], vec![], vec!["late".to_string()], vec![]]
    );
    assert_eq!(declared(&server, 0), ["note", "picture", "wait"]);
    assert_eq!(declared(&server, 1), ["note", "picture", "wait"]);
    assert_eq!(declared(&server, 2), ["note", "wait", "late"]);
    assert_eq!(server.violations(), Vec::<String>::new());
}

/// `note` with a reference name and a when clause that is false in the fixture.
struct Referenced(TestTool, toolbelt_config::when::Expr);

impl Tool for Referenced {
    fn name(&self) -> &str {
        "hidden_note"
    }
    fn display_name(&self) -> &str {
        "Hidden note"
    }
    fn description(&self) -> &str {
        "test"
    }
    fn kind(&self) -> Kind {
        Kind::Read
    }
    fn parameter_schema(&self) -> &Value {
        self.0.parameter_schema()
    }
    fn when_clause(&self) -> Option<&toolbelt_config::when::Expr> {
        Some(&self.1)
    }
    fn reference_name(&self) -> Option<&str> {
        Some("noteRef")
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        self.0.build(args)
    }
}

#[tokio::test]
async fn a_reference_declares_a_hidden_tool_and_forces_it_once() {
    let mut f = fixture();
    let mut registry = (*f.registry).clone();
    let clause = toolbelt_config::when::parse("debugState == running").unwrap();
    registry.register(
        Arc::new(Referenced(TestTool("note"), clause)),
        Origin::Declared,
    );
    registry.apply_when(&json!({}));
    f.registry = Arc::new(registry);
    let names = |body: &Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .map(|ts| {
                ts.iter()
                    .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };

    // Without a reference the tool is hidden and a call to it is refused.
    let server = FakeOpenAi::start(vec![
        Reply::turn(turn("", vec![call("a", "hidden_note", "x")], 1)),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let out = agent(&f, client(&server, false), 5, None)
        .run(prompt("go"), &CancellationToken::new())
        .await;
    let requests = server.requests();
    assert!(!names(&requests[0].body).contains(&"hidden_note".to_string()));
    assert_eq!(out.calls[0].state, CallState::Error);
    assert!(
        text_for_model(&out.calls[0].result).contains("disabled"),
        "{:?}",
        out.calls[0].result
    );

    // `#noteRef` declares it, forces it in the first request only, and the call runs.
    let server = FakeOpenAi::start(vec![
        Reply::turn(turn("", vec![call("a", "hidden_note", "x")], 1)),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let out = agent(&f, client(&server, false), 5, None)
        .run(
            prompt("count with #noteRef please, not #unknown"),
            &CancellationToken::new(),
        )
        .await;
    let requests = server.requests();
    assert_eq!(server.violations(), Vec::<String>::new());
    assert!(names(&requests[0].body).contains(&"hidden_note".to_string()));
    assert_eq!(
        requests[0].body["tool_choice"],
        json!({"type": "function", "function": {"name": "hidden_note"}})
    );
    assert!(requests[1].body.get("tool_choice").is_none());
    assert!(names(&requests[1].body).contains(&"hidden_note".to_string()));
    assert_eq!(
        requests[0].body["messages"][1]["content"],
        "count with #noteRef please, not #unknown"
    );
    assert_eq!(out.calls[0].state, CallState::Success);
    assert_eq!(text_for_model(&out.calls[0].result), "noted: x");
}

#[tokio::test]
async fn above_the_budget_tools_are_found_with_tool_search_then_declared_and_called() {
    let mut f = fixture();
    let mut registry = (*f.registry).clone();
    for (tool, origin) in crate::tool_search::tests::mcp_tools(300) {
        registry.register(tool, origin);
    }
    f.registry = Arc::new(registry);
    let target = "mcp__github__create_issue";
    let search = ToolCall {
        id: "s".into(),
        name: "tool_search".into(),
        arguments: json!({"query": "create a GitHub issue"}).to_string(),
    };
    let create = ToolCall {
        id: "c".into(),
        name: target.into(),
        arguments: json!({"title": "It broke", "body": "details"}).to_string(),
    };
    let server = FakeOpenAi::start(vec![
        Reply::turn(turn("", vec![search], 1)),
        Reply::turn(turn("", vec![create], 1)),
        Reply::turn(turn("filed", vec![], 1)),
    ])
    .await
    .unwrap();
    let a = agent(&f, client(&server, false), 10, None);
    let out = a
        .run(prompt("file an issue"), &CancellationToken::new())
        .await;
    assert!(matches!(out.stop, StopReason::Answered), "{:?}", out.stop);
    assert_eq!(server.violations(), Vec::<String>::new());
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for i in 0..requests.len() {
        assert!(declared(&server, i).len() <= 128);
    }

    let first = declared(&server, 0);
    assert!(first.len() <= 60, "{}", first.len());
    assert!(first.iter().any(|n| n == "tool_search"));
    assert!(!first.iter().any(|n| n == target));

    let found = out.calls[0].result.llm_text();
    assert!(found.contains(&format!("- {target}: ")), "{found}");
    let second = declared(&server, 1);
    assert!(second.iter().any(|n| n == target), "{second:?}");
    assert!(second.iter().any(|n| n == "tool_search"));

    assert_eq!(out.calls[1].state, CallState::Success);
    let third = &requests[2].body["messages"];
    let last = &third[third.as_array().unwrap().len() - 1];
    assert_eq!(last["role"], "tool");
    assert_eq!(
        last["content"],
        format!("{target} ran with {{\"title\":\"It broke\",\"body\":\"details\"}}")
    );
    assert!(declared(&server, 2).iter().any(|n| n == target));
}

#[tokio::test]
async fn a_deferred_tool_called_by_name_without_searching_still_runs() {
    let mut f = fixture();
    let mut registry = (*f.registry).clone();
    for (tool, origin) in crate::tool_search::tests::mcp_tools(100) {
        registry.register(tool, origin);
    }
    f.registry = Arc::new(registry);
    let server = FakeOpenAi::start(vec![
        Reply::turn(turn(
            "",
            vec![ToolCall {
                id: "x".into(),
                name: "mcp__slack__list_user".into(),
                arguments: "{}".into(),
            }],
            1,
        )),
        Reply::text("ok"),
    ])
    .await
    .unwrap();
    let out = agent(&f, client(&server, false), 5, None)
        .run(prompt("who"), &CancellationToken::new())
        .await;
    assert_eq!(out.calls[0].state, CallState::Success);
    assert!(
        !declared(&server, 1)
            .iter()
            .any(|n| n == "mcp__slack__list_user")
    );
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[tokio::test]
async fn a_referenced_tool_is_declared_although_deferred() {
    let mut f = fixture();
    let mut registry = (*f.registry).clone();
    for (tool, origin) in crate::tool_search::tests::mcp_tools(300) {
        registry.register(tool, origin);
    }
    registry.add_tool_set(toolbelt_engine::registry::ToolSet {
        name: "slackUsers".into(),
        description: "the Slack user tools".into(),
        tools: vec!["mcp__slack__list_user".into()],
    });
    f.registry = Arc::new(registry);
    let server = FakeOpenAi::start(vec![Reply::text("ok")]).await.unwrap();
    agent(&f, client(&server, false), 5, None)
        .run(prompt("who is in #slackUsers"), &CancellationToken::new())
        .await;
    let first = declared(&server, 0);
    assert!(first.len() <= 60, "{}", first.len());
    assert!(
        first.iter().any(|n| n == "mcp__slack__list_user"),
        "{first:?}"
    );
    assert!(first.iter().any(|n| n == "tool_search"));
    assert_eq!(
        server.requests()[0].body["tool_choice"]["function"]["name"],
        "mcp__slack__list_user"
    );
}

/// The built-ins with a few MCP tools stay under the default budget: a session with one
/// small server declares everything, as before tool search.
#[test]
fn the_built_ins_and_a_small_server_are_not_deferred() {
    let f = fixture();
    let mut registry = ToolRegistry::new();
    toolbelt_tools::register_builtins(&mut registry, &f.env);
    for (tool, origin) in crate::tool_search::tests::mcp_tools(5) {
        registry.register(tool, origin);
    }
    let bytes: u64 = registry
        .all()
        .map(crate::tool_search::declaration_bytes)
        .sum();
    let defaults = toolbelt_config::settings::types::ToolSearchSettings::default();
    assert!(
        !crate::tool_search::needs_deferral(&registry, &defaults, None),
        "{} tools, {bytes} bytes",
        registry.len()
    );
}

#[tokio::test]
async fn a_saved_run_continues_with_its_history_and_no_call_runs_again() {
    use transcript::{SessionHeader, SessionStore};
    let f = fixture();
    let server = FakeOpenAi::start(vec![
        Reply::turn(turn("", vec![call("a", "note", "1")], 1)),
        Reply::turn(turn("noted", vec![], 1)),
        Reply::turn(turn("again", vec![], 1)),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path().join("sessions"));
    let header = || SessionHeader::new(dir.path().to_path_buf(), "m".into(), None);
    let first = Arc::new(store.create(header()).unwrap());
    let a = agent(&f, client(&server, false), 10, None).with_session_log(first.clone());
    let out = a.run(prompt("go"), &CancellationToken::new()).await;
    assert!(matches!(out.stop, StopReason::Answered), "{:?}", out.stop);

    let saved = store.load(first.id()).unwrap();
    assert_eq!(saved.messages.len(), 4, "{:?}", saved.messages);
    let second = Arc::new(store.create(header()).unwrap());
    for m in &saved.messages {
        second.append(m).unwrap();
    }
    let b = agent(&f, client(&server, false), 10, None)
        .with_history(saved.messages.clone())
        .with_session_log(second.clone());
    let out = b.run(prompt("more"), &CancellationToken::new()).await;
    assert!(out.calls.is_empty());
    assert_eq!(server.violations(), Vec::<String>::new());
    let sent = &server.requests()[2].body["messages"];
    assert_eq!(sent[0]["content"], "system");
    assert_eq!(sent[1]["content"], "go");
    assert_eq!(sent[3]["content"], "noted: 1");
    assert_eq!(sent[5]["content"], "more");
    let resaved = store.load(second.id()).unwrap();
    let mut expected = saved.messages;
    expected.push(Message::user_text("more"));
    expected.push(Message::Assistant {
        text: "again".into(),
        tool_calls: Vec::new(),
        reasoning: Vec::new(),
    });
    assert_eq!(resaved.messages, expected);
}

#[tokio::test]
async fn one_agent_carries_its_conversation_from_run_to_run() {
    let f = fixture();
    let server = FakeOpenAi::start(vec![
        Reply::turn(turn("", vec![call("a", "note", "1")], 1)),
        Reply::turn(turn("noted", vec![], 1)),
        Reply::turn(turn("second answer", vec![], 1)),
        Reply::turn(turn("fresh", vec![], 1)),
    ])
    .await
    .unwrap();
    let a = agent(&f, client(&server, false), 10, None);
    a.run(prompt("go"), &CancellationToken::new()).await;
    assert_eq!(a.history().len(), 4, "prompt, call, result, answer");
    let out = a.run(prompt("more"), &CancellationToken::new()).await;
    assert_eq!(out.answer, "second answer");
    let sent = &server.requests()[2].body["messages"];
    assert_eq!(sent[1]["content"], "go");
    assert_eq!(sent[3]["content"], "noted: 1");
    assert_eq!(sent[5]["content"], "more");
    assert_eq!(a.history().len(), 6);
    assert_eq!(server.violations(), Vec::<String>::new());

    // A cleared conversation starts afresh (the fake server, which checks one
    // conversation's consistency, would rightly note the forgotten call from here on).
    a.set_history(Vec::new());
    a.run(prompt("again"), &CancellationToken::new()).await;
    let sent = server.requests()[3].body["messages"].clone();
    assert_eq!(
        sent.as_array().unwrap().len(),
        2,
        "system and the new prompt: {sent}"
    );
}
