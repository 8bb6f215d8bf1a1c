//! Initialization, the session's modes and options, and a connection that survives
//! malformed input.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::{Editor, call, say, sdk_dir, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_answers_version_1_with_toolbelts_capabilities_under_both_flags() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    let script = e.script("model.jsonl", &[say("unused")]);
    for flag in ["--acp", "--experimental-acp"] {
        let seen = e
            .drive(
                &["--model-replay", &script],
                &[],
                json!([
                    {"op": "initialize", "protocolVersion": 1},
                ]),
                json!({ "flag": flag }),
            )
            .await;
        let init = seen.result(0);
        assert_eq!(init["protocolVersion"], 1, "{flag}: {init}");
        let caps = &init["agentCapabilities"];
        assert_eq!(caps["loadSession"], true, "{flag}: {init}");
        assert_eq!(caps["promptCapabilities"]["image"], true, "{flag}: {init}");
        assert_eq!(
            caps["promptCapabilities"]["embeddedContext"], true,
            "{flag}: {init}"
        );
        assert_eq!(caps["mcpCapabilities"]["http"], true, "{flag}: {init}");
        assert_eq!(caps["mcpCapabilities"]["sse"], true, "{flag}: {init}");
        assert_eq!(init["agentInfo"]["name"], "toolbelt", "{flag}: {init}");
        assert!(init["agentInfo"]["version"].is_string(), "{flag}: {init}");
        assert!(init["authMethods"].is_array(), "{flag}: {init}");
        // The editor left: the agent ended on its own.
        assert_eq!(seen.raw["exit"]["code"], 0, "{flag}: {}", seen.summary());
    }
    // A client that asks for a version toolbelt does not have gets toolbelt's latest.
    let seen = e
        .drive(
            &["--model-replay", &script],
            &[],
            json!([{"op": "initialize", "protocolVersion": 99}]),
            json!({}),
        )
        .await;
    assert_eq!(seen.result(0)["protocolVersion"], 1);
}

fn ids(list: &Value, key: &str) -> BTreeSet<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|m| m[key].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_offers_the_four_modes_and_the_model_and_mode_options() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    let script = e.script("model.jsonl", &[say("unused")]);
    let seen = e
        .drive(&["--model-replay", &script], &[], json!(start()), json!({}))
        .await;
    let session = seen.result(1);
    assert!(
        session["sessionId"].as_str().is_some_and(|s| !s.is_empty()),
        "{session}"
    );
    let modes = &session["modes"];
    assert_eq!(modes["currentModeId"], "default", "{session}");
    assert_eq!(
        ids(&modes["availableModes"], "id"),
        BTreeSet::from(["default", "auto-edit", "plan", "yolo"].map(String::from)),
        "{session}"
    );
    let options = session["configOptions"].as_array().unwrap();
    let option = |id: &str| {
        options
            .iter()
            .find(|o| o["id"] == id)
            .unwrap_or_else(|| panic!("no config option {id}: {session}"))
    };
    let mode = option("mode");
    assert_eq!(mode["type"], "select", "{mode}");
    assert_eq!(mode["currentValue"], "default", "{mode}");
    assert_eq!(
        ids(&mode["options"], "value"),
        BTreeSet::from(["default", "auto-edit", "plan", "yolo"].map(String::from)),
        "{mode}"
    );
    let model = option("model");
    assert_eq!(model["type"], "select", "{model}");
    assert!(
        model["currentValue"]
            .as_str()
            .is_some_and(|v| !v.is_empty()),
        "{model}"
    );
    let values = ids(&model["options"], "value");
    assert!(
        values.contains(model["currentValue"].as_str().unwrap()),
        "the current model is one of the choices: {model}"
    );
}

/// `session/set_mode` to plan is announced with a `current_mode_update`, and plan mode
/// refuses an edit without asking; yolo through `session/set_config_option` runs the
/// next one without asking. An unknown mode is an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_mode_and_the_mode_option_change_who_is_asked() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    e.write("code.txt", "let x = 1;\n");
    let edit = |id: &str, new: &str| {
        let mut turn = call(
            id,
            "edit",
            json!({"file_path": e.path("code.txt"), "old_string": "let x = 1;", "new_string": new}),
        );
        if id == "e_plan" {
            turn["tool_calls"][0]["expect_error"] = json!(true);
        }
        turn
    };
    let script = e.script(
        "model.jsonl",
        &[
            edit("e_plan", "let x = 2;"),
            say("Plan mode kept the file."),
            edit("e_yolo", "let x = 3;"),
            say("Edited."),
        ],
    );
    let mut steps = start();
    steps.extend([
        json!({"op": "setMode", "modeId": "plan"}),
        json!({"op": "prompt", "text": "change x to 2"}),
        json!({"op": "setConfigOption", "configId": "mode", "value": "yolo"}),
        json!({"op": "prompt", "text": "change x to 3"}),
        json!({"op": "setMode", "modeId": "no-such-mode"}),
    ]);
    let seen = e
        .drive(&["--model-replay", &script], &[], json!(steps), json!({}))
        .await;
    seen.result(2);
    // Announced once set (the protocol does not say whether before or after the answer).
    let announced: Vec<&Value> = seen
        .updates_of("current_mode_update", None)
        .into_iter()
        .map(|u| &u["currentModeId"])
        .collect();
    assert_eq!(
        announced.first(),
        Some(&&json!("plan")),
        "{}",
        seen.summary()
    );
    assert_eq!(seen.result(3)["stopReason"], "end_turn");
    let options = seen.result(4)["configOptions"].as_array().unwrap().clone();
    let mode = options.iter().find(|o| o["id"] == "mode").unwrap();
    assert_eq!(mode["currentValue"], "yolo", "{mode}");
    assert_eq!(seen.result(5)["stopReason"], "end_turn");
    assert_eq!(
        seen.permissions(),
        &Vec::<Value>::new(),
        "neither plan nor yolo asks"
    );
    // Plan refused the first edit; yolo ran the second.
    assert_eq!(e.read("code.txt"), "let x = 3;\n");
    let refused = seen.merged("e_plan");
    assert_eq!(refused["status"], "failed", "{refused}");
    assert_eq!(seen.error(6)["code"], -32602, "{}", seen.step(6));
}

/// A line that is not JSON gets a parse error (id null), a request for a method that
/// does not exist gets "method not found" (raw or through the SDK), a request whose
/// params do not fit gets "invalid params", and the connection goes on: a session is
/// created and a prompt answered afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbage_line_gets_a_parse_error_and_the_session_goes_on() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    let script = e.script("model.jsonl", &[say("Still here.")]);
    let steps = json!([
        {"op": "initialize"},
        {"op": "raw", "line": "this is not json {", "awaitId": null},
        {"op": "raw", "line": r#"{"jsonrpc":"2.0","id":"raw-1","method":"no/such_method","params":{}}"#, "awaitId": "raw-1"},
        {"op": "request", "method": "toolbelt/no_such_method", "params": {"x": 1}},
        {"op": "raw", "line": r#"{"jsonrpc":"2.0","id":"raw-2","method":"session/new","params":{"cwd":42}}"#, "awaitId": "raw-2"},
        {"op": "newSession", "as": "s"},
        {"op": "prompt", "text": "are you there?"},
    ]);
    let seen = e
        .drive(&["--model-replay", &script], &[], steps, json!({}))
        .await;
    assert_eq!(seen.error(1)["code"], -32700, "{}", seen.step(1));
    assert_eq!(seen.error(2)["code"], -32601, "{}", seen.step(2));
    assert_eq!(seen.error(3)["code"], -32601, "{}", seen.step(3));
    assert_eq!(seen.error(4)["code"], -32602, "{}", seen.step(4));
    assert!(seen.result(5)["sessionId"].is_string());
    assert_eq!(seen.result(6)["stopReason"], "end_turn");
    assert_eq!(seen.text_of("agent_message_chunk", Some(6)), "Still here.");
    assert_eq!(seen.raw["exit"]["code"], 0, "{}", seen.summary());
}

/// An editor that sends requests and closes the pipe at once still gets an answer to
/// each of them before the agent exits ("every call gets a result"). Which of the
/// agent's tasks wins that race varies from run to run, so the same exchange is tried
/// ten times.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_sent_just_before_the_editor_leaves_are_answered() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    let script = e.script("model.jsonl", &[say("unused")]);
    let new = json!({"jsonrpc": "2.0", "id": "n", "method": "session/new",
                     "params": {"cwd": e.ws(), "mcpServers": []}});
    let steps = json!([
        {"op": "raw", "line": r#"{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":1}}"#},
        {"op": "raw", "line": new.to_string()},
    ]);
    for round in 0..10 {
        let seen = e
            .drive(&["--model-replay", &script], &[], steps.clone(), json!({}))
            .await;
        let answered: Vec<&Value> = seen.raw["wire"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["dir"] == "in" && w["msg"].get("method").is_none())
            .map(|w| &w["msg"]["id"])
            .collect();
        assert_eq!(
            answered,
            [&json!("i"), &json!("n")],
            "round {round}: {}",
            seen.summary()
        );
    }
}

/// With no model configured, `session/new` answers ACP's "authentication required"
/// and says what is missing, so the editor can show it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_model_session_new_says_what_is_missing() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    let seen = e.drive(&[], &[], json!(start()), json!({})).await;
    assert_eq!(seen.result(0)["authMethods"], json!([]));
    let error = seen.error(1);
    assert_eq!(error["code"], -32000, "{error}");
    assert!(error.to_string().contains("OPENAI_MODEL"), "{error}");
}

/// The editor sends the prompts: a prompt or a second protocol on the command line is a
/// usage error, not something dropped in silence.
#[test]
fn a_prompt_or_stream_json_beside_acp_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["--acp", "do something"],
        vec!["--acp", "-p", "do something"],
        vec![
            "--acp",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
        ],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .args(&args)
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .env("TOOLBELT_HOME", dir.path().join(".toolbelt"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("--acp"), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
