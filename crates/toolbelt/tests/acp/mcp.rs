//! The editor's MCP servers (`mcpServers` of `session/new`, stdio and HTTP) join that
//! session's tools, and that session's only.

use std::path::PathBuf;
use std::process::Stdio;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::{Editor, call, say, sdk_dir};

/// The `mcp_testserver` example of `toolbelt-mcp`, built by `cargo test --workspace`.
fn testserver() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_BIN_EXE_toolbelt"))
        .parent()
        .unwrap()
        .join("examples/mcp_testserver");
    assert!(
        path.exists(),
        "{} is missing: run `cargo test --workspace` (or `cargo build -p toolbelt-mcp --examples`) first",
        path.display()
    );
    path
}

/// The tool call `id` of session `session` as the editor saw it: its last status and
/// everything it was shown (content and raw output), as text.
fn call_in(seen: &crate::Seen, session: &str, id: &str) -> (String, String) {
    let mut status = String::new();
    let mut shown = String::new();
    for u in seen.raw["updates"].as_array().unwrap() {
        let update = &u["params"]["update"];
        if u["params"]["sessionId"] != session || update["toolCallId"] != id {
            continue;
        }
        if let Some(s) = update["status"].as_str() {
            status = s.to_string();
        }
        shown.push_str(&update.to_string());
    }
    (status, shown)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editors_mcp_servers_join_that_session_only() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    let mut http = tokio::process::Command::new(testserver())
        .arg("http")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(http.stdout.take().unwrap()).lines();
    let base = lines.next_line().await.unwrap().expect("the server's URL");
    // Each session replays the script from its first turn: the session without the
    // servers makes the same calls, and they fail there.
    let script = e.script(
        "model.jsonl",
        &[
            call("c_stdio", "mcp__ed__echo", json!({"message": "from stdio"})),
            call("c_http", "mcp__web__echo", json!({"message": "over http"})),
            say("Done."),
        ],
    );
    let servers = json!([
        {"name": "ed", "command": testserver(), "args": ["stdio"], "env": []},
        {"type": "http", "name": "web", "url": format!("{base}/mcp"), "headers": []},
    ]);
    let steps = json!([
        {"op": "initialize"},
        {"op": "newSession", "as": "with", "mcpServers": servers},
        {"op": "prompt", "text": "echo twice"},
        {"op": "newSession", "as": "without"},
        {"op": "prompt", "text": "echo again"},
    ]);
    let seen = e
        .drive(
            &["--model-replay", &script],
            &["allow_once", "allow_once"],
            steps,
            json!({}),
        )
        .await;
    assert_eq!(seen.result(2)["stopReason"], "end_turn");
    assert_eq!(seen.result(4)["stopReason"], "end_turn");
    let (with, without) = (seen.session("with"), seen.session("without"));
    for (id, echoed) in [
        ("c_stdio", "echo: from stdio"),
        ("c_http", "echo: over http"),
    ] {
        let (status, shown) = call_in(&seen, &with, id);
        assert_eq!(status, "completed", "{shown}");
        assert!(shown.contains(echoed), "{shown}");
        let (status, shown) = call_in(&seen, &without, id);
        assert_eq!(status, "failed", "{shown}");
        assert!(!shown.contains(echoed), "{shown}");
    }
}

/// An MCP server's elicitation during a call goes to an editor that offers form
/// elicitation as `elicitation/create`, scoped to the session, and the editor's answer
/// reaches the server (issue 46); server-everything is the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_servers_form_goes_to_the_editor_and_its_answer_to_the_server() {
    let Some(sdk) = sdk_dir() else { return };
    let everything = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../.cache/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    assert!(
        everything.exists(),
        "scripts/setup.sh installs server-everything"
    );
    let e = Editor::new(sdk);
    let script = e.script(
        "model.jsonl",
        &[
            call(
                "c_ask",
                "mcp__everything__trigger-elicitation-request",
                json!({}),
            ),
            say("Done."),
        ],
    );
    let servers = json!([
        {"name": "everything", "command": "node", "args": [everything], "env": []},
    ]);
    let steps = json!([
        {"op": "initialize", "elicitation": true},
        {"op": "newSession", "as": "s", "mcpServers": servers},
        {"op": "prompt", "text": "ask me"},
    ]);
    let answer = json!({"action": "accept", "content": {"name": "Ada Lovelace", "check": true}});
    let seen = e
        .drive(
            &["--model-replay", &script],
            &["allow_once"],
            steps,
            json!({"elicitation": answer}),
        )
        .await;
    assert_eq!(seen.result(2)["stopReason"], "end_turn");
    let session = seen.session("s");
    let asked = &seen.raw["elicitations"];
    assert_eq!(asked.as_array().map(Vec::len), Some(1), "{asked}");
    assert_eq!(asked[0]["mode"], "form");
    assert_eq!(asked[0]["sessionId"], session);
    assert_eq!(asked[0]["requestedSchema"]["required"], json!(["name"]));
    let (status, shown) = call_in(&seen, &session, "c_ask");
    assert_eq!(status, "completed", "{shown}");
    assert!(shown.contains("- Name: Ada Lovelace"), "{shown}");
}
