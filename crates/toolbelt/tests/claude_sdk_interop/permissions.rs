//! Who decides whether a call runs, in Claude's words: `canUseTool`, the permission
//! modes, `allowedTools`/`disallowedTools` by Claude's tool names, `setPermissionMode`.
//! The callbacks see toolbelt's tool names (`write_file`, `edit`, `run_shell_command`).

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};

use crate::{Sandbox, call, clean, sdk_dir};

/// `canUseTool`: a write denied with a message, an edit allowed with changed input.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_can_use_tool_denies_and_allows_with_updated_input() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    s.write("keep.txt", "original\n");
    s.write("code.txt", "let x = 1;\n");
    let server = FakeOpenAi::start(vec![
        call(
            "c_w",
            "write_file",
            json!({"file_path": s.path("keep.txt"), "content": "overwritten\n"}),
        ),
        call(
            "c_e",
            "edit",
            json!({"file_path": s.path("code.txt"), "old_string": "1", "new_string": "2"}),
        ),
        Reply::text("Done."),
    ])
    .await
    .unwrap();
    let c = s
        .client(
            &sdk,
            &server,
            json!({
                "prompts": ["change the files"],
                "options": {"permissionMode": "default"},
                "answers": {
                    "write_file": {"behavior": "deny", "message": "the client keeps this file"},
                    "edit": {"behavior": "allow", "updatedInput": {"new_string": "3"}},
                },
            }),
        )
        .await
        .ok();
    let asked: Vec<&str> = c.notes["asked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["toolName"].as_str().unwrap())
        .collect();
    assert_eq!(asked, ["write_file", "edit"]);
    assert_eq!(s.read("keep.txt").unwrap(), "original\n");
    assert_eq!(s.read("code.txt").unwrap(), "let x = 3;\n");
    let denied = c.tool_results()[0];
    assert_eq!(denied["is_error"], true);
    assert!(
        denied["content"]
            .to_string()
            .contains("the client keeps this file")
    );
    let result = c.results()[0];
    assert_eq!(result["permission_denials"][0]["tool_name"], "write_file");
    clean(&server);
}

/// One `write_file` call in each of Claude's permission modes, with a `canUseTool` that
/// would allow it: who was asked, and whether the file was written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_permission_modes_decide_who_is_asked() {
    let Some(sdk) = sdk_dir() else { return };
    // (mode, asked, written)
    let cases = [
        ("default", true, true),
        ("acceptEdits", false, true),
        ("bypassPermissions", false, true),
        ("plan", false, false),
        ("dontAsk", false, false),
    ];
    for (mode, asked, written) in cases {
        let s = Sandbox::new();
        let server = FakeOpenAi::start(vec![
            call(
                "c1",
                "write_file",
                json!({"file_path": s.path("new.txt"), "content": "new\n"}),
            ),
            Reply::text("Done."),
        ])
        .await
        .unwrap();
        let c = s
            .client(
                &sdk,
                &server,
                json!({
                    "prompts": ["write new.txt"],
                    "options": {"permissionMode": mode, "allowDangerouslySkipPermissions": true},
                    "answers": {"write_file": {"behavior": "allow"}},
                }),
            )
            .await
            .ok();
        assert_eq!(c.init()["permission_mode"].as_str(), Some(mode), "{mode}");
        let was_asked = !c.notes["asked"].as_array().unwrap().is_empty();
        assert_eq!(was_asked, asked, "{mode}: asked {}", c.notes["asked"]);
        assert_eq!(s.read("new.txt").is_some(), written, "{mode}");
        assert_eq!(c.results()[0]["subtype"], "success", "{mode}");
        clean(&server);
    }
}

/// `allowedTools: ["Write"]` runs a write without asking anyone (default mode, no
/// `canUseTool`); `disallowedTools: ["Bash"]` takes the shell away: it is not offered,
/// and a call to it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_allowed_and_disallowed_tools_take_claudes_names() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        call(
            "c_w",
            "write_file",
            json!({"file_path": s.path("ok.txt"), "content": "ok\n"}),
        ),
        call(
            "c_b",
            "run_shell_command",
            json!({"command": "touch shell-ran"}),
        ),
        Reply::text("Done."),
    ])
    .await
    .unwrap();
    let c = s
        .client(
            &sdk,
            &server,
            json!({
                "prompts": ["write and run"],
                "options": {"permissionMode": "default", "allowedTools": ["Write"], "disallowedTools": ["Bash"]},
            }),
        )
        .await
        .ok();
    let tools = c.init()["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t == "write_file"), "{tools:?}");
    assert!(!tools.iter().any(|t| t == "run_shell_command"), "{tools:?}");
    assert_eq!(s.read("ok.txt").unwrap(), "ok\n");
    assert!(s.read("shell-ran").is_none());
    assert_eq!(c.tool_results()[1]["is_error"], true);
    // The model asked for a tool it was not offered: refused, not run.
    assert!(
        c.tool_results()[1]["content"]
            .to_string()
            .contains("run_shell_command"),
        "{}",
        c.tool_results()[1]
    );
    clean(&server);
}

/// `setPermissionMode("acceptEdits")` between turns: a write refused in `dontAsk` mode
/// runs in the next turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_set_permission_mode_lets_a_refused_write_run() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let args = json!({"file_path": s.path("out.txt"), "content": "written\n"});
    let server = FakeOpenAi::start(vec![
        call("c1", "write_file", args.clone()),
        Reply::text("Refused."),
        call("c2", "write_file", args),
        Reply::text("Written."),
    ])
    .await
    .unwrap();
    let c = s
        .client(
            &sdk,
            &server,
            json!({
                "prompts": ["write it", "again"],
                "options": {"permissionMode": "dontAsk"},
                "afterFirst": ["setPermissionMode:acceptEdits"],
            }),
        )
        .await
        .ok();
    assert_eq!(
        c.notes["setPermissionMode"],
        json!({"mode": "acceptEdits"}),
        "{}",
        c.notes
    );
    let results: Vec<&Value> = c.tool_results();
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(results[1]["is_error"], false);
    assert_eq!(s.read("out.txt").unwrap(), "written\n");
    clean(&server);
}
