//! Prompt turns with tools: what the editor is shown (tool calls with their kind,
//! locations and diffs, the plan, the answer), what it is asked, and what its answers
//! do to the files.

use serde_json::{Value, json};

use toolbelt_model::fake_server::{FakeOpenAi, Reply};

use crate::{
    Editor, Seen, call, clean, model_call, model_env, option_kinds, say, sdk_dir, start,
    tool_messages,
};

/// The turn of the issue: the model reads a file, edits one (asked, allowed once, shown
/// as a diff), runs a command (asked, allowed once) and writes a todo list (a `plan`);
/// its words arrive as message chunks and the turn ends with `end_turn`. The editor
/// offered no fs capability, so no fs/* request is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_reads_edits_runs_and_plans() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    e.write("notes.txt", "the answer is 42\n");
    e.write("code.txt", "let x = 1;\n");
    let script = read_edit_run_plan(&e);
    let mut steps = start();
    steps.push(json!({"op": "prompt", "text": "make x 2"}));
    let seen = e
        .drive(
            &["--model-replay", &script],
            &["allow_once", "allow_once"],
            json!(steps),
            json!({}),
        )
        .await;
    assert_eq!(seen.result(2)["stopReason"], "end_turn");
    let said = seen.text_of("agent_message_chunk", Some(2));
    assert!(said.starts_with("Let me look at the notes."), "{said}");
    assert!(said.ends_with("All done: x is 2."), "{said}");

    let read = seen.tool_call("read");
    assert_eq!(read["locations"][0]["path"], e.path("notes.txt"), "{read}");
    assert_eq!(read["status"], "completed", "{read}");
    assert!(
        read["title"].as_str().is_some_and(|t| !t.is_empty()),
        "{read}"
    );
    assert_eq!(read["rawInput"]["file_path"], e.path("notes.txt"), "{read}");
    assert!(
        read["title"].as_str().unwrap().contains("notes.txt"),
        "the title says what the call does: {read}"
    );
    assert!(
        read["rawOutput"].to_string().contains("the answer is 42"),
        "{read}"
    );

    let edit = seen.tool_call("edit");
    assert_eq!(edit["locations"][0]["path"], e.path("code.txt"), "{edit}");
    assert_eq!(edit["status"], "completed", "{edit}");
    check_one_diff(&edit, &e.path("code.txt"), "let x = 1;", "let x = 2;");
    assert_eq!(e.read("code.txt"), "let x = 2;\n");

    let shell = seen.tool_call("execute");
    assert_eq!(shell["status"], "completed", "{shell}");
    assert_eq!(e.read("shell-out.txt"), "ran\n");

    // Asked twice, in order: the edit, then the command; each with its tool call.
    let asked = seen.permissions();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(
        asked[0]["request"]["toolCall"]["toolCallId"],
        edit["toolCallId"]
    );
    assert_eq!(
        asked[1]["request"]["toolCall"]["toolCallId"],
        shell["toolCallId"]
    );
    for question in asked {
        let kinds = option_kinds(question);
        assert!(kinds.contains(&"allow_once".to_string()), "{kinds:?}");
        assert!(kinds.contains(&"reject_once".to_string()), "{kinds:?}");
    }

    assert_eq!(
        plan_entries(&seen),
        [
            ("Change x to 2".to_string(), "completed".to_string()),
            ("Add a test for x".to_string(), "pending".to_string())
        ]
    );
    assert_eq!(seen.raw["fs"], json!([]), "no fs capability was offered");
}

/// The model of that turn: a read, an edit, a command, a todo list, the answer.
fn read_edit_run_plan(e: &Editor) -> String {
    let todos = json!([
        {"id": "1", "content": "Change x to 2", "status": "completed"},
        {"id": "2", "content": "Add a test for x", "status": "pending"},
    ]);
    let mut first = call(
        "c_read",
        "read_file",
        json!({"file_path": e.path("notes.txt")}),
    );
    first["text"] = json!("Let me look at the notes.");
    e.script(
        "model.jsonl",
        &[
            first,
            call(
                "c_edit",
                "edit",
                json!({"file_path": e.path("code.txt"), "old_string": "let x = 1;", "new_string": "let x = 2;"}),
            ),
            call(
                "c_shell",
                "run_shell_command",
                json!({"command": "printf 'ran\\n' > shell-out.txt"}),
            ),
            call("c_todo", "todo_write", json!({ "todos": todos })),
            say("All done: x is 2."),
        ],
    )
}

/// The edit's updates carry one `diff` of `path`, from `old` to `new`.
fn check_one_diff(edit: &Value, path: &str, old: &str, new: &str) {
    let diffs: Vec<&Value> = edit["updateContents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "diff")
        .collect();
    assert_eq!(diffs.len(), 1, "one diff in the edit's updates: {edit}");
    assert_eq!(diffs[0]["path"], path);
    assert!(
        diffs[0]["oldText"].as_str().unwrap().contains(old),
        "{}",
        diffs[0]
    );
    assert!(
        diffs[0]["newText"].as_str().unwrap().contains(new),
        "{}",
        diffs[0]
    );
}

/// The entries (content, status) of the last `plan` update of the prompt (step 2).
fn plan_entries(seen: &Seen) -> Vec<(String, String)> {
    let plans = seen.updates_of("plan", Some(2));
    let last = plans.last().expect("a plan update");
    last["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|en| {
            (
                en["content"].as_str().unwrap().to_string(),
                en["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

pub(crate) fn edit_turn(e: &Editor, id: &str, file: &str, old: &str, new: &str) -> Value {
    call(
        id,
        "edit",
        json!({"file_path": e.path(file), "old_string": old, "new_string": new}),
    )
}

/// With `fs.readTextFile` and `fs.writeTextFile` offered, a read and an edit go through
/// the editor: the model is given the editor's unsaved buffer, and the edit is written
/// with `fs/write_text_file` (which the driver writes to disk).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editors_fs_is_used_when_offered() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    e.write("notes.txt", "saved text\n");
    e.write("code.txt", "let x = 1;\n");
    let server = FakeOpenAi::start(vec![
        model_call("c_read", "read_file", json!({"file_path": e.path("notes.txt")})),
        model_call(
            "c_edit",
            "edit",
            json!({"file_path": e.path("code.txt"), "old_string": "let x = 1;", "new_string": "let x = 2;"}),
        ),
        Reply::text("Done."),
    ])
    .await
    .unwrap();
    let steps = json!([
        {"op": "initialize", "fs": {"read": true, "write": true}},
        {"op": "newSession", "as": "s"},
        {"op": "prompt", "text": "read the notes, make x 2"},
    ]);
    let buffers = json!({ e.path("notes.txt"): "unsaved buffer text\n" });
    let seen = e
        .drive(
            &[],
            &["allow_once"],
            steps,
            json!({ "buffers": buffers, "env": model_env(&server) }),
        )
        .await;
    assert_eq!(seen.result(2)["stopReason"], "end_turn");
    let writes = seen.fs_calls("fs/write_text_file");
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(writes[0]["params"]["path"], e.path("code.txt"));
    assert_eq!(writes[0]["params"]["content"], "let x = 2;\n");
    assert_eq!(writes[0]["params"]["sessionId"], json!(seen.session("s")));
    assert_eq!(e.read("code.txt"), "let x = 2;\n");
    let reads = seen.fs_calls("fs/read_text_file");
    assert!(
        reads
            .iter()
            .any(|r| r["params"]["path"] == e.path("notes.txt")),
        "the editor offered fs.readTextFile, yet notes.txt was not read through it: {reads:?}"
    );
    let told = tool_messages(&server);
    assert!(
        told[0].contains("unsaved buffer text") && !told[0].contains("saved text\\n"),
        "the model reads the editor's buffer: {told:?}"
    );
    clean(&server);
}

/// The editor holds unsaved changes to a file: an edit that would overwrite them is
/// refused, and the file on disk stays as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_over_the_editors_unsaved_changes_is_refused() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    e.write("code.txt", "let x = 1;\n");
    let mut edit = edit_turn(&e, "c_edit", "code.txt", "let x = 1;", "let x = 2;");
    edit["tool_calls"][0]["expect_error"] = json!(true);
    let script = e.script("model.jsonl", &[edit, say("Left it.")]);
    let steps = json!([
        {"op": "initialize", "fs": {"read": true, "write": true}},
        {"op": "newSession", "as": "s"},
        {"op": "prompt", "text": "make x 2"},
    ]);
    let buffers = json!({ e.path("code.txt"): "let x = 1; // typed, not saved\n" });
    let seen = e
        .drive(
            &["--model-replay", &script],
            &["allow_once"],
            steps,
            json!({ "buffers": buffers }),
        )
        .await;
    assert_eq!(seen.result(2)["stopReason"], "end_turn");
    assert_eq!(e.read("code.txt"), "let x = 1;\n");
    assert_eq!(seen.fs_calls("fs/write_text_file"), Vec::<&Value>::new());
    let edit = seen.tool_call("edit");
    assert_eq!(edit["status"], "failed", "{edit}");
}

/// With `terminal` offered, a shell call shows in the editor's terminal
/// (`terminal/create`, shown in the tool call as `terminal` content, released after):
/// the terminal's output is the command's, and the command did its work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_call_shows_in_the_editors_terminal_when_offered() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    let script = e.script(
        "model.jsonl",
        &[
            call(
                "c_shell",
                "run_shell_command",
                json!({"command": "printf 'ran in a terminal\\n' | tee shell-out.txt"}),
            ),
            say("Ran it."),
        ],
    );
    let steps = json!([
        {"op": "initialize", "terminal": true},
        {"op": "newSession", "as": "s"},
        {"op": "prompt", "text": "run it"},
    ]);
    let seen = e
        .drive(
            &["--model-replay", &script],
            &["allow_once"],
            steps,
            json!({}),
        )
        .await;
    assert_eq!(seen.result(2)["stopReason"], "end_turn");
    assert_eq!(e.read("shell-out.txt"), "ran in a terminal\n");
    let calls = seen.raw["terminals"].as_array().unwrap();
    let created: Vec<&Value> = calls
        .iter()
        .filter(|c| c["method"] == "terminal/create")
        .collect();
    assert_eq!(
        created.len(),
        1,
        "the editor's terminal was used: {calls:?}"
    );
    let id = created[0]["terminalId"].clone();
    let shell = seen.tool_call("execute");
    let shown = seen
        .updates()
        .into_iter()
        .filter(|u| u["toolCallId"] == shell["toolCallId"])
        .flat_map(|u| u["content"].as_array().cloned().unwrap_or_default())
        .any(|c| c["type"] == "terminal" && c["terminalId"] == id);
    assert!(shown, "the tool call shows the terminal: {shell}");
    let terminal = seen.raw["terminalOutputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["terminalId"] == id)
        .unwrap();
    assert!(
        terminal["output"]
            .as_str()
            .unwrap()
            .contains("ran in a terminal"),
        "{terminal}"
    );
    assert_eq!(terminal["exit"]["exitCode"], 0, "{terminal}");
    assert!(
        calls
            .iter()
            .any(|c| c["method"] == "terminal/release" && c["params"]["terminalId"] == id),
        "{calls:?}"
    );
}

/// A model that stops at its token limit ends the turn with `max_tokens`; a session over
/// `--max-session-turns` ends it with `max_turn_requests`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stop_reason_says_why_the_turn_ended() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    let cut = e.script(
        "cut.jsonl",
        &[json!({"text": "The answer is cut sh", "finish_reason": "length"})],
    );
    let mut steps = start();
    steps.push(json!({"op": "prompt", "text": "a long answer please"}));
    let seen = e
        .drive(
            &["--model-replay", &cut],
            &[],
            json!(steps.clone()),
            json!({}),
        )
        .await;
    assert_eq!(
        seen.result(2)["stopReason"],
        "max_tokens",
        "{}",
        seen.step(2)
    );
    assert_eq!(
        seen.text_of("agent_message_chunk", Some(2)),
        "The answer is cut sh"
    );

    e.write("notes.txt", "n\n");
    let read = call("c1", "read_file", json!({"file_path": e.path("notes.txt")}));
    let long = e.script("long.jsonl", &[read.clone(), read, say("Never said.")]);
    let seen = e
        .drive(
            &["--model-replay", &long, "--max-session-turns", "1"],
            &[],
            json!(steps),
            json!({}),
        )
        .await;
    assert_eq!(
        seen.result(2)["stopReason"],
        "max_turn_requests",
        "{}",
        seen.step(2)
    );
    assert!(
        !seen
            .text_of("agent_message_chunk", Some(2))
            .contains("Never said.")
    );
}

/// The prompt's answer carries the turn's tokens, summed over its model requests, when
/// the model server counted them; a turn without counts has none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompts_answer_carries_the_turns_tokens() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    e.write("notes.txt", "n\n");
    let mut read = call("c1", "read_file", json!({"file_path": e.path("notes.txt")}));
    read["usage"] = json!({"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12});
    let done = json!({"text": "Read it.", "usage": {"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23}});
    let script = e.script("usage.jsonl", &[read, done, say("No counts.")]);
    let mut steps = start();
    steps.push(json!({"op": "prompt", "text": "read the notes"}));
    steps.push(json!({"op": "prompt", "text": "again"}));
    let seen = e
        .drive(&["--model-replay", &script], &[], json!(steps), json!({}))
        .await;
    let usage = &seen.result(2)["usage"];
    assert_eq!(usage["totalTokens"], 35, "{}", seen.step(2));
    assert_eq!(usage["inputTokens"], 30, "{}", seen.step(2));
    assert_eq!(usage["outputTokens"], 5, "{}", seen.step(2));
    assert!(
        seen.result(3).get("usage").is_none_or(Value::is_null),
        "{}",
        seen.step(3)
    );
}

/// What a model streams as its reasoning (`reasoning_content`, as Qwen's and DeepSeek's
/// servers send it) reaches the editor as `agent_thought_chunk`, apart from the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_reasoning_streams_as_thought_chunks() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    let chunk = |delta: Value, finish: Value| {
        let c = json!({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    let sse = [
        chunk(
            json!({"role": "assistant", "reasoning_content": "Weigh it first."}),
            Value::Null,
        ),
        chunk(json!({"content": "The answer."}), Value::Null),
        chunk(json!({}), json!("stop")),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat();
    let server = FakeOpenAi::start(vec![Reply::RawStream(sse)])
        .await
        .unwrap();
    let mut steps = start();
    steps.push(json!({"op": "prompt", "text": "think"}));
    let seen = e
        .drive(&[], &[], json!(steps), json!({ "env": model_env(&server) }))
        .await;
    assert_eq!(seen.result(2)["stopReason"], "end_turn", "{}", seen.step(2));
    assert_eq!(
        seen.text_of("agent_thought_chunk", Some(2)),
        "Weigh it first."
    );
    assert_eq!(seen.text_of("agent_message_chunk", Some(2)), "The answer.");
    clean(&server);
}
