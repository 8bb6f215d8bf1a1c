#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use toolbelt_config::settings::Settings;
use toolbelt_core::WorkspaceRoots;

use super::*;

fn env(dir: &Path) -> Arc<ToolEnvironment> {
    let roots = WorkspaceRoots::new([dir]).unwrap();
    Arc::new(ToolEnvironment::new(
        roots,
        Arc::new(Settings::default()),
        dir.join(".session"),
    ))
}

#[test]
fn commands_parse_with_their_arguments() {
    use SlashCommand::*;
    let ok = |line: &str| parse(line).unwrap().unwrap();
    assert_eq!(ok("/help"), Help);
    assert_eq!(ok("  /tools  "), Tools);
    assert_eq!(ok("/mcp"), Mcp);
    assert_eq!(ok("/mcp auth docs"), McpAuth("docs".into()));
    assert_eq!(ok("/memory"), MemoryShow);
    assert_eq!(ok("/memory show"), MemoryShow);
    assert_eq!(ok("/memory refresh"), MemoryRefresh);
    assert_eq!(
        ok("/memory add use tabs in Go files"),
        MemoryAdd {
            fact: "use tabs in Go files".into(),
            project: false
        }
    );
    assert_eq!(
        ok("/memory add --project the API is at /v2"),
        MemoryAdd {
            fact: "the API is at /v2".into(),
            project: true
        }
    );
    assert_eq!(ok("/clear"), Clear);
    assert_eq!(ok("/compress"), Compress);
    assert_eq!(ok("/approval-mode"), ApprovalMode(None));
    assert_eq!(
        ok("/approval-mode auto_edit"),
        ApprovalMode(Some(toolbelt_config::ApprovalMode::AutoEdit))
    );
    assert_eq!(ok("/stats"), Stats);
    assert_eq!(ok("/quit"), Quit);
    assert_eq!(ok("/exit"), Quit);
}

#[test]
fn prompts_are_not_commands_and_mistakes_say_what_to_type() {
    assert_eq!(parse("explain this"), None);
    assert_eq!(parse("/etc/hosts looks wrong"), None);
    assert_eq!(parse("/"), None);
    let err = |line: &str| parse(line).unwrap().unwrap_err().to_string();
    assert!(matches!(
        parse("/hlep").unwrap(),
        Err(crate::CommandError::Unknown(_))
    ));
    assert!(matches!(
        parse("/clear all").unwrap(),
        Err(crate::CommandError::Usage(_))
    ));
    assert_eq!(
        err("/hlep"),
        "unknown command /hlep; did you mean /help? (/help lists them)"
    );
    assert_eq!(
        err("/comp"),
        "unknown command /comp; did you mean /compress? (/help lists them)"
    );
    assert_eq!(
        err("/frobnicate"),
        "unknown command /frobnicate; /help lists the commands"
    );
    assert_eq!(err("/clear all"), "/clear takes no arguments");
    assert!(err("/approval-mode fast").contains("expected plan, default, auto-edit or yolo"));
    assert!(err("/memory add").starts_with("usage: /memory add"));
    assert!(err("/memory delete x").starts_with("usage: /memory show"));
    assert!(err("/mcp auth").starts_with("usage: /mcp"));
    assert!(err("/mcp login docs").starts_with("usage: /mcp"));
}

#[test]
fn help_lists_every_command_and_key() {
    let text = help_text(&[]);
    for (name, _, what) in COMMANDS {
        assert!(text.contains(&format!("/{name}")), "{name}: {text}");
        assert!(text.contains(what), "{text}");
    }
    assert!(!text.contains("MCP prompts") && text.contains("@server:uri"));
    // A server's prompts, with their arguments as typed.
    let prompt = toolbelt_mcp::McpPrompt {
        server: "srv".into(),
        name: "weather".into(),
        description: "Asks about the weather.\nMore.".into(),
        arguments: vec![toolbelt_mcp::McpPromptArgument {
            name: "city".into(),
            description: String::new(),
            required: true,
        }],
    };
    let with = help_text(std::slice::from_ref(&prompt));
    assert!(
        with.lines()
            .any(|l| l.trim_start().starts_with("/srv:weather city=...")
                && l.ends_with(" Asks about the weather.")),
        "{with}"
    );
    assert!(text.contains("Shift-Tab") && text.contains("@path") && text.contains("#tool"));
    assert_eq!(
        command_candidates("c"),
        [("clear", COMMANDS[4].2), ("compress", COMMANDS[5].2)]
    );
}

#[test]
fn tools_are_listed_with_kind_confirmation_and_origin() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(dir.path());
    let mut registry = ToolRegistry::new();
    toolbelt_tools::register_builtins(&mut registry, &env);
    let text = tools_text(&registry);
    assert!(
        text.starts_with(&format!("{} tools:\n", registry.len())),
        "{text}"
    );
    let line = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name}: {text}"))
            .split_whitespace()
            .take(4)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(line("read_file"), "read_file read built-in Reads");
    assert_eq!(
        line("run_shell_command"),
        "run_shell_command execute asks built-in"
    );
    assert_eq!(
        line("ask_user_question"),
        "ask_user_question think built-in Asks"
    );
}

#[test]
fn mcp_servers_show_status_reason_and_tools() {
    assert!(mcp_text(&[]).starts_with("No MCP servers"));
    let reports = vec![
        ServerReport {
            alias: "docs".into(),
            transport: "stdio".into(),
            target: "docs-server --stdio".into(),
            status: ServerStatus::Connected,
            tools: vec![(
                "mcp__docs__search".into(),
                "search".into(),
                "Searches the docs. Returns pages.".into(),
            )],
            resources: 2,
            resource_templates: 1,
            prompts: 3,
            auth: toolbelt_mcp::AuthState::OAuth,
            protocol: None,
        },
        ServerReport {
            alias: "gone".into(),
            transport: "http".into(),
            target: "http://127.0.0.1:9/mcp".into(),
            status: ServerStatus::Failed("connection refused".into()),
            tools: Vec::new(),
            resources: 0,
            resource_templates: 0,
            prompts: 0,
            auth: toolbelt_mcp::AuthState::None,
            protocol: None,
        },
    ];
    assert_eq!(
        mcp_text(&reports),
        "MCP servers:\n  docs (stdio docs-server --stdio): connected, 1 tools, 2 resources (1 templates), 3 prompts, auth: oauth\n    mcp__docs__search  Searches the docs.\n  gone (http http://127.0.0.1:9/mcp): failed: connection refused\n"
    );
}

/// A server waiting for its next start (issue 46): `/mcp` and `mcp list --json` give the
/// reason and when it is started again.
#[test]
fn a_server_waiting_to_be_started_again_shows_why_and_when() {
    let report = ServerReport {
        alias: "flaky".into(),
        transport: "stdio".into(),
        target: "flaky-server".into(),
        status: ServerStatus::Retrying {
            why: "the server closed the connection before answering".into(),
            attempt: 3,
            attempts: 6,
            at: std::time::Instant::now() + std::time::Duration::from_millis(3500),
        },
        tools: Vec::new(),
        resources: 0,
        resource_templates: 0,
        prompts: 0,
        auth: toolbelt_mcp::AuthState::None,
        protocol: None,
    };
    let text = mcp_text(std::slice::from_ref(&report));
    assert!(
        text.contains("flaky (stdio flaky-server): failed: the server closed the connection before answering; start 3 of 6 in 4 s"),
        "{text}"
    );
    let json = crate::listing::mcp_json(&[report]);
    assert_eq!(json[0]["status"], "failed");
    let reason = json[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("the server closed the connection before answering; start 3 of 6 in "),
        "{reason}"
    );
}

/// The settings' rules alone, in the default mode, without hooks or checkpoints.
fn settings_rules(env: &ToolEnvironment) -> toolbelt_engine::scheduler::CallRules {
    let permissions = toolbelt_engine::scheduler::Permissions::from_settings(
        &env.settings,
        &crate::rule_vocabulary(),
    );
    let mode = toolbelt_config::ApprovalMode::Default;
    toolbelt_engine::scheduler::CallRules::new(permissions, mode, None, None)
}

/// The context files as the session loads them.
fn load_context_files(env: &ToolEnvironment, home: Option<&Path>, cwd: &Path) -> Vec<ContextFile> {
    let names = toolbelt_agent::context_files::file_names(&env.settings);
    toolbelt_agent::context_files::load(&names, home, cwd)
}

#[tokio::test]
async fn memory_add_writes_through_save_memory_and_show_reads_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("p");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let env = env(&project);
    assert!(
        memory_text(&load_context_files(&env, Some(&home), &project))
            .starts_with("No context files")
    );

    let said = memory_add(
        settings_rules(&env),
        env.clone(),
        Some(home.clone()),
        "the API lives at /v2",
        true,
    )
    .await
    .unwrap();
    assert!(said.contains("the API lives at /v2"), "{said}");
    memory_add(
        settings_rules(&env),
        env.clone(),
        Some(home.clone()),
        "prefers tabs",
        false,
    )
    .await
    .unwrap();
    let project_file = std::fs::read_to_string(project.join("QWEN.md")).unwrap();
    assert!(
        project_file.contains("## Qwen Added Memories\n- the API lives at /v2"),
        "{project_file}"
    );
    let global = std::fs::read_to_string(home.join(".qwen/QWEN.md")).unwrap();
    assert!(global.contains("- prefers tabs"), "{global}");

    let files = load_context_files(&env, Some(&home), &project);
    let text = memory_text(&files);
    assert!(text.starts_with("2 context file(s)"), "{text}");
    assert!(
        text.contains("- the API lives at /v2") && text.contains("- prefers tabs"),
        "{text}"
    );
    assert!(
        memory_add(settings_rules(&env), env, Some(home), "  ", true)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn memory_add_answers_to_the_settings_rules_like_any_call() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("p");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let settings: Settings =
        serde_json::from_value(serde_json::json!({"permissions": {"deny": ["save_memory"]}}))
            .unwrap();
    let env = Arc::new(ToolEnvironment::new(
        WorkspaceRoots::new([&project]).unwrap(),
        Arc::new(settings),
        project.join(".session"),
    ));
    let refused = memory_add(
        settings_rules(&env),
        env,
        Some(home.clone()),
        "a fact",
        true,
    )
    .await;
    let message = refused.unwrap_err();
    assert!(
        matches!(message, crate::MemoryError::Tool(_)),
        "{message:?}"
    );
    let message = message.to_string();
    assert!(message.contains("denied"), "{message}");
    assert!(!project.join("QWEN.md").exists(), "it wrote the file");
}

/// A server that answered 401 (issue 46's OAuth): "needs login", with what to run, not
/// "failed", in `/mcp` and `mcp list --json`.
#[test]
fn a_server_that_needs_a_login_says_so_and_what_to_run() {
    let report = ServerReport {
        alias: "linear".into(),
        transport: "http".into(),
        target: "https://mcp.example.com/mcp".into(),
        status: ServerStatus::NeedsLogin("run `toolbelt mcp auth linear`".into()),
        tools: Vec::new(),
        resources: 0,
        resource_templates: 0,
        prompts: 0,
        auth: toolbelt_mcp::AuthState::None,
        protocol: None,
    };
    let text = mcp_text(std::slice::from_ref(&report));
    assert!(
        text.contains(
            "linear (http https://mcp.example.com/mcp): needs login: run `toolbelt mcp auth linear`"
        ),
        "{text}"
    );
    assert!(!text.contains("failed"), "{text}");
    let json = crate::listing::mcp_json(&[report]);
    assert_eq!(json[0]["status"], "needs-login");
    assert_eq!(json[0]["reason"], "run `toolbelt mcp auth linear`");
    assert_eq!(json[0]["auth"], "none");
}
