//! `query()` options whose flags toolbelt has no word of its own for: each one an
//! application can set reaches toolbelt through the real SDK, and none makes the query
//! fail. What maps onto toolbelt is checked by its effect; what does not is named in the
//! `init` message.

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};

use crate::{Sandbox, call, clean, last_request_texts, sdk_dir};

/// server-everything, the external MCP server of these tests.
fn everything() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../.cache/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    assert!(path.exists(), "scripts/setup.sh installs server-everything");
    path.to_string_lossy().into_owned()
}

/// The flags `init` says were accepted and not honoured.
fn ignored(init: &Value) -> Vec<String> {
    init["toolbelt_ignored_flags"]
        .as_array()
        .unwrap_or_else(|| panic!("no toolbelt_ignored_flags in {init}"))
        .iter()
        .map(|f| f["flag"].as_str().unwrap().to_string())
        .collect()
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|v| v.as_str().or(v["name"].as_str()).unwrap().to_string())
        .collect()
}

/// Budgets, thinking, effort, betas, a fallback model, a result schema, a main agent,
/// debugging, hook events and Claude's `auto` mode: accepted, the session runs, and
/// `init` names each flag it cannot honour.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_options_toolbelt_cannot_honour_are_accepted_and_named_in_init() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![Reply::text("Still here."), Reply::text("Again.")])
        .await
        .unwrap();
    let cases = [
        (
            json!({
                "thinking": {"type": "enabled", "budgetTokens": 2048, "display": "summarized"},
                "effort": "high",
                "maxBudgetUsd": 0.25,
                "taskBudget": {"total": 5000},
                "betas": ["context-1m-2025-08-07"],
                "fallbackModel": "other-model",
                "outputFormat": {"type": "json_schema", "schema": {"type": "object"}},
                "agent": "reviewer",
                "agents": {"reviewer": {"description": "Reviews", "prompt": "Review."}},
                "debugFile": s.dir.path().join("debug.log"),
                "includeHookEvents": true,
                "permissionMode": "auto",
            }),
            vec![
                "--thinking-display",
                "--max-thinking-tokens",
                "--effort",
                "--max-budget-usd",
                "--task-budget",
                "--agent",
                "--betas",
                "--json-schema",
                "--fallback-model",
                "--debug-file",
            ],
        ),
        (
            json!({"maxThinkingTokens": 1024, "debug": true, "thinking": {"type": "disabled"}}),
            vec!["--thinking", "--debug"],
        ),
    ];
    for (options, flags) in cases {
        let c = s
            .client(
                &sdk,
                &server,
                json!({"prompts": ["hello"], "options": options}),
            )
            .await
            .ok();
        let result = c.results()[0];
        assert_eq!(result["subtype"], "success", "{options}: {result}");
        let said = ignored(c.init());
        for flag in flags {
            assert!(said.iter().any(|f| f == flag), "{flag} not named: {said:?}");
        }
    }
    clean(&server);
}

/// `forkSession` with `resume`: the conversation goes on under a new ID, and the session
/// it came from is left as it was (resuming it again does not see the fork's turn).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_fork_session_continues_under_a_new_id_and_leaves_the_original() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        Reply::text("Noted."),
        Reply::text("It was kiwi."),
        Reply::text("Still kiwi."),
    ])
    .await
    .unwrap();
    let first = s
        .client(&sdk, &server, json!({"prompts": ["remember kiwi"]}))
        .await
        .ok();
    let original = first.init()["session_id"].as_str().unwrap().to_string();

    let fork = s
        .client(
            &sdk,
            &server,
            json!({"prompts": ["which word?"], "options": {"resume": original, "forkSession": true}}),
        )
        .await
        .ok();
    let forked = fork.init()["session_id"].as_str().unwrap().to_string();
    assert_ne!(forked, original, "a fork has an ID of its own");
    assert!(uuid::Uuid::try_parse(&forked).is_ok(), "{forked}");
    assert_eq!(fork.results()[0]["session_id"], forked);
    let (_, users) = last_request_texts(&server);
    assert_eq!(users, ["remember kiwi", "which word?"]);

    let again = s
        .client(
            &sdk,
            &server,
            json!({"prompts": ["and now?"], "options": {"resume": original}}),
        )
        .await
        .ok();
    assert_eq!(again.init()["session_id"], original);
    let (_, users) = last_request_texts(&server);
    assert_eq!(
        users,
        ["remember kiwi", "and now?"],
        "the fork's turn leaked"
    );
    clean(&server);
}

/// `persistSession: false`: the run answers, nothing is saved, and it cannot be resumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_persist_session_false_saves_nothing() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![Reply::text("Not kept.")])
        .await
        .unwrap();
    let c = s
        .client(
            &sdk,
            &server,
            json!({"prompts": ["hello"], "options": {"persistSession": false}}),
        )
        .await
        .ok();
    assert_eq!(c.results()[0]["subtype"], "success");
    let id = c.init()["session_id"].as_str().unwrap().to_string();
    let saved: Vec<_> = walkdir(&s.dir.path().join("tbhome"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert!(saved.is_empty(), "saved: {saved:?}");
    let resumed = s
        .client(
            &sdk,
            &server,
            json!({"prompts": ["again"], "options": {"resume": id}}),
        )
        .await;
    assert!(
        resumed.notes.get("error").is_some(),
        "resumed a session that was not saved: {:?}",
        resumed.shape()
    );
    clean(&server);
}

fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walkdir(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// `settingSources`: the project's settings (a deny rule on reading) apply only when
/// `project` is named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_setting_sources_choose_which_settings_files_are_read() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    s.write("notes.txt", "the answer is 42\n");
    std::fs::create_dir_all(s.ws().join(".qwen")).unwrap();
    s.write(
        ".qwen/settings.json",
        r#"{"permissions": {"deny": ["Read(notes.txt)"]}}"#,
    );
    for (sources, readable) in [
        (json!(["user"]), true),
        (json!(["user", "project", "local"]), false),
        (json!([]), true),
    ] {
        let server = read_then_answer(&s).await;
        let options = json!({"settingSources": sources});
        let c = s
            .client(
                &sdk,
                &server,
                json!({"prompts": ["read"], "options": options}),
            )
            .await
            .ok();
        let result = c.tool_results()[0];
        let text = result["content"].to_string();
        assert_eq!(
            text.contains("the answer is 42"),
            readable,
            "{sources}: {result}"
        );
        clean(&server);
    }
}

/// A model server whose script is one `read_file` of `notes.txt`, then an answer: one
/// per session, since the fake server follows one conversation.
async fn read_then_answer(s: &Sandbox) -> FakeOpenAi {
    let read = call(
        "r1",
        "read_file",
        json!({"absolute_path": s.path("notes.txt")}),
    );
    FakeOpenAi::start(vec![read, Reply::text("Done.")])
        .await
        .unwrap()
}

/// `tools`: only the built-in tools named (Claude's names) are offered; an empty list
/// offers none; MCP servers' tools are not built-ins and stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_tools_option_limits_the_built_in_tools() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![Reply::text("One."), Reply::text("Two.")])
        .await
        .unwrap();
    let c = s
        .client(
            &sdk,
            &server,
            json!({"prompts": ["hi"], "options": {"tools": ["Read", "Grep"]}}),
        )
        .await
        .ok();
    let tools = names(&c.init()["tools"]);
    for offered in ["read_file", "grep_search"] {
        assert!(tools.iter().any(|t| t == offered), "{offered}: {tools:?}");
    }
    for gone in ["edit", "write_file", "run_shell_command", "web_fetch"] {
        assert!(!tools.iter().any(|t| t == gone), "{gone}: {tools:?}");
    }
    let c = s
        .client(
            &sdk,
            &server,
            json!({"prompts": ["hi"], "sdkMcp": true, "options": {"tools": []}}),
        )
        .await
        .ok();
    let tools = names(&c.init()["tools"]);
    assert_eq!(tools, ["mcp__calc__add"], "only the SDK server's tool");
    clean(&server);
}

/// `strictMcpConfig`: the settings' MCP servers stay out; the application's connect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_strict_mcp_config_leaves_the_settings_servers_out() {
    let Some(sdk) = sdk_dir() else { return };
    let everything = everything();
    let s = Sandbox::new();
    let home_settings = s.dir.path().join("home/.qwen");
    std::fs::create_dir_all(&home_settings).unwrap();
    let server_entry = json!({"command": "node", "args": [everything, "stdio"]});
    std::fs::write(
        home_settings.join("settings.json"),
        json!({"mcpServers": {"fromsettings": server_entry}}).to_string(),
    )
    .unwrap();
    let server = FakeOpenAi::start(vec![Reply::text("One."), Reply::text("Two.")])
        .await
        .unwrap();
    for (strict, expected) in [
        (true, vec!["fromoptions"]),
        (false, vec!["fromoptions", "fromsettings"]),
    ] {
        let c = s
            .client(
                &sdk,
                &server,
                json!({"prompts": ["hi"], "options": {
                    "strictMcpConfig": strict,
                    "mcpServers": {"fromoptions": server_entry},
                }}),
            )
            .await
            .ok();
        let mut servers = names(&c.init()["mcp_servers"]);
        servers.sort();
        assert_eq!(servers, expected, "strict {strict}");
    }
    clean(&server);
}

/// A local plugin (`plugins`, on the command line or in `initialize`): its skills are
/// offered, its `.mcp.json` server (started through `${CLAUDE_PLUGIN_ROOT}`) connects,
/// and what toolbelt does not load of it (agents) is named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_plugins_bring_their_skills_and_mcp_servers() {
    let Some(sdk) = sdk_dir() else { return };
    let everything = everything();
    let s = Sandbox::new();
    let plugin = s.dir.path().join("plugin");
    std::fs::create_dir_all(plugin.join("skills/greet")).unwrap();
    std::fs::create_dir_all(plugin.join("agents")).unwrap();
    std::fs::create_dir_all(plugin.join("bin")).unwrap();
    std::fs::write(
        plugin.join("skills/greet/SKILL.md"),
        "---\nname: greet\ndescription: Greets the user warmly.\n---\nSay hello.\n",
    )
    .unwrap();
    std::fs::write(
        plugin.join("bin/server.sh"),
        format!("#!/bin/sh\nexec node '{everything}' stdio\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        plugin.join("bin/server.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(
        plugin.join(".mcp.json"),
        r#"{"mcpServers": {"plug": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/server.sh"}}}"#,
    )
    .unwrap();
    let server = FakeOpenAi::start(vec![Reply::text("One."), Reply::text("Two.")])
        .await
        .unwrap();
    for delivery in ["argv", "initialize"] {
        let c = s
            .client(
                &sdk,
                &server,
                json!({"prompts": ["hi"], "options": {
                    "plugins": [{"type": "local", "path": plugin}],
                    "pluginDelivery": delivery,
                }}),
            )
            .await
            .ok();
        let init = c.init();
        assert!(
            names(&init["skills"]).contains(&"greet".to_string()),
            "{delivery}: {init}"
        );
        // The plugin's server is configured; servers start in the background, so init
        // (the session's start) shows it connected or still starting.
        let servers = init["mcp_servers"].as_array().unwrap();
        assert!(
            servers
                .iter()
                .any(|s| s["name"] == "plug"
                    && (s["status"] == "connected" || s["status"] == "pending")),
            "{delivery}: {init}"
        );
        if delivery == "argv" {
            assert!(
                ignored(init).contains(&"--plugin-dir".to_string()),
                "{init}"
            );
        }
    }
    clean(&server);
}

/// `settings` and `managedSettings` (as flags or in `initialize`) bring their
/// permission rules in Claude's names; `disallowedTools` in `initialize` too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_sdk_settings_permissions_apply_as_flags_and_in_initialize() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    s.write("notes.txt", "the answer is 42\n");
    let deny_read = json!({"permissions": {"deny": ["Read"]}});
    for options in [
        json!({"settings": deny_read}),
        json!({"settings": deny_read, "settingsDelivery": "initialize"}),
        json!({"managedSettings": deny_read}),
        json!({"managedSettings": deny_read, "managedSettingsDelivery": "initialize"}),
    ] {
        let server = read_then_answer(&s).await;
        let c = s
            .client(
                &sdk,
                &server,
                json!({"prompts": ["read"], "options": options}),
            )
            .await
            .ok();
        let result = c.tool_results()[0];
        assert_eq!(result["is_error"], true, "{options}: {result}");
        let text = result["content"].to_string();
        assert!(!text.contains("the answer is 42"), "{options}: {result}");
        clean(&server);
    }
    let server = FakeOpenAi::start(vec![Reply::text("Hi.")]).await.unwrap();
    let options = json!({"disallowedTools": ["Bash"], "disallowedToolsDelivery": "initialize"});
    let c = s
        .client(
            &sdk,
            &server,
            json!({"prompts": ["hi"], "options": options}),
        )
        .await
        .ok();
    let tools = names(&c.init()["tools"]);
    assert!(!tools.iter().any(|t| t == "run_shell_command"), "{tools:?}");
    assert!(tools.iter().any(|t| t == "read_file"), "{tools:?}");
    clean(&server);
}
