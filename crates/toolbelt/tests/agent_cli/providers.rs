//! Choosing the model provider (`--provider`, the API key variables, `modelProviders`)
//! and running whole sessions over the Anthropic Messages format against the fake
//! server speaking it, which checks every request (tool uses answered, thinking blocks
//! sent back with their signatures).

use serde_json::json;
use toolbelt_model::fake_server::{Dialect, FakeOpenAi, Reply};
use toolbelt_model::{OpaquePart, Usage, parse_script};

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
            vec![("GEMINI_API_KEY", "k")],
            vec![
                "provider 'gemini'",
                "https://generativelanguage.googleapis.com",
                "not built yet",
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
