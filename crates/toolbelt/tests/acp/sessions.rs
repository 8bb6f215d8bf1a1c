//! Sessions outlive the process: listed with their cwd, loaded (the conversation
//! replayed as updates), resumed (not replayed) and closed, each time by a new agent
//! process with the same HOME, as an editor restarted.

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};

use crate::{Editor, call, clean, model_env, say, sdk_dir, start};

/// The texts of the user messages the model saw in the last request.
fn conversation(server: &FakeOpenAi) -> String {
    let body = server.last_request().unwrap().body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_session_is_listed_loaded_resumed_and_closed() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    let server = FakeOpenAi::start(vec![
        Reply::text("First answer."),
        Reply::text("Second answer."),
        Reply::text("Third answer."),
    ])
    .await
    .unwrap();
    let env = json!({ "env": model_env(&server) });
    let mut steps = start();
    steps.push(json!({"op": "prompt", "text": "first question"}));
    let first = e.drive(&[], &[], json!(steps), env.clone()).await;
    assert_eq!(first.result(2)["stopReason"], "end_turn");
    let id = first.session("s");

    second_agent_lists_loads_and_continues(&e, &server, &env, &id).await;
    third_agent_resumes_and_closes(&e, &server, &env, &id).await;
    clean(&server);
}

/// A new agent: the session is listed (with and without the cwd filter, not under
/// another cwd), loaded with the conversation replayed, then continued.
async fn second_agent_lists_loads_and_continues(
    e: &Editor,
    server: &FakeOpenAi,
    env: &Value,
    id: &str,
) {
    let other = e.dir.path().join("home").canonicalize().unwrap();
    let steps = json!([
        {"op": "initialize"},
        {"op": "listSessions"},
        {"op": "listSessions", "cwd": null},
        {"op": "listSessions", "cwd": other},
        {"op": "loadSession", "sessionId": id, "as": "loaded"},
        {"op": "prompt", "text": "second question"},
    ]);
    let second = e.drive(&[], &[], steps, env.clone()).await;
    let listed = |n: usize| -> Vec<Value> {
        second.result(n)["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["sessionId"] == id)
            .cloned()
            .collect()
    };
    for n in [1, 2] {
        let found = listed(n);
        assert_eq!(found.len(), 1, "step {n}: {}", second.step(n));
        assert_eq!(found[0]["cwd"], json!(e.ws()), "{}", found[0]);
    }
    assert_eq!(listed(3), Vec::<Value>::new(), "{}", second.step(3));
    second.result(4);
    let replayed: Vec<&str> = second.raw["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["step"] == 4)
        .filter_map(|u| u["params"]["update"]["sessionUpdate"].as_str())
        .filter(|kind| kind.ends_with("message_chunk"))
        .collect();
    let user = second.text_of("user_message_chunk", Some(4));
    let agent = second.text_of("agent_message_chunk", Some(4));
    assert_eq!(user, "first question", "{replayed:?}");
    assert_eq!(agent, "First answer.", "{replayed:?}");
    assert_eq!(
        replayed.first(),
        Some(&"user_message_chunk"),
        "the question comes first: {replayed:?}"
    );
    assert_eq!(second.result(5)["stopReason"], "end_turn");
    let seen = conversation(server);
    for said in ["first question", "First answer.", "second question"] {
        assert!(seen.contains(said), "{said} missing from {seen}");
    }
}

/// A third agent resumes the session without replaying it, continues it, and closes it;
/// a prompt to the closed session is an error.
async fn third_agent_resumes_and_closes(e: &Editor, server: &FakeOpenAi, env: &Value, id: &str) {
    let steps = json!([
        {"op": "initialize"},
        {"op": "resumeSession", "sessionId": id, "as": "resumed"},
        {"op": "prompt", "text": "third question"},
        {"op": "closeSession"},
        {"op": "prompt", "text": "after closing"},
    ]);
    let third = e.drive(&[], &[], steps, env.clone()).await;
    let caps = &third.result(0)["agentCapabilities"]["sessionCapabilities"];
    for capability in ["list", "resume", "close"] {
        assert!(caps[capability].is_object(), "{capability}: {caps}");
    }
    third.result(1);
    assert_eq!(
        third.updates_of("user_message_chunk", Some(1)),
        Vec::<&Value>::new(),
        "resume does not replay"
    );
    assert_eq!(third.result(2)["stopReason"], "end_turn");
    assert_eq!(
        third.text_of("agent_message_chunk", Some(2)),
        "Third answer."
    );
    let seen = conversation(server);
    for said in ["first question", "Second answer.", "third question"] {
        assert!(seen.contains(said), "{said} missing from {seen}");
    }
    third.result(3);
    assert!(third.error(4)["code"].is_i64(), "{}", third.step(4));
}

/// A loaded session replays each past tool call with the outcome it had: a read of a
/// missing file shows failed, a read that worked completed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loaded_session_replays_a_failed_call_as_failed() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    e.write("here.txt", "present\n");
    let mut missing = call(
        "c_missing",
        "read_file",
        json!({"file_path": e.path("gone.txt")}),
    );
    missing["tool_calls"][0]["expect_error"] = json!(true);
    let present = call(
        "c_here",
        "read_file",
        json!({"file_path": e.path("here.txt")}),
    );
    let script = e.script("model.jsonl", &[missing, present, say("Read them.")]);
    let mut steps = start();
    steps.push(json!({"op": "prompt", "text": "read both"}));
    let first = e
        .drive(&["--model-replay", &script], &[], json!(steps), json!({}))
        .await;
    assert_eq!(first.result(2)["stopReason"], "end_turn");
    let id = first.session("s");
    let steps = json!([
        {"op": "initialize"},
        {"op": "loadSession", "sessionId": id, "as": "loaded"},
    ]);
    let loaded = e
        .drive(&["--model-replay", &script], &[], steps, json!({}))
        .await;
    loaded.result(1);
    let status = |call: &str| loaded.merged(call)["status"].clone();
    assert_eq!(status("c_missing"), "failed", "{}", loaded.summary());
    assert_eq!(status("c_here"), "completed", "{}", loaded.summary());
}
