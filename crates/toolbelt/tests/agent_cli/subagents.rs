//! Sub-agents through the real binary and the fake server: each conversation (the
//! parent's and each sub-agent's) has its own script, routed by a marker in its prompt.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{ModelTurn, ToolCall};

use crate::support::{Workspace, wait};

fn calls(calls: &[(&str, &str, Value)]) -> Reply {
    Reply::turn(ModelTurn {
        tool_calls: calls
            .iter()
            .map(|(id, name, args)| ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: args.to_string(),
            })
            .collect(),
        ..Default::default()
    })
}

fn agent_call(kind: &str, prompt: &str) -> (&'static str, Value) {
    (
        "agent",
        json!({"description": "a sub-task", "prompt": prompt, "subagent_type": kind}),
    )
}

fn env(server: &FakeOpenAi) -> Vec<(&'static str, String)> {
    vec![
        ("OPENAI_BASE_URL", server.base_url()),
        ("OPENAI_API_KEY", "sk-local".to_string()),
        ("OPENAI_MODEL", "parent-model".to_string()),
    ]
}

async fn run(w: &Workspace, server: &FakeOpenAi, args: &[&str]) -> crate::support::Run {
    let env = env(server);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    w.run(args, &env, None).await
}

/// The tool message answering `call_id` in a request body.
fn tool_message(body: &Value, call_id: &str) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no answer to {call_id} in {body}"))
        .to_string()
}

/// The requests of the parent's conversation (no route).
fn parent_requests(server: &FakeOpenAi) -> Vec<toolbelt_model::fake_server::Recorded> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.route.is_none())
        .collect()
}

/// The last message of a request body.
fn last_message(body: &Value) -> Value {
    body["messages"].as_array().unwrap().last().unwrap().clone()
}

/// The content of the last message of a request body, as JSON text.
fn last_content(body: &Value) -> String {
    last_message(body)["content"].to_string()
}

fn route_requests(server: &FakeOpenAi, marker: &str) -> Vec<toolbelt_model::fake_server::Recorded> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.route.as_deref() == Some(marker))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sub_agents_run_in_parallel_with_their_own_tools_and_limits() {
    let w = Workspace::new();
    w.write("README.md", "hello from the readme\n");
    w.write(
        ".qwen/agents/finder.md",
        "---\nname: finder\ndescription: Finds files\ntools: [glob]\nrunConfig:\n  max_turns: 2\n---\nYou find files.\n",
    );
    w.write(
        ".qwen/agents/reader.md",
        "---\nname: reader\ndescription: Reads files\ntools: [read_file]\n---\nYou read files.\n",
    );
    let readme = w.ws().join("README.md");
    let (n1, a1) = agent_call("finder", "MARK-FINDER: find the sources");
    let (n2, a2) = agent_call("reader", "MARK-READER: read the readme");
    let server = FakeOpenAi::start(vec![
        calls(&[("a1", n1, a1), ("a2", n2, a2)]),
        Reply::text("Both are done."),
    ])
    .await
    .unwrap();
    // Each sub-agent's first answer waits until the other has asked too: run one
    // after the other, they would time out at the rendezvous.
    server.add_route(
        "MARK-FINDER",
        vec![
            Reply::rendezvous(
                "start",
                2,
                calls(&[("f1", "read_file", json!({"absolute_path": readme}))]),
            ),
            calls(&[("f2", "glob", json!({"pattern": "**/*.md"}))]),
        ],
    );
    server.add_route(
        "MARK-READER",
        vec![
            Reply::rendezvous(
                "start",
                2,
                calls(&[("r1", "read_file", json!({"absolute_path": readme}))]),
            ),
            Reply::text("The readme says hello."),
        ],
    );
    let out = run(&w, &server, &["-o", "stream-json", "go"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.violations(), Vec::<String>::new());

    // Overlapping: each began before the other ended.
    let finder = route_requests(&server, "MARK-FINDER");
    let reader = route_requests(&server, "MARK-READER");
    assert_eq!((finder.len(), reader.len()), (2, 2));
    assert!(finder[0].at < reader[1].at && reader[0].at < finder[1].at);

    // The finder may not read: refused as not available, with why.
    let refused = tool_message(&finder[1].body, "f1");
    assert!(refused.contains("not available"), "{refused}");
    assert!(refused.contains("finder"), "{refused}");
    // Only its own tools are declared.
    let declared: Vec<&str> = finder[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(declared, ["glob"]);

    let parent = server
        .requests()
        .into_iter()
        .filter(|r| r.route.is_none())
        .collect::<Vec<_>>();
    assert_eq!(parent.len(), 2);
    // The enum of agent types, and the answers with their summary lines.
    let agent_decl = parent[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "agent")
        .unwrap()
        .clone();
    let names = &agent_decl["function"]["parameters"]["properties"]["subagent_type"]["enum"];
    assert_eq!(
        *names,
        json!(["Explore", "finder", "general-purpose", "reader"])
    );
    let first = tool_message(&parent[1].body, "a1");
    assert!(first.contains("stopped at its limit of 2 turns"), "{first}");
    assert!(
        first.contains("2 tool calls (1 failed or refused)"),
        "{first}"
    );
    let second = tool_message(&parent[1].body, "a2");
    assert!(
        second.starts_with("The readme says hello.\n\n[sub-agent reader ("),
        "{second}"
    );
    assert!(
        second.contains("answered; 2 turns, 1 tool call,"),
        "{second}"
    );
    // The transcript named in the summary holds the sub-agent's conversation.
    let transcript = second
        .split("transcript ")
        .nth(1)
        .unwrap()
        .trim_end_matches(']');
    let saved = std::fs::read_to_string(transcript).unwrap();
    assert!(saved.contains("MARK-READER"), "{saved}");
    assert!(saved.contains("The readme says hello."), "{saved}");

    // stream-json tags the sub-agents' messages with the `agent` call that started
    // them (the SDK's `parent_tool_use_id`); the main agent's carry null.
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    assert!(lines.iter().any(|v| v["parent_tool_use_id"] == "a2"
        && v["type"] == "user"
        && v["message"]["content"][0]["type"] == "tool_result"
        && v["toolbelt"]["tool"] == "read_file"));
    assert!(
        lines
            .iter()
            .any(|v| v["parent_tool_use_id"] == "a1" && v["type"] == "assistant")
    );
    assert!(
        lines
            .iter()
            .filter(|v| v["type"] == "user" && v["toolbelt"]["tool"] == "agent")
            .all(|v| v["parent_tool_use_id"].is_null()),
        "the parent's own results are not tagged"
    );
    assert!(transcript.ends_with(".jsonl"), "{transcript}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definition_cannot_widen_the_approval_mode() {
    let w = Workspace::new();
    w.write(
        ".qwen/agents/writer.md",
        "---\nname: writer\ndescription: Writes\napprovalMode: yolo\n---\nYou write files.\n",
    );
    let target = w.ws().join("out.txt");
    let (n, a) = agent_call("writer", "MARK-WRITER: write the file");
    let server = FakeOpenAi::start(vec![calls(&[("a1", n, a)]), Reply::text("ok")])
        .await
        .unwrap();
    server.add_route(
        "MARK-WRITER",
        vec![
            calls(&[(
                "w1",
                "write_file",
                json!({"file_path": target, "content": "x"}),
            )]),
            Reply::text("I could not write."),
        ],
    );
    let out = run(&w, &server, &["go"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.violations(), Vec::<String>::new());
    assert!(!target.exists(), "the parent's default mode holds");
    let writer = route_requests(&server, "MARK-WRITER");
    let refused = tool_message(&writer[1].body, "w1");
    assert!(refused.contains("needs the user's approval"), "{refused}");
    let system = writer[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("Approval mode: default"), "{system}");
    let parent_last = server.last_request().unwrap();
    let result = tool_message(&parent_last.body, "a1");
    assert!(
        result.contains("approval mode default (its definition asks for yolo"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recursion_stops_at_depth_three() {
    let w = Workspace::new();
    w.write(
        ".qwen/agents/recurse.md",
        "---\nname: recurse\ndescription: Delegates again\ntools: [agent]\n---\nDelegate.\n",
    );
    let step = |id: &str, next: &str| {
        let (n, a) = agent_call("recurse", next);
        calls(&[(id, n, a)])
    };
    let server = FakeOpenAi::start(vec![step("p1", "MARK-L1"), Reply::text("top done")])
        .await
        .unwrap();
    server.add_route(
        "MARK-L1",
        vec![step("l1", "MARK-L2"), Reply::text("l1 done")],
    );
    server.add_route(
        "MARK-L2",
        vec![step("l2", "MARK-L3"), Reply::text("l2 done")],
    );
    server.add_route(
        "MARK-L3",
        vec![step("l3", "MARK-L4"), Reply::text("bottom")],
    );
    let out = run(&w, &server, &["go"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "top done\n");
    assert_eq!(server.violations(), Vec::<String>::new());
    // With `agent` come the tools that stop its background agents and write to them.
    let l1 = route_requests(&server, "MARK-L1");
    let mut declared: Vec<&str> = l1[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    declared.sort_unstable();
    assert_eq!(declared, ["agent", "send_message", "task_stop"]);
    // Depth 3 has no `agent` tool: the call is refused, no fourth agent starts.
    let l3 = route_requests(&server, "MARK-L3");
    assert!(
        l3[0].body.get("tools").is_none() || l3[0].body["tools"].as_array().unwrap().is_empty()
    );
    let refused = tool_message(&l3[1].body, "l3");
    assert!(refused.contains("not available"), "{refused}");
    assert!(refused.contains("at most 3 deep"), "{refused}");
    assert!(
        server
            .requests()
            .iter()
            .all(|r| !r.body["messages"][1].to_string().contains("MARK-L4")),
    );
    let l2 = route_requests(&server, "MARK-L2");
    assert!(tool_message(&l2[1].body, "l2").starts_with("bottom"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_agent_answers_at_the_parents_next_turn_and_cannot_ask() {
    let w = Workspace::new();
    let target = w.ws().join("bg.txt");
    let server = FakeOpenAi::start(vec![
        calls(&[(
            "a1",
            "agent",
            json!({"description": "background work", "prompt": "MARK-BG: work", "run_in_background": true}),
        )]),
        // Answered only once the background agent has asked too: both run at once.
        Reply::rendezvous("bg", 2, Reply::text("Waiting for the background agent.")),
        Reply::text("The background agent found 42."),
    ])
    .await
    .unwrap();
    server.add_route(
        "MARK-BG",
        vec![
            Reply::rendezvous(
                "bg",
                2,
                calls(&[(
                    "b1",
                    "write_file",
                    json!({"file_path": target, "content": "x"}),
                )]),
            ),
            Reply::text("background result 42"),
        ],
    );
    let out = run(&w, &server, &["go"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "The background agent found 42.\n");
    assert_eq!(server.violations(), Vec::<String>::new());
    let parent = parent_requests(&server);
    assert_eq!(parent.len(), 3);
    let started = tool_message(&parent[1].body, "a1");
    assert!(
        started.contains("in the background as task agent_1"),
        "{started}"
    );
    // The notice is a user message of the next request after the answer.
    let last = last_message(&parent[2].body);
    assert_eq!(last["role"], "user");
    let notice = last["content"].to_string();
    assert!(notice.contains("task agent_1"), "{notice}");
    assert!(notice.contains("background result 42"), "{notice}");
    // It could not ask for the write.
    let bg = route_requests(&server, "MARK-BG");
    let refused = tool_message(&bg[1].body, "b1");
    assert!(refused.contains("cannot ask anyone"), "{refused}");
    assert!(!target.exists());
}

fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat[stat.rfind(')').unwrap() + 1..]
            .split_whitespace()
            .next()
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_run_ends_sub_agents_and_their_processes() {
    let w = Workspace::new();
    let (n, a) = agent_call("general-purpose", "MARK-SLEEP: wait");
    let server = FakeOpenAi::start(vec![calls(&[("a1", n, a)])])
        .await
        .unwrap();
    server.add_route(
        "MARK-SLEEP",
        vec![calls(&[(
            "s1",
            "run_shell_command",
            json!({"command": "echo $$ > sleep.pid; exec sleep 30"}),
        )])],
    );
    let env = env(&server);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let child = w.command(&["--yolo", "go"], &env).spawn().unwrap();
    let pid_file = w.ws().join("sleep.pid");
    let deadline = Instant::now() + Duration::from_secs(30);
    let sleep_pid: u32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            Instant::now() < deadline,
            "the sub-agent's command never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // `$$` names the shell in the PID namespace approved commands share.
    let sleep_pid =
        toolbelt_process::isolate::host_pid_below(child.id().unwrap(), sleep_pid).unwrap();
    assert!(!ended(sleep_pid));
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().unwrap().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = wait(child).await;
    assert_eq!(out.code, 130, "{}", out.stderr);
    assert!(ended(sleep_pid), "the sub-agent's sleep outlived the run");
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_list_shows_levels_tools_and_broken_files() {
    let w = Workspace::new();
    let home_agents = w.dir.path().join("home/.qwen/agents");
    std::fs::create_dir_all(&home_agents).unwrap();
    std::fs::write(
        home_agents.join("reviewer.md"),
        "---\nname: reviewer\ndescription: The user's reviewer\n---\nReview.\n",
    )
    .unwrap();
    std::fs::write(
        home_agents.join("mine.md"),
        "---\nname: mine\ndescription: Only the user's\ntools: [\"mcp__github__*\", read_file]\n---\nMine.\n",
    )
    .unwrap();
    w.write(
        ".qwen/agents/reviewer.md",
        "---\nname: reviewer\ndescription: The project's reviewer\napprovalMode: plan\n---\nReview here.\n",
    );
    w.write(
        ".qwen/agents/broken.md",
        "---\nname: broken\ndescription: Broken\ntools: 3\n---\nBody.\n",
    );
    let out = w.run(&["agents", "list", "--json"], &[], None).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let level = |name: &str| {
        v["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name && a["shadowed"] == false)
            .map(|a| a["level"].as_str().unwrap().to_string())
    };
    assert_eq!(level("reviewer").as_deref(), Some("project"));
    assert_eq!(level("mine").as_deref(), Some("user"));
    assert_eq!(level("Explore").as_deref(), Some("builtin"));
    assert_eq!(level("general-purpose").as_deref(), Some("builtin"));
    assert_eq!(level("broken"), None);
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("broken.md:4: key `tools`"), "{warnings}");

    let text = w.run(&["agents", "list"], &[], None).await;
    assert!(
        text.stdout.contains("reviewer [project]"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("reviewer [user] hidden by the project definition"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("tools: mcp__github__*, read_file"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("warning: "), "{}", text.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_stop_stops_a_background_agent_and_a_background_shell_job() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![
        calls(&[
            (
                "s1",
                "run_shell_command",
                json!({"command": "exec sleep 3077", "is_background": true}),
            ),
            (
                "a1",
                "agent",
                json!({"description": "long work", "prompt": "MARK-STOP: work long", "run_in_background": true}),
            ),
        ]),
        // Answered once the background agent is under way.
        Reply::rendezvous(
            "stop",
            2,
            calls(&[
                ("t1", "task_stop", json!({"task_id": "agent_1"})),
                ("t2", "task_stop", json!({"task_id": "bg_1"})),
                ("t3", "task_stop", json!({"task_id": "nope"})),
            ]),
        ),
        Reply::text("Everything is stopped."),
    ])
    .await
    .unwrap();
    server.add_route(
        "MARK-STOP",
        vec![Reply::rendezvous(
            "stop",
            2,
            calls(&[(
                "x1",
                "run_shell_command",
                json!({"command": "exec sleep 30"}),
            )]),
        )],
    );
    let out = run(&w, &server, &["--yolo", "go"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Everything is stopped.\n");
    assert_eq!(server.violations(), Vec::<String>::new());
    let parent = parent_requests(&server);
    assert_eq!(parent.len(), 3);
    let started = tool_message(&parent[1].body, "s1");
    assert!(started.contains("PID: "), "{started}");
    let stopped_agent = tool_message(&parent[2].body, "t1");
    assert!(
        stopped_agent.contains("agent_1 was stopped"),
        "{stopped_agent}"
    );
    let stopped_job = tool_message(&parent[2].body, "t2");
    assert!(stopped_job.contains("Background job bg_1"), "{stopped_job}");
    assert!(stopped_job.contains("was stopped"), "{stopped_job}");
    // The PID named an id in the namespace toolbelt's approved commands shared, gone with
    // it: no `sleep 3077` is left on the machine.
    let left = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|c| c == b"sleep\x003077\x00");
    assert!(!left, "the background job outlived task_stop");
    let unknown = tool_message(&parent[2].body, "t3");
    assert!(
        unknown.contains("No running task has the id \"nope\""),
        "{unknown}"
    );
    // The stopped agent's notice came before the next request.
    let last = last_message(&parent[2].body);
    assert_eq!(last["role"], "user");
    let notice = last["content"].to_string();
    assert!(notice.contains("task agent_1"), "{notice}");
    assert!(notice.contains("cancelled"), "{notice}");
}

/// A FIFO in the workspace: a shell call that reads it waits until another writes it,
/// which orders a sub-agent's step after the parent's without any timing.
fn gate(w: &Workspace) {
    let status = std::process::Command::new("mkfifo")
        .arg(w.ws().join("gate"))
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_message_reaches_a_running_background_agent_before_its_next_step() {
    let w = Workspace::new();
    gate(&w);
    let server = FakeOpenAi::start(vec![
        calls(&[(
            "a1",
            "agent",
            json!({"description": "count", "prompt": "MARK-MSG: count the files", "run_in_background": true}),
        )]),
        // Sent once the sub-agent's first request is on its way (so it cannot carry
        // the message).
        Reply::rendezvous(
            "asked",
            2,
            calls(&[(
                "m1",
                "send_message",
                json!({"task_id": "agent_1", "message": "Count only the .rs files."}),
            )]),
        ),
        // The sub-agent waits on the gate until the message is queued.
        calls(&[(
            "g1",
            "run_shell_command",
            json!({"command": "echo open > gate"}),
        )]),
        // Its request is on its way before the sub-agent answers, so the notice comes
        // at the next turn.
        Reply::rendezvous("answered", 2, Reply::text("Waiting for the count.")),
        calls(&[
            (
                "m2",
                "send_message",
                json!({"task_id": "agent_1", "message": "Too late?"}),
            ),
            (
                "m3",
                "send_message",
                json!({"task_id": "agent_9", "message": "Anyone?"}),
            ),
            (
                "m4",
                "send_message",
                json!({"task_id": "agent_1", "message": "  "}),
            ),
        ]),
        Reply::text("Done."),
    ])
    .await
    .unwrap();
    server.add_route(
        "MARK-MSG",
        vec![
            Reply::rendezvous(
                "asked",
                2,
                calls(&[(
                    "x1",
                    "run_shell_command",
                    json!({"command": "read -r line < gate; echo \"gate $line\""}),
                )]),
            ),
            Reply::rendezvous("answered", 2, Reply::text("There are 3 .rs files.")),
        ],
    );
    let out = run(&w, &server, &["--yolo", "go"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Done.\n");
    assert_eq!(server.violations(), Vec::<String>::new());

    let parent = parent_requests(&server);
    assert_eq!(parent.len(), 6);
    let queued = tool_message(&parent[2].body, "m1");
    assert!(
        queued.contains("queued for background agent agent_1"),
        "{queued}"
    );

    // The sub-agent's second request: its shell call answered, then the message.
    let sub = route_requests(&server, "MARK-MSG");
    assert_eq!(sub.len(), 2);
    let messages = sub[1].body["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(messages[n - 2]["role"], "tool");
    assert!(
        messages[n - 2]["content"]
            .as_str()
            .unwrap()
            .contains("gate open")
    );
    assert_eq!(messages[n - 1]["role"], "user");
    let told = messages[n - 1]["content"].to_string();
    assert!(told.contains("Count only the .rs files."), "{told}");
    assert!(told.contains("send_message"), "{told}");

    // Its answer reached the parent as a notice, and then it takes no more messages.
    let notice = last_content(&parent[4].body);
    assert!(notice.contains("There are 3 .rs files."), "{notice}");
    assert!(!notice.contains("before reading"), "{notice}");
    let late = tool_message(&parent[5].body, "m2");
    assert!(late.contains("agent_1 has ended"), "{late}");
    assert!(late.contains("not delivered"), "{late}");
    let unknown = tool_message(&parent[5].body, "m3");
    assert!(
        unknown.contains("No background agent has the id \"agent_9\""),
        "{unknown}"
    );
    let empty = tool_message(&parent[5].body, "m4");
    assert!(
        empty.contains("message must be a non-empty string"),
        "{empty}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_a_stopped_agent_never_read_is_named_in_its_notice() {
    let w = Workspace::new();
    gate(&w);
    let server = FakeOpenAi::start(vec![
        calls(&[(
            "a1",
            "agent",
            json!({"description": "wait", "prompt": "MARK-UNREAD: wait at the gate", "run_in_background": true}),
        )]),
        Reply::rendezvous(
            "asked",
            2,
            calls(&[(
                "m1",
                "send_message",
                json!({"task_id": "agent_1", "message": "Also look at the docs."}),
            )]),
        ),
        calls(&[("t1", "task_stop", json!({"task_id": "agent_1"}))]),
        Reply::text("Stopped."),
    ])
    .await
    .unwrap();
    server.add_route(
        "MARK-UNREAD",
        vec![
            // Never opened: the call waits until task_stop cancels it.
            Reply::rendezvous(
                "asked",
                2,
                calls(&[(
                    "x1",
                    "run_shell_command",
                    json!({"command": "read -r line < gate"}),
                )]),
            ),
        ],
    );
    let out = run(&w, &server, &["--yolo", "go"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Stopped.\n");
    let parent = parent_requests(&server);
    assert_eq!(parent.len(), 4);
    let notice = last_content(&parent[3].body);
    assert!(notice.contains("cancelled"), "{notice}");
    assert!(
        notice.contains("ended before reading this message"),
        "{notice}"
    );
    assert!(notice.contains("Also look at the docs."), "{notice}");
    assert_eq!(route_requests(&server, "MARK-UNREAD").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_comes_while_the_agent_answers_is_read_before_it_ends() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![
        calls(&[(
            "a1",
            "agent",
            json!({"description": "survey", "prompt": "MARK-LAST: survey the repo", "run_in_background": true}),
        )]),
        Reply::rendezvous(
            "asked",
            2,
            calls(&[(
                "m1",
                "send_message",
                json!({"task_id": "agent_1", "message": "Include the docs folder."}),
            )]),
        ),
        // Reached only once the message is queued.
        Reply::rendezvous("sent", 2, Reply::text("Waiting.")),
        Reply::text("Done."),
    ])
    .await
    .unwrap();
    server.add_route(
        "MARK-LAST",
        vec![
            // Its answer without tool calls comes after the message was queued: it would
            // end here without reading it.
            Reply::rendezvous(
                "asked",
                2,
                Reply::rendezvous("sent", 2, Reply::text("Surveyed: src only.")),
            ),
            Reply::text("Surveyed: src and docs."),
        ],
    );
    let out = run(&w, &server, &["--yolo", "go"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Done.\n");
    assert_eq!(server.violations(), Vec::<String>::new());
    let sub = route_requests(&server, "MARK-LAST");
    assert_eq!(sub.len(), 2, "the agent ended without reading the message");
    let told = last_content(&sub[1].body);
    assert!(told.contains("Include the docs folder."), "{told}");
    let parent = parent_requests(&server);
    let notice = last_content(&parent.last().unwrap().body);
    assert!(notice.contains("Surveyed: src and docs."), "{notice}");
}
