//! Choosing the model provider (`--provider`, the API key variables, `modelProviders`)
//! and running whole sessions over the Anthropic Messages, Gemini and OpenAI Responses
//! formats against fake servers speaking them, which check every request (tool uses
//! answered; thinking blocks, thought signatures and reasoning items sent back).

use base64::Engine;
use serde_json::json;
use toolbelt_model::fake_gemini::{FakeGemini, GeminiReply};
use toolbelt_model::fake_responses::{FakeResponses, ResponsesReply};
use toolbelt_model::fake_server::{Dialect, FakeOpenAi, Reply};
use toolbelt_model::{ModelTurn, OpaquePart, ToolCall, Usage, parse_script};

use crate::sessions::{check_seven_files, seven_script, seven_workspace};
use crate::support::Workspace;

/// The seven-call session's turns, each with a thinking block the server wants back.
fn seven_replies(w: &Workspace) -> Vec<Reply> {
    let text = std::fs::read_to_string(seven_script()).unwrap();
    let script = parse_script(&text, Some(&w.ws())).unwrap();
    script
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut turn = t.to_model_turn(i + 1);
            // Each request reads 1,000 tokens from the prompt cache and writes 10.
            turn.usage = Some(Usage {
                prompt_tokens: 1_100,
                completion_tokens: 20,
                total_tokens: 1_120,
                cache_read_tokens: 1_000,
                cache_write_tokens: 10,
                ..Default::default()
            });
            turn.reasoning = vec![OpaquePart {
                format: "anthropic".into(),
                value: json!({"type": "thinking", "thinking": format!("Step {i}."), "signature": format!("c2lnLXtp{i}")}),
            }];
            Reply::turn(turn)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seven_call_session_over_anthropic_messages_recorded_and_replayed() {
    let w = Workspace::new();
    seven_workspace(&w);
    let mut replies = seven_replies(&w);
    // An overloaded server first: retried after its retry-after.
    replies.insert(
        0,
        Reply::Status {
            status: 529,
            retry_after: Some("0".into()),
            message: "Overloaded".into(),
        },
    );
    let server = FakeOpenAi::start_speaking(Dialect::AnthropicMessages, "127.0.0.1:0", replies)
        .await
        .unwrap();
    let url = server.base_url();
    let record = w.dir.path().join("anthropic-run.jsonl");
    // No --provider: ANTHROPIC_API_KEY without any OPENAI_* variable picks Anthropic.
    let env = [
        ("ANTHROPIC_BASE_URL", url.as_str()),
        ("ANTHROPIC_API_KEY", "sk-ant-test"),
        ("ANTHROPIC_MODEL", "claude-test"),
        ("MAX_THINKING_TOKENS", "2048"),
    ];
    let run = w
        .run(
            &[
                "--record",
                record.to_str().unwrap(),
                "--yolo",
                "-o",
                "json",
                "go",
            ],
            &env,
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.violations(), Vec::<String>::new());
    let requests = server.requests();
    assert_eq!(requests.len(), 9);
    assert!(requests.iter().all(|r| r.path == "/v1/messages"));
    assert_eq!(requests[1].body["model"], "claude-test");
    assert_eq!(
        requests[1].body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    check_seven_files(&w);
    // The usage of the eight answers, the cache's part included.
    let usage = &crate::support::json_result(&run.stdout)["usage"];
    assert_eq!(usage["input_tokens"], 8 * 1_100, "{usage}");
    assert_eq!(usage["cache_read_input_tokens"], 8 * 1_000, "{usage}");
    assert_eq!(usage["cache_creation_input_tokens"], 8 * 10, "{usage}");

    // The recording replays offline, the same files again.
    for rel in ["notes/todo.md", "counts.txt"] {
        std::fs::remove_file(w.ws().join(rel)).unwrap();
    }
    seven_workspace(&w);
    let run = w
        .run(
            &["--model-replay", record.to_str().unwrap(), "--yolo", "go"],
            &[],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    check_seven_files(&w);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_providers_entry_chooses_protocol_url_key_and_headers() {
    let w = Workspace::new();
    seven_workspace(&w);
    let server =
        FakeOpenAi::start_speaking(Dialect::AnthropicMessages, "127.0.0.1:0", seven_replies(&w))
            .await
            .unwrap();
    // A custom provider id mapped to Anthropic, its key in a variable of its own.
    let settings = json!({
        "providerProtocol": {"corp-claude": "anthropic"},
        "modelProviders": {"corp-claude": [{
            "id": "claude-corp",
            "envKey": "CORP_KEY",
            "baseUrl": server.base_url(),
            "generationConfig": {
                "timeout": 30000,
                "maxRetries": 2,
                "customHeaders": {"x-team": "tools"},
                "samplingParams": {"temperature": 0.2, "max_tokens": 2048}
            }
        }]}
    });
    let user_settings = w.dir.path().join("home/.qwen/settings.json");
    std::fs::create_dir_all(user_settings.parent().unwrap()).unwrap();
    std::fs::write(&user_settings, settings.to_string()).unwrap();
    let run = w
        .run(
            &["-m", "claude-corp", "--yolo", "go"],
            &[("CORP_KEY", "corp-secret")],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.violations(), Vec::<String>::new());
    let first = &server.requests()[0];
    let header = |name: &str| {
        first
            .headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header("x-api-key").as_deref(), Some("corp-secret"));
    assert_eq!(header("x-team").as_deref(), Some("tools"));
    assert_eq!(first.body["temperature"], 0.2);
    assert_eq!(first.body["max_tokens"], 2048);
    check_seven_files(&w);

    // The same entry without its variable: the error names the provider, the URL, the
    // variable and the setting.
    let run = w.run(&["-m", "claude-corp", "go"], &[], None).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    for part in [
        "corp-claude",
        server.base_url().as_str(),
        "CORP_KEY",
        "modelProviders.corp-claude[0].envKey",
    ] {
        assert!(run.stderr.contains(part), "{part} in {}", run.stderr);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn providers_that_cannot_be_used_say_which_and_why() {
    let w = Workspace::new();
    for (args, env, expected) in [
        (
            vec!["--provider", "nonesuch", "-m", "x", "go"],
            vec![],
            vec![
                "unknown model provider 'nonesuch'",
                "--provider",
                "providerProtocol",
            ],
        ),
        (
            vec!["--auth-type", "gemini", "-m", "gemini-2.5-pro", "go"],
            vec![],
            vec![
                "provider 'gemini'",
                "https://generativelanguage.googleapis.com",
                "GEMINI_API_KEY or GOOGLE_API_KEY",
            ],
        ),
        (
            // Neither a project with its token nor an express-mode key: every missing
            // variable is named (with GOOGLE_API_KEY alone it would be express mode,
            // which goes to Google's server: no test goes there).
            vec!["--provider", "vertex-ai", "-m", "gemini-2.5-pro", "go"],
            vec![("GOOGLE_CLOUD_PROJECT", "p")],
            vec![
                "provider 'vertex-ai'",
                "Vertex AI",
                "access token",
                "Not set: GOOGLE_CLOUD_LOCATION, GOOGLE_CLOUD_ACCESS_TOKEN, GOOGLE_API_KEY",
            ],
        ),
        (
            vec!["--provider", "anthropic", "-m", "claude-test", "go"],
            vec![],
            vec![
                "provider 'anthropic'",
                "https://api.anthropic.com",
                "ANTHROPIC_API_KEY",
            ],
        ),
        (
            vec!["--provider", "anthropic", "-m", "claude-test", "go"],
            vec![
                ("ANTHROPIC_API_KEY", "k"),
                ("MAX_THINKING_TOKENS", "100000"),
            ],
            vec![
                "MAX_THINKING_TOKENS",
                "100000",
                "8192",
                "provider 'anthropic'",
            ],
        ),
        (
            vec!["--provider", "anthropic", "-m", "claude-test", "go"],
            vec![
                ("ANTHROPIC_BASE_URL", "ftp://example.com"),
                ("ANTHROPIC_API_KEY", "k"),
            ],
            vec![
                "ftp://example.com",
                "ANTHROPIC_BASE_URL",
                "provider 'anthropic'",
            ],
        ),
    ] {
        let run = w.run(&args, &env, None).await;
        assert_ne!(run.code, 0, "{args:?}: {}", run.stderr);
        for part in expected {
            assert!(
                run.stderr.contains(part),
                "{args:?}: {part} in {}",
                run.stderr
            );
        }
    }
}

/// The examples tour, unchanged, over Anthropic Messages: twelve calls of every kind,
/// three in one turn, and the misspelt tool's result sent back marked as an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_examples_tour_runs_over_anthropic_messages() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let w = Workspace::new();
    for rel in ["README.md", "src/greet.py", "src/util.py", "explore.ipynb"] {
        w.write(
            rel,
            &std::fs::read_to_string(repo.join("examples/demo").join(rel)).unwrap(),
        );
    }
    let text = std::fs::read_to_string(repo.join("examples/tour.jsonl")).unwrap();
    let script = parse_script(&text, Some(&w.ws())).unwrap();
    let replies = script
        .iter()
        .enumerate()
        .map(|(i, t)| Reply::turn(t.to_model_turn(i + 1)))
        .collect();
    let server = FakeOpenAi::start_speaking(Dialect::AnthropicMessages, "127.0.0.1:0", replies)
        .await
        .unwrap();
    let url = server.base_url();
    let env = [
        ("ANTHROPIC_BASE_URL", url.as_str()),
        ("ANTHROPIC_API_KEY", "sk-ant-test"),
    ];
    let run = w
        .run(
            &[
                "--provider",
                "anthropic",
                "-m",
                "claude-test",
                "--yolo",
                "tour",
            ],
            &env,
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.violations(), Vec::<String>::new());
    assert_eq!(server.unused(), 0);
    let greet = std::fs::read_to_string(w.ws().join("src/greet.py")).unwrap();
    assert!(greet.contains("return f\"Hello, {name}!\""), "{greet}");
    // The request after the misspelt call: its result is an error, the others are not.
    let results: Vec<(String, bool)> = server.requests().last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            (
                b["tool_use_id"].as_str().unwrap().to_string(),
                b["is_error"] == true,
            )
        })
        .collect();
    assert_eq!(results.len(), 12, "{results:?}");
    let failed: Vec<&str> = results
        .iter()
        .filter(|(_, e)| *e)
        .map(|(id, _)| id.as_str())
        .collect();
    assert_eq!(failed, ["tour_7"]);
}

/// A sub-agent whose definition names a model of another provider talks to that
/// provider, in its format, with its key; the parent stays on chat completions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agent_may_name_a_model_of_another_provider() {
    let w = Workspace::new();
    w.write(
        ".qwen/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews\nmodel: claude-sub\ntools: [glob]\n---\nYou review.\n",
    );
    let agent_call = toolbelt_model::ToolCall {
        id: "a1".into(),
        name: "agent".into(),
        arguments: json!({"description": "review", "prompt": "MARK-SUB: review", "subagent_type": "reviewer"})
            .to_string(),
    };
    let parent = FakeOpenAi::start(vec![
        Reply::turn(toolbelt_model::ModelTurn {
            tool_calls: vec![agent_call],
            ..Default::default()
        }),
        Reply::text("The review is in."),
    ])
    .await
    .unwrap();
    let claude = FakeOpenAi::start_speaking(
        Dialect::AnthropicMessages,
        "127.0.0.1:0",
        vec![Reply::text("Looks fine.")],
    )
    .await
    .unwrap();
    let settings = json!({"modelProviders": {"anthropic": [
        {"id": "claude-sub", "envKey": "SUB_KEY", "baseUrl": claude.base_url()}
    ]}});
    let user_settings = w.dir.path().join("home/.qwen/settings.json");
    std::fs::create_dir_all(user_settings.parent().unwrap()).unwrap();
    std::fs::write(&user_settings, settings.to_string()).unwrap();
    let url = parent.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_MODEL", "parent-model"),
        ("SUB_KEY", "sub-secret"),
    ];
    let run = w.run(&["--yolo", "go"], &env, None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(parent.violations(), Vec::<String>::new());
    assert_eq!(claude.violations(), Vec::<String>::new());
    assert_eq!(parent.request_count(), 2);
    let sub = claude.requests();
    assert_eq!(sub.len(), 1);
    assert_eq!(sub[0].body["model"], "claude-sub");
    assert!(sub[0].body.to_string().contains("MARK-SUB"));
    assert!(
        sub[0]
            .headers
            .contains(&("x-api-key".to_string(), "sub-secret".to_string()))
    );
}

/// The seven-call session's turns, each reading 1,000 cached tokens and spending 5 on
/// reasoning (the fakes of Gemini and Responses add the signatures and reasoning items).
fn seven_turns(w: &Workspace) -> Vec<ModelTurn> {
    let text = std::fs::read_to_string(seven_script()).unwrap();
    let script = parse_script(&text, Some(&w.ws())).unwrap();
    script
        .iter()
        .enumerate()
        .map(|(i, t)| ModelTurn {
            usage: Some(Usage {
                prompt_tokens: 1_100,
                completion_tokens: 20,
                total_tokens: 1_120,
                cache_read_tokens: 1_000,
                reasoning_tokens: 5,
                ..Default::default()
            }),
            ..t.to_model_turn(i + 1)
        })
        .collect()
}

/// The usage of the result (`-o json` or `stream-json`) after the eight answers.
fn check_usage(result: &serde_json::Value) {
    let usage = &result["usage"];
    assert_eq!(usage["input_tokens"], 8 * 1_100, "{usage}");
    assert_eq!(usage["cache_read_input_tokens"], 8 * 1_000, "{usage}");
    assert_eq!(usage["reasoning_output_tokens"], 8 * 5, "{usage}");
}

/// Runs the recording `record` offline on a fresh copy of the files: the same result.
async fn replay_seven(w: &Workspace, record: &std::path::Path) {
    for rel in ["notes/todo.md", "counts.txt"] {
        std::fs::remove_file(w.ws().join(rel)).unwrap();
    }
    seven_workspace(w);
    let run = w
        .run(
            &["--model-replay", record.to_str().unwrap(), "--yolo", "go"],
            &[],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    check_seven_files(w);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seven_call_session_over_gemini_recorded_and_replayed() {
    let w = Workspace::new();
    seven_workspace(&w);
    let mut replies: Vec<GeminiReply> =
        seven_turns(&w).into_iter().map(GeminiReply::Turn).collect();
    // A rate limit first: retried after its Retry-After.
    replies.insert(
        0,
        GeminiReply::Status {
            status: 429,
            retry_after: Some("0".into()),
            message: "Resource has been exhausted".into(),
        },
    );
    let server = FakeGemini::start(replies).await.unwrap();
    let url = server.base_url();
    let record = w.dir.path().join("gemini-run.jsonl");
    // No --provider: GEMINI_API_KEY without any OPENAI_* variable picks Gemini.
    let env = [
        ("GOOGLE_GEMINI_BASE_URL", url.as_str()),
        ("GEMINI_API_KEY", "gm-test"),
        ("GEMINI_MODEL", "gemini-test"),
    ];
    let args = [
        "--record",
        record.to_str().unwrap(),
        "--yolo",
        "-o",
        "json",
        "go",
    ];
    let run = w.run(&args, &env, None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The fake refuses a call sent back without its thought signature.
    assert_eq!(server.violations(), Vec::<String>::new());
    let requests = server.requests();
    assert_eq!(requests.len(), 9);
    for r in &requests {
        assert_eq!(
            r.path,
            "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
        );
        assert_eq!(r.header("x-goog-api-key"), Some("gm-test"));
    }
    check_seven_files(&w);
    check_usage(&crate::support::json_result(&run.stdout));
    replay_seven(&w, &record).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seven_call_session_over_openai_responses_from_model_providers() {
    let w = Workspace::new();
    seven_workspace(&w);
    let mut replies: Vec<ResponsesReply> = seven_turns(&w)
        .into_iter()
        .map(ResponsesReply::Turn)
        .collect();
    replies.insert(
        0,
        ResponsesReply::Status {
            status: 503,
            retry_after: Some("0".into()),
            message: "The server is overloaded".into(),
        },
    );
    let server = FakeResponses::start(replies).await.unwrap();
    // A custom provider id mapped to the Responses format, its key in its own variable.
    let settings = json!({
        "providerProtocol": {"corp-gpt": "openai-responses"},
        "modelProviders": {"corp-gpt": [{
            "id": "gpt-corp",
            "envKey": "CORP_OPENAI_KEY",
            "baseUrl": server.base_url(),
            "generationConfig": {"maxRetries": 2}
        }]}
    });
    let user_settings = w.dir.path().join("home/.qwen/settings.json");
    std::fs::create_dir_all(user_settings.parent().unwrap()).unwrap();
    std::fs::write(&user_settings, settings.to_string()).unwrap();
    let record = w.dir.path().join("responses-run.jsonl");
    let args = [
        "-m",
        "gpt-corp",
        "--record",
        record.to_str().unwrap(),
        "--yolo",
        "-o",
        "stream-json",
        "go",
    ];
    let run = w.run(&args, &[("CORP_OPENAI_KEY", "sk-corp")], None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The fake refuses a call sent back without the reasoning item that led to it.
    assert_eq!(server.violations(), Vec::<String>::new());
    let requests = server.requests();
    assert_eq!(requests.len(), 9);
    for r in &requests {
        assert_eq!(r.path, "/v1/responses");
        assert_eq!(r.header("authorization"), Some("Bearer sk-corp"));
        assert_eq!(r.body["model"], "gpt-corp");
    }
    check_seven_files(&w);
    let result = run
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|m| m["type"] == "result")
        .expect("a result message");
    check_usage(&result);
    replay_seven(&w, &record).await;
}

/// A turn reading a PNG of the workspace and a file that does not exist, then the end.
fn png_and_missing(w: &Workspace) -> (Vec<ModelTurn>, String) {
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    std::fs::write(w.ws().join("pixel.png"), png).unwrap();
    let read = |id: &str, file: &str| ToolCall {
        id: id.into(),
        name: "read_file".into(),
        arguments: json!({"file_path": w.ws().join(file)}).to_string(),
    };
    let calls = ModelTurn {
        tool_calls: vec![read("c1", "pixel.png"), read("c2", "missing.txt")],
        ..Default::default()
    };
    let done = ModelTurn {
        text: "Seen.".into(),
        ..Default::default()
    };
    let b64 = base64::engine::general_purpose::STANDARD.encode(png);
    (vec![calls, done], b64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_image_and_failure_reach_anthropic_and_responses_in_their_own_forms() {
    // Anthropic Messages: the image inside the result, the failure flagged.
    let w = Workspace::new();
    let (turns, png) = png_and_missing(&w);
    let replies = turns.iter().cloned().map(Reply::turn).collect();
    let server = FakeOpenAi::start_speaking(Dialect::AnthropicMessages, "127.0.0.1:0", replies)
        .await
        .unwrap();
    let url = server.base_url();
    let env = [
        ("ANTHROPIC_BASE_URL", url.as_str()),
        ("ANTHROPIC_API_KEY", "sk-ant-test"),
        ("ANTHROPIC_MODEL", "claude-test"),
    ];
    let run = w.run(&["--yolo", "look"], &env, None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.violations(), Vec::<String>::new());
    let messages = server.requests()[1].body["messages"].clone();
    let results = &messages[2]["content"];
    assert_eq!(
        results[0],
        json!({"type": "tool_result", "tool_use_id": "c1", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
        ]})
    );
    assert_eq!(results[1]["tool_use_id"], "c2");
    assert_eq!(results[1]["is_error"], true, "{}", results[1]);
    assert_eq!(results.as_array().unwrap().len(), 2, "{results}");
    assert_eq!(messages.as_array().unwrap().len(), 3, "{messages}");

    // OpenAI Responses (a model entry that takes images): `input_image` in the output.
    let w = Workspace::new();
    let (turns, png) = png_and_missing(&w);
    let server = FakeResponses::start(turns.into_iter().map(ResponsesReply::Turn).collect())
        .await
        .unwrap();
    let settings = json!({
        "modelProviders": {"openai-responses": [{
            "id": "gpt-eyes",
            "envKey": "EYES_KEY",
            "baseUrl": server.base_url(),
            "capabilities": {"vision": true}
        }]}
    });
    let user_settings = w.dir.path().join("home/.qwen/settings.json");
    std::fs::create_dir_all(user_settings.parent().unwrap()).unwrap();
    std::fs::write(&user_settings, settings.to_string()).unwrap();
    let run = w
        .run(
            &["-m", "gpt-eyes", "--yolo", "look"],
            &[("EYES_KEY", "k")],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.violations(), Vec::<String>::new());
    let input = server.requests()[1].body["input"].clone();
    let output = |id: &str| {
        input
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["type"] == "function_call_output" && i["call_id"] == id)
            .map(|i| i["output"].clone())
            .unwrap()
    };
    assert_eq!(
        output("c1"),
        json!([{"type": "input_image", "image_url": format!("data:image/png;base64,{png}"), "detail": "auto"}])
    );
    assert!(
        output("c2").as_str().unwrap().starts_with("Error: "),
        "{input}"
    );
    // No user message after the results carries the image a second time.
    assert_eq!(
        input.to_string().matches(png.as_str()).count(),
        1,
        "{input}"
    );
}
