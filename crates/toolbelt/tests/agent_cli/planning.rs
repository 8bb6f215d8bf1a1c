//! Plan mode, the memory file and the task list, end to end through the binary.

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{FinishReason, ModelTurn, ToolCall};

use crate::support::Workspace;

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.to_string(),
    }
}

fn calls_turn(calls: Vec<ToolCall>) -> Reply {
    Reply::turn(ModelTurn {
        tool_calls: calls,
        finish_reason: FinishReason::ToolCalls,
        ..Default::default()
    })
}

const PLAN: &str = "1. Rename `old` to `new` in src/lib.rs.\n2. Add a test.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_plan_mode_session_ends_with_the_plan_and_writes_nothing() {
    let w = Workspace::new();
    w.write("src/lib.rs", "fn old() {}\n");
    let target = w.ws().join("src/lib.rs");
    let created = w.ws().join("NOTES.md");
    let server = FakeOpenAi::start(vec![
        calls_turn(vec![
            call("r1", "read_file", json!({"absolute_path": target})),
            call(
                "w1",
                "write_file",
                json!({"file_path": target, "content": "fn new() {}\n"}),
            ),
            call(
                "w2",
                "write_file",
                json!({"file_path": created, "content": "notes\n"}),
            ),
        ]),
        calls_turn(vec![call("p1", "exit_plan_mode", json!({"plan": PLAN}))]),
        Reply::text("this turn must never be asked for"),
    ])
    .await
    .unwrap();
    let url = server.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "sk-local"),
        ("OPENAI_MODEL", "qwen3-coder-plus"),
    ];
    let run = w
        .run(
            &["--approval-mode", "plan", "-p", "rename old to new"],
            &env,
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, format!("{PLAN}\n"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "fn old() {}\n");
    assert!(!created.exists());
    assert_eq!(server.violations(), Vec::<String>::new());
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the run ends at the plan");
    // One answer per call, in order: the read ran, both writes were refused.
    let messages = requests[1].body["messages"].as_array().unwrap();
    let answers: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    let ids: Vec<&str> = answers
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["r1", "w1", "w2"]);
    assert!(answers[0]["content"].as_str().unwrap().contains("fn old"));
    for refused in &answers[1..] {
        let text = refused["content"].as_str().unwrap();
        assert!(text.contains("Plan mode is active"), "{text}");
        assert!(text.contains("exit_plan_mode"), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_output_names_the_plan_and_carries_the_task_list() {
    let w = Workspace::new();
    let script = w.script(&[
        json!({"tool_calls": [{"id": "t1", "name": "todo_write", "arguments": {"todos": [
            {"id": "1", "content": "read the code", "status": "in_progress"},
            {"id": "2", "content": "write the plan", "status": "pending"}
        ]}}]}),
        json!({"tool_calls": [{"id": "t2", "name": "todo_write", "arguments": {"todos": [
            {"id": "1", "content": "read the code", "status": "completed"},
            {"id": "2", "content": "write the plan", "status": "in_progress"}
        ]}}]}),
        json!({"tool_calls": [{"id": "p", "name": "exit_plan_mode", "arguments": {"plan": PLAN}}]}),
    ]);
    let s = script.to_str().unwrap();
    let run = w
        .run(
            &[
                "--model-replay",
                s,
                "--approval-mode",
                "plan",
                "-o",
                "json",
                "plan",
            ],
            &[],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = crate::support::json_result(&run.stdout);
    assert_eq!(v["subtype"], "success");
    assert_eq!(v["result"], PLAN);
    let todos = &v["toolbelt"]["todos"];
    assert_eq!(todos[0]["status"], "completed");
    assert_eq!(todos[1]["status"], "in_progress");
    assert_eq!(todos[1]["content"], "write the plan");

    let run = w
        .run(
            &[
                "--model-replay",
                s,
                "--approval-mode",
                "plan",
                "-o",
                "stream-json",
                "plan",
            ],
            &[],
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let results: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "user")
        .map(|l| &l["message"]["content"][0])
        .collect();
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| r["type"] == "tool_result"));
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["result"], PLAN);
    assert_eq!(last["toolbelt"]["todos"][1]["status"], "in_progress");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_memories_reach_the_next_sessions_system_prompt() {
    let w = Workspace::new();
    let memory = w.dir.path().join("home/.qwen/QWEN.md");
    std::fs::create_dir_all(memory.parent().unwrap()).unwrap();
    std::fs::write(&memory, "# My notes\n\nKeep replies short.\n").unwrap();
    for fact in [
        "The staging database is called\nbluebird",
        "Tests run with cargo nextest",
    ] {
        let args = json!({ "fact": fact }).to_string();
        let run = w
            .run(&["tools", "call", "save_memory", &args, "--yes"], &[], None)
            .await;
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let text = std::fs::read_to_string(&memory).unwrap();
    assert_eq!(
        text,
        "# My notes\n\nKeep replies short.\n\n## Qwen Added Memories\n- The staging database is called bluebird\n- Tests run with cargo nextest\n"
    );

    let server = FakeOpenAi::start(vec![Reply::text("noted")]).await.unwrap();
    let url = server.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "sk-local"),
        ("OPENAI_MODEL", "qwen3-coder-plus"),
    ];
    let run = w.run(&["-p", "hello"], &env, None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let system = server.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.contains("Keep replies short."), "{system}");
    assert!(
        system.contains("- The staging database is called bluebird"),
        "{system}"
    );
    assert!(
        system.contains("- Tests run with cargo nextest"),
        "{system}"
    );
}
