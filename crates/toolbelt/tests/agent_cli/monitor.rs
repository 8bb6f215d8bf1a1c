//! `monitor` through the real binary and the fake server (issue 33): the model starts a
//! monitor and its next requests carry the command's lines as events, in order; a flood
//! is paced and the drops counted; `task_stop` ends it with no process left; a headless
//! run waits for its monitors, and says which it ended when it stops early.

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{ModelTurn, ToolCall};

use crate::support::Workspace;

fn call(id: &str, name: &str, args: Value) -> Reply {
    Reply::turn(ModelTurn {
        tool_calls: vec![ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            arguments: args.to_string(),
        }],
        ..Default::default()
    })
}

async fn run(w: &Workspace, server: &FakeOpenAi, args: &[&str]) -> crate::support::Run {
    let url = server.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "sk-local"),
        ("OPENAI_MODEL", "m"),
    ];
    w.run(args, &env, None).await
}

/// Every user message after the first prompt, in request order, each once.
fn events(server: &FakeOpenAi) -> String {
    let requests = server.requests();
    let last = requests.last().unwrap();
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .skip(1)
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn tool_message(server: &FakeOpenAi, call_id: &str) -> String {
    let last = server.requests().pop().unwrap();
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap()
        .to_string()
}

fn pid_in(text: &str) -> u32 {
    text.lines()
        .find_map(|l| l.strip_prefix("PID: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
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
async fn a_monitors_lines_reach_the_next_requests_in_order() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![call(
        "m1",
        "monitor",
        json!({"command": "echo one; sleep 1; echo two; sleep 1; echo three", "description": "three lines"}),
    )])
    .await
    .unwrap();
    server.set_fallback(Reply::text("Noted."));
    let out = run(&w, &server, &["--yolo", "watch it"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Noted.\n");
    assert_eq!(server.violations(), Vec::<String>::new());
    let started = tool_message(&server, "m1");
    assert!(started.contains("Monitor bg_1 started"), "{started}");
    let events = events(&server);
    let at = |needle: &str| {
        assert_eq!(events.matches(needle).count(), 1, "{needle} in {events}");
        events.find(needle).unwrap()
    };
    let (one, two, three) = (at("[bg_1] one"), at("[bg_1] two"), at("[bg_1] three"));
    let end = at("[bg_1] ended: the command exited with code 0");
    assert!(one < two && two < three && three < end, "{events}");
    assert!(events.contains("<monitor-events>"), "{events}");
    // The lines came a second apart: not all in one request.
    assert!(server.requests().len() >= 4, "{}", server.requests().len());
    assert!(!out.stderr.contains("has been ended"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_is_rate_limited_and_the_drops_are_counted() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![call(
        "m1",
        "monitor",
        json!({"command": "seq 1 10000", "max_events": 10000}),
    )])
    .await
    .unwrap();
    server.set_fallback(Reply::text("Noted."));
    let out = run(&w, &server, &["--yolo", "flood"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = events(&server);
    let delivered = events
        .lines()
        .filter(|l| {
            l.strip_prefix("[bg_1] ")
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .count();
    // Five at once, then one a second: the run is over in far fewer seconds than lines.
    assert!((5..=20).contains(&delivered), "{delivered}: {events}");
    let summary = events
        .lines()
        .find(|l| l.starts_with("[bg_1] ended: "))
        .unwrap_or_else(|| panic!("no end in {events}"));
    assert!(
        summary.contains(&format!(
            "10000 lines, {delivered} delivered, {} dropped",
            10_000 - delivered
        )),
        "{summary}"
    );
    assert!(
        events.contains("lines dropped: at most 5 events at once"),
        "{events}"
    );
    // What the model was sent stays small: drops are a count, not lines.
    assert!(events.len() < 4000, "{}", events.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_stop_ends_a_monitor_with_no_process_left() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![
        call(
            "m1",
            "monitor",
            json!({"command": "while :; do echo tick; sleep 0.2; done"}),
        ),
        call("t1", "task_stop", json!({"task_id": "bg_1"})),
    ])
    .await
    .unwrap();
    server.set_fallback(Reply::text("Stopped."));
    let out = run(&w, &server, &["--yolo", "watch then stop"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Stopped.\n");
    let pid = pid_in(&tool_message(&server, "m1"));
    let stopped = tool_message(&server, "t1");
    assert!(
        stopped.contains("bg_1") && stopped.contains("was stopped"),
        "{stopped}"
    );
    assert!(ended(pid), "the monitor's shell outlived task_stop");
    let events = events(&server);
    assert!(
        events.contains("[bg_1] ended: stopped (task_stop"),
        "{events}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stopped_by_its_turn_limit_ends_its_monitors_and_says_so() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![
        call(
            "m1",
            "monitor",
            json!({"command": "echo started; exec sleep 60"}),
        ),
        call("r1", "read_file", json!({"file_path": "/nonexistent"})),
    ])
    .await
    .unwrap();
    server.set_fallback(Reply::text("Waiting."));
    let out = run(
        &w,
        &server,
        &["--yolo", "--max-session-turns", "2", "watch"],
    )
    .await;
    assert_eq!(out.code, 53, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "monitor bg_1 (`echo started; exec sleep 60`) was still running and has been ended"
        ),
        "{}",
        out.stderr
    );
    let pid = pid_in(&tool_message(&server, "m1"));
    assert!(ended(pid), "the monitor outlived the run");
}

/// In `--input-format stream-json` a monitor's events are turns the client sees (the
/// model's answers to them are messages), and the session offers the cron tools, which
/// a plain headless run (no idle time to fire them) does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_json_sessions_see_monitor_turns_and_offer_cron() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![
        call(
            "m1",
            "monitor",
            json!({"command": "echo alpha; sleep 0.5; echo beta"}),
        ),
        Reply::text("Started."),
    ])
    .await
    .unwrap();
    server.set_fallback(Reply::text("Event seen."));
    let url = server.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "sk-local"),
        ("OPENAI_MODEL", "m"),
    ];
    let input = [
        json!({"type": "control_request", "request_id": "init", "request": {"subtype": "initialize"}}),
        json!({"type": "user", "session_id": "", "message": {"role": "user", "content": "watch"}, "parent_tool_use_id": null}),
    ]
    .map(|v| v.to_string())
    .join("\n");
    let out = w
        .run(
            &[
                "--yolo",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
            ],
            &env,
            Some(&input),
        )
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let messages: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let init = messages
        .iter()
        .find(|m| m["type"] == "system" && m["subtype"] == "init")
        .unwrap();
    let tools = init["tools"].to_string();
    for tool in ["monitor", "cron_create", "cron_list", "cron_delete"] {
        assert!(tools.contains(&format!("\"{tool}\"")), "{tool} in {tools}");
    }
    let answers: Vec<String> = messages
        .iter()
        .filter(|m| m["type"] == "assistant")
        .map(|m| m["message"]["content"].to_string())
        .collect();
    assert!(
        answers.iter().filter(|a| a.contains("Event seen.")).count() >= 1,
        "{answers:?}"
    );
    let events = events(&server);
    assert!(
        events.contains("[bg_1] alpha") && events.contains("[bg_1] beta"),
        "{events}"
    );
    assert_eq!(messages.iter().filter(|m| m["type"] == "result").count(), 1);
    // Headless: no cron tools.
    let headless = FakeOpenAi::start(vec![Reply::text("ok")]).await.unwrap();
    let out = run(&w, &headless, &["-o", "json", "hi"]).await;
    let all = out.stdout.clone();
    assert!(all.contains("\"monitor\""), "{all}");
    assert!(!all.contains("cron_create"), "{all}");
}

fn find_file(dir: &std::path::Path, name: &str) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == name) {
            return Some(path);
        }
        if path.is_dir()
            && let Some(found) = find_file(&path, name)
        {
            return Some(found);
        }
    }
    None
}

/// A stream-json session where the model schedules a prompt; returns its exit code
/// and its output.
async fn schedule_in_stream_json(w: &Workspace) -> i32 {
    let args = json!({"cron": "17 3 * * *", "prompt": "nightly check"});
    let (code, out) = schedule_with(w, args, &[]).await;
    assert!(out.contains("Scheduled task"), "{out}");
    code
}

/// A stream-json session (with `flags`) where the model calls `cron_create` with `args`.
async fn schedule_with(w: &Workspace, args: serde_json::Value, flags: &[&str]) -> (i32, String) {
    let server = FakeOpenAi::start(vec![
        call("c1", "cron_create", args),
        Reply::text("Scheduled."),
    ])
    .await
    .unwrap();
    let url = server.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "sk-local"),
        ("OPENAI_MODEL", "m"),
    ];
    let input = json!({"type": "user", "session_id": "", "message": {"role": "user", "content": "every night"}, "parent_tool_use_id": null}).to_string();
    let mut args = vec![
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
    ];
    args.extend(flags);
    let out = w.run(&args, &env, Some(&input)).await;
    (out.code, out.stdout)
}

/// Durable scheduled tasks are written only when the person's settings allow them (a
/// cloned repository's settings cannot) and the person approves the task (issue 41):
/// a session task is never saved, and a durable one is refused where nobody can be
/// asked; approved (here by yolo), it is saved with the session and project that made it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_persons_settings_and_yes_make_scheduled_tasks_durable() {
    let w = Workspace::new();
    let durable = json!({"cron": "17 3 * * *", "prompt": "nightly check", "durable": true});
    w.write(
        ".qwen/settings.json",
        r#"{"experimental": {"cronDurable": true}}"#,
    );
    assert_eq!(schedule_with(&w, durable.clone(), &["--yolo"]).await.0, 0);
    assert_eq!(find_file(w.dir.path(), "scheduled-tasks.json"), None);
    let home = w.dir.path().join("home/.qwen");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("settings.json"),
        r#"{"experimental": {"cronDurable": true}}"#,
    )
    .unwrap();
    assert_eq!(schedule_in_stream_json(&w).await, 0);
    assert_eq!(find_file(w.dir.path(), "scheduled-tasks.json"), None);
    let (code, out) = schedule_with(&w, durable.clone(), &[]).await;
    assert_eq!(code, 0);
    // stream-json asks the client, which cannot answer here: refused, nothing kept.
    assert!(out.contains("execution_denied"), "{out}");
    assert_eq!(find_file(w.dir.path(), "scheduled-tasks.json"), None);
    let (code, out) = schedule_with(&w, durable, &["--yolo"]).await;
    assert_eq!(code, 0, "{out}");
    let file = find_file(w.dir.path(), "scheduled-tasks.json").expect("no durable file");
    assert!(!file.starts_with(w.ws()), "{}", file.display());
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(
        saved.contains("nightly check")
            && saved.contains("17 3 * * *")
            && saved.contains(&w.ws().display().to_string())
            && saved.contains("\"session\""),
        "{saved}"
    );
}

mod interactive {
    //! The interactive agent: the prompt comes back while a monitor runs, and its events
    //! start a turn of their own when the session is idle; `/loop` schedules a prompt
    //! and runs it at once.

    use serde_json::json;
    use toolbelt_model::fake_server::{FakeOpenAi, Reply};

    use super::call;
    use crate::pty::{Pty, keys};
    use crate::support::Workspace;

    fn start(w: &Workspace, server: &FakeOpenAi) -> Pty {
        let url = server.base_url();
        let pty = Pty::spawn(
            std::path::Path::new(env!("CARGO_BIN_EXE_toolbelt")),
            &w.ws(),
            w.dir.path(),
            &[
                "--openai-base-url",
                url.as_str(),
                "-m",
                "fake-model",
                "--yolo",
            ],
            &[],
        );
        pty.wait_for(" mode (shift+tab");
        pty
    }

    fn last_user_text(server: &FakeOpenAi) -> String {
        let body = server.last_request().unwrap().body;
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .map(|m| m["content"].to_string())
            .unwrap_or_default()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn monitor_events_start_a_turn_when_the_session_is_idle() {
        let w = Workspace::new();
        let server = FakeOpenAi::start(vec![
            call(
                "m1",
                "monitor",
                json!({"command": "sleep 1; echo later-line; exec sleep 60"}),
            ),
            Reply::text("Watching."),
        ])
        .await
        .unwrap();
        server.set_fallback(Reply::text("Got the event."));
        tokio::task::block_in_place(|| {
            let pty = start(&w, &server);
            pty.line("watch the log");
            // The run ends while the monitor still runs: the prompt is back.
            pty.wait_until("Watching.", |s| {
                s.contains("Watching.") && !s.contains("esc to cancel")
            });
            pty.wait_until("the event turn", |s| {
                s.contains("Got the event.") && !s.contains("esc to cancel")
            });
            assert!(last_user_text(&server).contains("[bg_1] later-line"));
            pty.send(keys::CTRL_D);
            assert_eq!(pty.wait_exit(), 0);
        });
        assert_eq!(server.request_count(), 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn loop_schedules_a_prompt_runs_it_now_and_lists_and_clears() {
        let w = Workspace::new();
        let server = FakeOpenAi::start(vec![]).await.unwrap();
        server.set_fallback(Reply::text("Deploy looks fine."));
        tokio::task::block_in_place(|| {
            let pty = start(&w, &server);
            pty.line("/loop 5m check the deploy");
            let screen = pty.wait_until("the first run", |s| {
                s.contains("Deploy looks fine.") && !s.contains("esc to cancel")
            });
            assert!(screen.contains("every 5 minutes (*/5 * * * *)"), "{screen}");
            assert!(last_user_text(&server).contains("check the deploy"));
            pty.line("/loop list");
            pty.wait_until("the listing", |s| s.contains("recurring  next"));
            pty.line("/loop clear");
            pty.wait_for("Cancelled 1 scheduled task(s).");
            pty.send(keys::CTRL_D);
            assert_eq!(pty.wait_exit(), 0);
        });
        assert_eq!(server.request_count(), 1);
    }
}

/// Issue 40: a monitor is a shell command like any other: no variable that looks like a
/// secret reaches it from toolbelt's environment (the model's key included).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_monitor_gets_no_secret_from_the_environment() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![call(
        "m1",
        "monitor",
        json!({"command": "echo token=${FOO_TOKEN:-none} key=${OPENAI_API_KEY:-none} plain=$PLAIN_SETTING"}),
    )])
    .await
    .unwrap();
    server.set_fallback(Reply::text("Noted."));
    let url = server.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "sk-local"),
        ("OPENAI_MODEL", "m"),
        ("FOO_TOKEN", "secret-foo"),
        ("PLAIN_SETTING", "plain-value"),
    ];
    let out = w.run(&["--yolo", "watch it"], &env, None).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = events(&server);
    assert!(
        events.contains("[bg_1] token=none key=none plain=plain-value"),
        "{events}"
    );
}
