//! The interactive agent as a person uses it: the real binary in a pseudo-terminal,
//! the fake model server on loopback, keys typed and the screen read back.

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{FinishReason, ModelTurn, ToolCall};

use crate::pty::{Pty, keys};
use crate::support::Workspace;

fn call(id: &str, name: &str, arguments: Value) -> Reply {
    Reply::turn(ModelTurn {
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.to_string(),
        }],
        finish_reason: FinishReason::ToolCalls,
        ..Default::default()
    })
}

fn start(w: &Workspace, server: &FakeOpenAi, args: &[&str]) -> Pty {
    let url = server.base_url();
    let mut all = vec!["--openai-base-url", url.as_str(), "-m", "fake-model"];
    all.extend_from_slice(args);
    let pty = Pty::spawn(
        std::path::Path::new(env!("CARGO_BIN_EXE_toolbelt")),
        &w.ws(),
        w.dir.path(),
        &all,
        &[],
    );
    pty.wait_for(" mode (shift+tab");
    pty
}

fn edit(w: &Workspace, id: &str, old: &str, new: &str) -> Reply {
    call(
        id,
        "edit",
        json!({"file_path": w.ws().join("src/lib.rs"), "old_string": old, "new_string": new}),
    )
}

/// The text of the tool message answering `call_id` in the last request.
fn tool_message(server: &FakeOpenAi, call_id: &str) -> String {
    let body = server.last_request().unwrap().body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .unwrap_or_else(|| panic!("no tool message for {call_id} in {body}"))
}

/// Waits until `text` shows and the request has ended: the text shows while it
/// streams, and quitting earlier would cancel the request (a cancelled answer is not
/// kept).
fn finished_answer(pty: &Pty, text: &str) {
    pty.wait_until(text, |s| s.contains(text) && !s.contains("esc to cancel"));
}

/// The text of each message of the last request.
fn last_request_texts(server: &FakeOpenAi) -> Vec<String> {
    let body = server.last_request().unwrap().body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

fn quit(pty: Pty) {
    pty.send(keys::CTRL_D);
    let (code, screen) = pty.wait_exit_screen();
    assert_eq!(code, 0, "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_runs_after_the_person_approves_its_diff() {
    let w = Workspace::new();
    w.write("src/lib.rs", "fn old() {}\n");
    let server = FakeOpenAi::start(vec![
        edit(&w, "e1", "fn old()", "fn renamed()"),
        Reply::text("Renamed **old** to `renamed`."),
    ])
    .await
    .unwrap();
    tokio::task::block_in_place(|| {
        let pty = start(&w, &server, &[]);
        pty.line("rename old");
        let screen = pty.wait_for("1. Allow once");
        assert!(screen.contains("-fn old() {}"), "{screen}");
        assert!(screen.contains("+fn renamed() {}"), "{screen}");
        assert_eq!(
            std::fs::read_to_string(w.ws().join("src/lib.rs")).unwrap(),
            "fn old() {}\n"
        );
        pty.send(keys::ENTER);
        let screen = pty.wait_for("Renamed old to renamed.");
        assert!(screen.contains("✓ edit"), "{screen}");
        assert_eq!(
            std::fs::read_to_string(w.ws().join("src/lib.rs")).unwrap(),
            "fn renamed() {}\n"
        );
        quit(pty);
    });
    assert!(server.violations().is_empty(), "{:?}", server.violations());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_edit_leaves_the_file_and_tells_the_model_why() {
    let w = Workspace::new();
    w.write("src/lib.rs", "fn old() {}\n");
    let server = FakeOpenAi::start(vec![
        edit(&w, "e1", "fn old()", "fn renamed()"),
        Reply::text("Understood, nothing changed."),
    ])
    .await
    .unwrap();
    tokio::task::block_in_place(|| {
        let pty = start(&w, &server, &[]);
        pty.line("rename old");
        // An untrusted folder: no workspace rule, and the choices numbered 1, 2, 3.
        pty.wait_for("3. Deny");
        pty.send("3");
        pty.wait_for("Tell the model why");
        pty.line("keep the old name");
        pty.wait_for("Understood, nothing changed.");
        quit(pty);
    });
    assert_eq!(
        std::fs::read_to_string(w.ws().join("src/lib.rs")).unwrap(),
        "fn old() {}\n"
    );
    let told = tool_message(&server, "e1");
    assert!(told.contains("keep the old name"), "{told}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowing_a_root_command_for_the_session_stops_the_second_question() {
    let w = Workspace::new();
    let shell = |id: &str, text: &str| {
        call(
            id,
            "run_shell_command",
            json!({"command": format!("touch {text}"), "description": format!("create {text}")}),
        )
    };
    let server = FakeOpenAi::start(vec![
        shell("s1", "first.txt"),
        shell("s2", "second.txt"),
        Reply::text("Both ran."),
    ])
    .await
    .unwrap();
    tokio::task::block_in_place(|| {
        let pty = start(&w, &server, &[]);
        pty.line("say things");
        let screen = pty.wait_for("2. Allow `touch` for this session");
        assert!(screen.contains("$ touch first.txt"), "{screen}");
        assert!(screen.contains("root commands: touch"), "{screen}");
        pty.send("2");
        let screen = pty.wait_for("Both ran.");
        assert!(!screen.contains("Allow once"), "asked again:\n{screen}");
        assert_eq!(screen.matches("✓ run_shell_command").count(), 2, "{screen}");
        quit(pty);
    });
    assert!(w.ws().join("first.txt").exists() && w.ws().join("second.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn esc_cancels_a_running_command_and_kills_it() {
    let w = Workspace::new();
    // A duration no other process uses, to find it among the system's processes.
    let marker = "30.4711";
    let server = FakeOpenAi::start(vec![
        call(
            "s1",
            "run_shell_command",
            json!({"command": format!("echo ready-$((40+2)); sleep {marker}"), "description": "wait"}),
        ),
        Reply::text("after the cancel"),
    ])
    .await
    .unwrap();
    tokio::task::block_in_place(|| {
        let pty = start(&w, &server, &["--yolo"]);
        pty.line("wait a while");
        pty.wait_for("ready-42");
        // The shell starts `sleep` after the echo: poll for it, bounded.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !sleep_running(marker) {
            assert!(
                std::time::Instant::now() < deadline,
                "the command never ran"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        pty.send(keys::ESC);
        let screen = pty.wait_for("Request cancelled.");
        assert!(screen.contains("⊘ run_shell_command"), "{screen}");
        // The status line stops saying "cancelling…" once the request has ended.
        pty.wait_until("the cancelling notice gone", |s| {
            s.contains("Request cancelled.") && !s.contains("cancelling…")
        });
        assert!(!sleep_running(marker), "the sleep outlived the cancel");
        // The session goes on: the next prompt gets the model's answer.
        pty.line("go on");
        pty.wait_for("after the cancel");
        quit(pty);
    });
    let told = tool_message(&server, "s1");
    assert!(!told.is_empty());
}

/// Whether a `sleep MARKER` process exists (Linux `/proc`).
fn sleep_running(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            c.starts_with("sleep ") && c.contains(marker)
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shift_tab_switches_to_plan_mode_which_refuses_edits() {
    let w = Workspace::new();
    w.write("src/lib.rs", "fn old() {}\n");
    let server = FakeOpenAi::start(vec![
        edit(&w, "e1", "fn old()", "fn renamed()"),
        Reply::text("I will plan first."),
    ])
    .await
    .unwrap();
    tokio::task::block_in_place(|| {
        let pty = start(&w, &server, &[]);
        for mode in ["auto-edit mode", "yolo mode", "plan mode"] {
            pty.send(keys::SHIFT_TAB);
            pty.wait_for(mode);
        }
        pty.line("rename old");
        let screen = pty.wait_for("I will plan first.");
        assert!(screen.contains("✗ edit"), "{screen}");
        quit(pty);
    });
    assert_eq!(
        std::fs::read_to_string(w.ws().join("src/lib.rs")).unwrap(),
        "fn old() {}\n"
    );
    let told = tool_message(&server, "e1");
    assert!(told.contains("Plan mode is active"), "{told}");
}

/// Claude's `dontAsk`: what would ask is refused without a dialog, and the model is told
/// why; choosing a mode (shift+tab, round to default) leaves it, and the dialog is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dont_ask_mode_refuses_without_a_dialog_until_another_mode_is_chosen() {
    let w = Workspace::new();
    w.write("src/lib.rs", "fn old() {}\n");
    let server = FakeOpenAi::start(vec![
        edit(&w, "e1", "fn old()", "fn renamed()"),
        Reply::text("It was refused."),
        edit(&w, "e2", "fn old()", "fn renamed()"),
        Reply::text("Renamed it now."),
    ])
    .await
    .unwrap();
    tokio::task::block_in_place(|| {
        let pty = start(&w, &server, &["--approval-mode", "dontAsk"]);
        pty.line("rename old");
        finished_answer(&pty, "It was refused.");
        let screen = pty.wait_for("It was refused.");
        assert!(
            !screen.contains("Allow once"),
            "asked in dontAsk mode:\n{screen}"
        );
        assert!(screen.contains("⊘ edit"), "{screen}");
        let told = tool_message(&server, "e1");
        assert!(told.contains("dontAsk mode"), "{told}");
        assert_eq!(
            std::fs::read_to_string(w.ws().join("src/lib.rs")).unwrap(),
            "fn old() {}\n"
        );
        for mode in ["auto-edit mode", "yolo mode", "plan mode", "default mode"] {
            pty.send(keys::SHIFT_TAB);
            pty.wait_for(mode);
        }
        pty.line("try again");
        pty.wait_for("1. Allow once");
        pty.send(keys::ENTER);
        finished_answer(&pty, "Renamed it now.");
        quit(pty);
    });
    assert_eq!(
        std::fs::read_to_string(w.ws().join("src/lib.rs")).unwrap(),
        "fn renamed() {}\n"
    );
    assert!(server.violations().is_empty(), "{:?}", server.violations());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_after_quitting_resumes_the_conversation() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![
        Reply::text("The answer is 42."),
        Reply::text("You asked about the answer."),
    ])
    .await
    .unwrap();
    tokio::task::block_in_place(|| {
        let pty = start(&w, &server, &[]);
        pty.line("what is the answer");
        finished_answer(&pty, "The answer is 42.");
        pty.send(keys::CTRL_C);
        pty.wait_for("press Ctrl-C again to quit");
        pty.send(keys::CTRL_C);
        assert_eq!(pty.wait_exit(), 0);

        let pty = start(&w, &server, &["--continue"]);
        // The restored conversation is shown: its size and last exchange.
        let screen = pty.wait_for("Resumed a conversation of 1 prompt");
        assert!(screen.contains("what is the answer"), "{screen}");
        assert!(screen.contains("The answer is 42."), "{screen}");
        pty.line("what did I ask");
        // The run must have ended before /stats counts it.
        finished_answer(&pty, "You asked about the answer.");
        pty.line("/stats");
        pty.wait_for("Session: 1 prompts (and 1 before resuming)");
        quit(pty);
    });
    let texts = last_request_texts(&server);
    assert!(texts.iter().any(|t| t == "The answer is 42."), "{texts:?}");
    assert!(texts.iter().any(|t| t == "what is the answer"), "{texts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_always_writes_the_rule_into_the_workspace_settings() {
    let w = Workspace::new();
    w.write(
        ".qwen/settings.json",
        "{\n  // the team's settings\n  \"permissions\": {\"allow\": []}\n}\n",
    );
    let server = FakeOpenAi::start(vec![
        call(
            "s1",
            "run_shell_command",
            json!({"command": "touch made.txt", "description": "make a file"}),
        ),
        Reply::text("Made it."),
    ])
    .await
    .unwrap();
    tokio::task::block_in_place(|| {
        let pty = start(&w, &server, &["--trust-workspace"]);
        pty.line("make a file");
        pty.wait_for("3. Allow always in this workspace");
        pty.send(keys::DOWN);
        pty.send(keys::DOWN);
        pty.send(keys::ENTER);
        let screen = pty.wait_for("Made it.");
        assert!(
            screen.contains("Always allowed in this workspace: run_shell_command(touch *)"),
            "{screen}"
        );
        quit(pty);
    });
    let settings = std::fs::read_to_string(w.ws().join(".qwen/settings.json")).unwrap();
    assert!(settings.contains("// the team's settings"), "{settings}");
    assert!(
        settings.contains("\"run_shell_command(touch *)\""),
        "{settings}"
    );
    assert!(w.ws().join("made.txt").exists());

    // The next session reads the rule: the same command runs without a question.
    let server = FakeOpenAi::start(vec![
        call(
            "s2",
            "run_shell_command",
            json!({"command": "touch again.txt", "description": "make another"}),
        ),
        Reply::text("Made another."),
    ])
    .await
    .unwrap();
    tokio::task::block_in_place(|| {
        let pty = start(&w, &server, &["--trust-workspace"]);
        pty.line("make another");
        let screen = pty.wait_for("Made another.");
        assert!(!screen.contains("Allow once"), "asked again:\n{screen}");
        quit(pty);
    });
    assert!(w.ws().join("again.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_user_question_shows_the_choices_and_the_model_gets_the_pick() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![
        call(
            "q1",
            "ask_user_question",
            json!({"questions": [{
                "question": "Which database should the service use?",
                "header": "Database",
                "options": [
                    {"label": "SQLite", "description": "one file, no server"},
                    {"label": "Postgres", "description": "a server"}
                ]
            }]}),
        ),
        Reply::text("Postgres it is."),
    ])
    .await
    .unwrap();
    tokio::task::block_in_place(|| {
        let pty = start(&w, &server, &[]);
        pty.line("set up storage");
        // The call's own line names the question too: wait for the dialog's options.
        let screen = pty.wait_for("1. SQLite");
        assert!(
            screen.contains("Which database should the service use?"),
            "{screen}"
        );
        assert!(screen.contains("one file, no server"), "{screen}");
        pty.send("2");
        pty.wait_for("Postgres it is.");
        quit(pty);
    });
    let told = tool_message(&server, "q1");
    assert!(told.contains("Postgres"), "{told}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_slash_commands_and_history_across_sessions() {
    let w = Workspace::new();
    w.write("src/lib.rs", "fn old() {}\n");
    let server = FakeOpenAi::start(vec![]).await.unwrap();
    tokio::task::block_in_place(|| {
        let pty = start(&w, &server, &[]);
        // `@path` from the workspace's file list; Tab takes it.
        pty.send("look at @src/li");
        pty.wait_for("@src/lib.rs");
        pty.send("\t");
        pty.wait_for("› look at @src/lib.rs");
        pty.send("\x15"); // Ctrl-U empties the line
        // `/` completes commands; the command runs.
        pty.send("/sta");
        pty.wait_for("/stats");
        pty.send("\t");
        pty.send(keys::ENTER);
        pty.wait_for("Session: 0 prompts");
        quit(pty);

        // The next session has the prompt in its history.
        let pty = start(&w, &server, &[]);
        pty.send("\x1b[A");
        pty.wait_for("› /stats");
        pty.send("\x15");
        quit(pty);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compressed_conversation_is_what_continue_resumes() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![
        Reply::text("The answer is 42."),
        // The summary /compress asks for.
        Reply::text("SUMMARY: the user asked for the answer, which is 42."),
        Reply::text("Resumed from the summary."),
    ])
    .await
    .unwrap();
    tokio::task::block_in_place(|| {
        let pty = start(&w, &server, &[]);
        pty.line("what is the answer to the long question");
        finished_answer(&pty, "The answer is 42.");
        pty.line("/compress");
        pty.wait_for("Compressed the conversation");
        quit(pty);

        let pty = start(&w, &server, &["--continue"]);
        pty.line("go on");
        pty.wait_for("Resumed from the summary.");
        quit(pty);
    });
    let texts = last_request_texts(&server);
    assert!(
        texts.iter().any(|t| t.contains("SUMMARY: the user asked")),
        "{texts:?}"
    );
    assert!(
        !texts.iter().any(|t| t.contains("the long question")),
        "the resumed session still holds what was compressed: {texts:?}"
    );
    assert_eq!(texts.last().unwrap(), "go on");
}

/// The system prompt of the last request the server received.
fn system_prompt(server: &FakeOpenAi) -> String {
    let body = server.last_request().unwrap().body;
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_refresh_add_and_a_new_mode_reach_the_next_system_prompt() {
    let w = Workspace::new();
    w.write("QWEN.md", "Project rule: OLD-RULE.\n");
    let server = FakeOpenAi::start(vec![
        Reply::text("First answer."),
        Reply::text("Second answer."),
        Reply::text("Third answer."),
    ])
    .await
    .unwrap();
    let prompts = tokio::task::block_in_place(|| {
        let mut prompts = Vec::new();
        let pty = start(&w, &server, &[]);
        pty.line("first");
        finished_answer(&pty, "First answer.");
        prompts.push(system_prompt(&server));

        // Changed on disk: the prompt keeps what it was made with until a refresh.
        w.write("QWEN.md", "Project rule: NEW-RULE.\n");
        pty.line("/memory show");
        pty.wait_for("OLD-RULE");
        pty.line("/memory refresh");
        pty.wait_for("NEW-RULE");
        pty.send(keys::SHIFT_TAB);
        pty.wait_for("auto-edit mode");
        pty.line("second");
        finished_answer(&pty, "Second answer.");
        prompts.push(system_prompt(&server));

        pty.line("/memory add Indent with TABS-ALWAYS");
        pty.wait_for("remembered that");
        pty.line("third");
        finished_answer(&pty, "Third answer.");
        prompts.push(system_prompt(&server));
        quit(pty);
        prompts
    });
    assert!(prompts[0].contains("OLD-RULE"), "{}", prompts[0]);
    assert!(
        prompts[0].contains("Approval mode: default"),
        "{}",
        prompts[0]
    );
    assert!(prompts[1].contains("NEW-RULE"), "{}", prompts[1]);
    assert!(!prompts[1].contains("OLD-RULE"), "{}", prompts[1]);
    assert!(
        prompts[1].contains("Approval mode: auto-edit"),
        "{}",
        prompts[1]
    );
    assert!(!prompts[1].contains("TABS-ALWAYS"), "{}", prompts[1]);
    assert!(prompts[2].contains("TABS-ALWAYS"), "{}", prompts[2]);
    assert!(prompts[2].contains("NEW-RULE"), "{}", prompts[2]);
}

/// toolbelt run by a shell that, once it has exited, reads one line from the terminal
/// and shows it: whatever toolbelt left in the terminal's input (a cursor-position
/// reply read too late, say) would reach the person's shell the same way.
fn start_under_shell(w: &Workspace, server: &FakeOpenAi) -> Pty {
    let url = server.base_url();
    let script = "\"$0\" --openai-base-url \"$1\" -m fake-model; printf '\\nEXITED %s\\n' \"$?\"; \
                  IFS= read -r line; printf 'LEFT[%s]\\n' \"$line\" | od -c | head -3; printf 'DONE\\n'";
    let pty = Pty::spawn(
        std::path::Path::new("bash"),
        &w.ws(),
        w.dir.path(),
        &["-c", script, env!("CARGO_BIN_EXE_toolbelt"), url.as_str()],
        &[],
    );
    pty.wait_for(" mode (shift+tab");
    pty
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quitting_leaves_the_terminal_clean_and_nothing_in_its_input() {
    let ways: [(&str, &[&str]); 3] = [
        ("Ctrl-D", &[keys::CTRL_D]),
        ("/quit", &["/quit", keys::ENTER]),
        ("Ctrl-C twice", &[keys::CTRL_C, keys::CTRL_C]),
    ];
    for (way, keys_to_quit) in ways {
        let w = Workspace::new();
        let server = FakeOpenAi::start(vec![Reply::text("Hello from the model.")])
            .await
            .unwrap();
        tokio::task::block_in_place(|| {
            let pty = start_under_shell(&w, &server);
            pty.line("say hello");
            finished_answer(&pty, "Hello from the model.");
            for (i, k) in keys_to_quit.iter().enumerate() {
                pty.send(k);
                // After the first press only: the second quits, and the notice may be
                // gone (the viewport cleared) before the screen is looked at.
                if *k == keys::CTRL_C && i + 1 < keys_to_quit.len() {
                    pty.wait_for("press Ctrl-C again to quit");
                }
            }
            let screen = pty.wait_for("EXITED 0");
            // The live viewport (input box, status line) is gone; the answer stays in
            // the scroll-back, and the saved-session line stands on a line of its own.
            assert!(
                !screen.contains("shift+tab"),
                "{way}: status line left:\n{screen}"
            );
            assert!(screen.contains("Hello from the model."), "{way}:\n{screen}");
            let saved = screen
                .lines()
                .find(|l| l.contains("Session saved"))
                .unwrap_or_else(|| panic!("{way}: no saved-session line:\n{screen}"));
            assert!(
                saved.trim_start().starts_with("Session saved"),
                "{way}: drawn over: {saved:?}"
            );
            pty.send("Z\r");
            let screen = pty.wait_for("DONE");
            // `od -c` of "LEFT[Z]\n": nothing but the key typed after the exit.
            assert!(
                screen.contains("L   E   F   T   [   Z   ]  \\n"),
                "{way}: something was left in the terminal's input:\n{screen}"
            );
            assert_eq!(pty.wait_exit(), 0);
        });
    }
}

#[test]
fn tools_call_on_a_terminal_prints_a_commands_output_once() {
    let w = Workspace::new();
    let pty = Pty::spawn(
        std::path::Path::new(env!("CARGO_BIN_EXE_toolbelt")),
        &w.ws(),
        w.dir.path(),
        &[
            "tools",
            "call",
            "run_shell_command",
            r#"{"command": "printf 'once-%s\n' 42"}"#,
        ],
        &[],
    );
    let (code, screen) = pty.wait_exit_screen();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(screen.matches("once-42").count(), 1, "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_from_outside_puts_the_terminal_back() {
    let w = Workspace::new();
    let server = FakeOpenAi::start(vec![Reply::text("unused")])
        .await
        .unwrap();
    tokio::task::block_in_place(|| {
        let pty = start_under_shell(&w, &server);
        // toolbelt is the shell's child.
        let shell = pty.pid();
        let children =
            std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
        let toolbelt: i32 = children.split_whitespace().next().unwrap().parse().unwrap();
        let status = std::process::Command::new("kill")
            .args(["-INT", &toolbelt.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        pty.wait_for("EXITED 130");
        // A terminal left raw would not turn Enter into a newline: the shell's `read`
        // would never return.
        pty.send("Z\r");
        let screen = pty.wait_for("DONE");
        assert!(
            screen.contains("L   E   F   T   [   Z   ]  \\n"),
            "{screen}"
        );
        assert_eq!(pty.wait_exit(), 0);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_lists_the_checkpoint_shows_its_diff_asks_and_puts_the_file_back() {
    let w = Workspace::new();
    w.write("src/lib.rs", "fn old() {}\n");
    let server = FakeOpenAi::start(vec![
        edit(&w, "e1", "fn old()", "fn renamed()"),
        Reply::text("Renamed."),
    ])
    .await
    .unwrap();
    let file = w.ws().join("src/lib.rs");
    tokio::task::block_in_place(|| {
        let pty = start(&w, &server, &[]);
        pty.line("rename old");
        pty.wait_for("1. Allow once");
        pty.send(keys::ENTER);
        finished_answer(&pty, "Renamed.");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "fn renamed() {}\n");

        pty.line("/restore");
        let screen = pty.wait_for("Restore one with /restore ID");
        // `ID  time  what  (1 file changed since)`: the checkpoint before the edit.
        let id = screen
            .lines()
            .find(|l| l.contains("edit") && l.contains("1 file changed since"))
            .and_then(|l| l.split_whitespace().next())
            .unwrap_or_else(|| panic!("no checkpoint of the edit listed:\n{screen}"))
            .to_string();

        pty.line(&format!("/restore {id}"));
        pty.wait_for(&format!("Restore checkpoint {id}?"));
        // Asked about the files, with the sides named; nothing about a model.
        let screen = pty.wait_for("2. No, leave the files as they are");
        assert!(screen.contains("fn old() {}"), "{screen}");
        assert!(screen.contains("1. Yes, restore these files"), "{screen}");
        assert!(screen.contains("src/lib.rs (checkpoint)"), "{screen}");
        assert!(!screen.contains("tell the model"), "{screen}");
        // Nothing changes before the answer.
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "fn renamed() {}\n");
        pty.send(keys::ENTER);
        let screen = pty.wait_for("Restored 1 path(s)");
        assert!(
            screen.contains("To undo this restore: /restore "),
            "{screen}"
        );
        // Nothing here is ignored: no note about ignored files.
        assert!(!screen.contains("ignore rules"), "{screen}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "fn old() {}\n");
        quit(pty);
    });
    assert!(server.violations().is_empty(), "{:?}", server.violations());
}

/// `toolbelt mcp serve` typed into a terminal says what it is and how to end it (a
/// silent stdio server looks hung); Ctrl-C ends it, as it ends any command (130).
#[test]
fn mcp_serve_in_a_terminal_says_what_it_is() {
    let w = Workspace::new();
    let pty = Pty::spawn(
        std::path::Path::new(env!("CARGO_BIN_EXE_toolbelt")),
        &w.ws(),
        w.dir.path(),
        &["mcp", "serve"],
        &[],
    );
    let screen = pty.wait_for("Ctrl-C ends it");
    assert!(
        screen.contains("MCP server on standard input and output"),
        "{screen}"
    );
    pty.send("\u{3}");
    let (code, screen) = pty.wait_exit_screen();
    assert_eq!(code, 130, "{screen}");
}

/// The workspace as a repository on `main` with one commit.
fn repository(w: &Workspace) {
    let ws = w.ws();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(&ws)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q", "-b", "main"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
    ]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_line_names_the_worktree_the_session_works_in() {
    let w = Workspace::new();
    repository(&w);
    let server = FakeOpenAi::start(vec![
        call("e1", "enter_worktree", json!({"name": "side"})),
        Reply::text("entered it"),
    ])
    .await
    .unwrap();
    let pty = start(&w, &server, &["--worktree=feat"]);
    pty.wait_for("worktree feat");
    keep_and_quit(pty);

    let pty = start(&w, &server, &["--yolo"]);
    assert!(!pty.wait_for(" mode (shift+tab").contains("worktree "));
    pty.line("go");
    finished_answer(&pty, "entered it");
    pty.wait_for("worktree side");
    keep_and_quit(pty);
}

/// Quits a session in a worktree, keeping it (the first choice).
fn keep_and_quit(pty: Pty) {
    pty.send(keys::CTRL_D);
    pty.wait_for("Keep it?");
    pty.send(keys::ENTER);
    assert_eq!(pty.wait_exit(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quitting_in_a_worktree_asks_keep_remove_or_cancel_with_what_would_be_lost() {
    let w = Workspace::new();
    repository(&w);
    let server = FakeOpenAi::start(vec![]).await.unwrap();
    let feat = w.ws().join(".qwen/worktrees/feat");
    let pty = start(&w, &server, &["--worktree=feat"]);
    std::fs::write(feat.join("draft.txt"), "x").unwrap();
    pty.send(keys::CTRL_D);
    let screen = pty.wait_for("Keep it?");
    assert!(
        screen.contains("losing 0 commit(s), 1 uncommitted file(s)"),
        "{screen}"
    );
    // Cancel: the session goes on.
    pty.send(keys::DOWN);
    pty.send(keys::DOWN);
    pty.send(keys::ENTER);
    pty.wait_until("the question closed", |s| {
        !s.contains("Keep it?") && s.contains("worktree feat")
    });
    // Remove: both go, the draft with them.
    pty.send(keys::CTRL_D);
    pty.wait_for("Keep it?");
    pty.send(keys::DOWN);
    pty.send(keys::ENTER);
    assert_eq!(pty.wait_exit(), 0);
    assert!(!feat.exists());
    let branches = std::process::Command::new("git")
        .arg("-C")
        .arg(w.ws())
        .args(["branch", "--list", "worktree-feat"])
        .output()
        .unwrap();
    assert!(branches.stdout.is_empty());

    // Keep: quits and leaves it.
    let pty = start(&w, &server, &["--worktree=two"]);
    pty.send(keys::CTRL_D);
    pty.wait_for("Keep it?");
    pty.send(keys::ENTER);
    assert_eq!(pty.wait_exit(), 0);
    assert!(w.ws().join(".qwen/worktrees/two").is_dir());
}

/// `/model` lists the configured models and switches the session: the next request
/// names the new model; a model whose key is missing changes nothing and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_lists_the_configured_models_and_switches_the_next_request() {
    let w = Workspace::new();
    let user_settings = w.dir.path().join("home/.qwen/settings.json");
    std::fs::create_dir_all(user_settings.parent().unwrap()).unwrap();
    let settings = json!({"modelProviders": {
        "anthropic": [{"id": "claude-x", "envKey": "TOOLBELT_TEST_UNSET_KEY_2"}],
        "openai": [{"id": "fake-model"}, {"id": "other-model"}]
    }});
    std::fs::write(&user_settings, settings.to_string()).unwrap();
    let server = FakeOpenAi::start(vec![Reply::text("first"), Reply::text("second")])
        .await
        .unwrap();
    tokio::task::block_in_place(|| {
        let pty = start(&w, &server, &[]);
        pty.line("hello");
        finished_answer(&pty, "first");
        pty.line("/model");
        pty.wait_for("anthropic: claude-x");
        pty.line("/model claude-x");
        pty.wait_for("TOOLBELT_TEST_UNSET_KEY_2");
        pty.line("/model other-model");
        pty.wait_for("now talks to other-model");
        pty.line("again");
        finished_answer(&pty, "second");
        quit(pty);
    });
    let models: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(models, ["fake-model", "other-model"]);
}
