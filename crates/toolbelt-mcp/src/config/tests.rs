use std::path::Path;

use serde_json::json;

use super::*;

fn settings(value: serde_json::Value) -> Settings {
    Settings::from_value(value).unwrap()
}

fn aliases(servers: &[ServerConfig]) -> Vec<&str> {
    servers.iter().map(|s| s.alias.as_str()).collect()
}

#[test]
fn transport_priority_is_http_url_then_url_then_command() {
    let root = Path::new("/project");
    let entry: McpServerSettings = serde_json::from_value(json!({
        "httpUrl": "http://h/mcp", "url": "http://h/sse", "command": "srv"
    }))
    .unwrap();
    let config = ServerConfig::from_settings("a", &entry, root).unwrap();
    assert_eq!(config.transport.kind(), "http");
    let entry: McpServerSettings =
        serde_json::from_value(json!({"url": "http://h/sse", "command": "srv"})).unwrap();
    assert_eq!(
        ServerConfig::from_settings("a", &entry, root)
            .unwrap()
            .transport
            .kind(),
        "sse"
    );
    let entry: McpServerSettings = serde_json::from_value(
        json!({"command": "srv", "cwd": "sub", "startupTimeout": 2000, "timeout": 500}),
    )
    .unwrap();
    let config = ServerConfig::from_settings("a", &entry, root).unwrap();
    assert_eq!(
        config.transport,
        Transport::Stdio {
            command: "srv".into(),
            args: vec![],
            env: Default::default(),
            cwd: "/project/sub".into()
        }
    );
    assert_eq!(config.startup_timeout, Duration::from_millis(2000));
    assert_eq!(config.call_timeout, Duration::from_millis(500));
    let empty = McpServerSettings::default();
    let err = ServerConfig::from_settings("a", &empty, root).unwrap_err();
    assert!(matches!(err, McpConfigError::NoTransport), "{err:?}");
    assert!(err.to_string().contains("missing httpUrl"), "{err}");
}

#[test]
fn defaults_are_30_s_to_start_and_10_min_per_call() {
    let entry: McpServerSettings = serde_json::from_value(json!({"command": "srv"})).unwrap();
    let config = ServerConfig::from_settings("a", &entry, Path::new("/")).unwrap();
    assert_eq!(config.startup_timeout, Duration::from_secs(30));
    assert_eq!(config.call_timeout, Duration::from_secs(600));
}

/// Qwen Code's `timeout` is the time a call may take, not the start-up's; toolbelt's
/// older `callTimeout` still sets it, and `timeout` wins over it.
#[test]
fn timeout_is_the_call_timeout_and_call_timeout_its_older_name() {
    let config = |value: serde_json::Value| {
        let entry: McpServerSettings = serde_json::from_value(value).unwrap();
        ServerConfig::from_settings("a", &entry, Path::new("/")).unwrap()
    };
    let qwen = config(json!({"command": "srv", "timeout": 1000}));
    assert_eq!(qwen.call_timeout, Duration::from_millis(1000));
    assert_eq!(qwen.startup_timeout, Duration::from_secs(30));
    let older = config(json!({"command": "srv", "callTimeout": 700}));
    assert_eq!(older.call_timeout, Duration::from_millis(700));
    let both = config(json!({"command": "srv", "timeout": 900, "callTimeout": 700}));
    assert_eq!(both.call_timeout, Duration::from_millis(900));
}

#[test]
fn include_and_exclude_accept_the_call_syntax_and_exclude_wins() {
    let entry: McpServerSettings = serde_json::from_value(json!({
        "command": "srv", "includeTools": ["read(path)", "write", "both"], "excludeTools": ["both()"]
    }))
    .unwrap();
    let config = ServerConfig::from_settings("a", &entry, Path::new("/")).unwrap();
    assert!(config.offers_tool("read"));
    assert!(config.offers_tool("write"));
    assert!(!config.offers_tool("both"));
    assert!(!config.offers_tool("other"));
    assert!(!config.offers_tool("rea"));
}

#[test]
fn server_command_allowed_excluded_and_extra_servers() {
    let s = settings(json!({
        "mcpServerCommand": "python -m 'my server'",
        "mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}, "c": {"command": "c"}},
        "mcp": {"excluded": ["c"]}
    }));
    let mut extra = BTreeMap::new();
    extra.insert(
        "b".to_string(),
        serde_json::from_value(json!({"command": "b2"})).unwrap(),
    );
    let (servers, problems) = configured_servers(&s, &extra, None, Path::new("/p"));
    assert!(problems.is_empty());
    assert_eq!(aliases(&servers), ["a", "b", "mcp"]);
    assert_eq!(servers[1].transport.target(), "b2");
    assert_eq!(servers[2].transport.target(), "python -m my server");

    let allowed = vec!["a".to_string()];
    let (servers, _) = configured_servers(&s, &extra, Some(&allowed), Path::new("/p"));
    assert_eq!(aliases(&servers), ["a"]);

    let s = settings(
        json!({"mcpServers": {"a": {"command": "a"}, "b": {}}, "mcp": {"allowed": ["a", "b"]}}),
    );
    let (servers, problems) = configured_servers(&s, &BTreeMap::new(), None, Path::new("/p"));
    assert_eq!(aliases(&servers), ["a"]);
    assert_eq!(problems[0].alias, "b");
}

#[test]
fn mcp_config_reads_inline_json_files_and_both_shapes() {
    let inline = parse_mcp_config(r#"{"mcpServers": {"x": {"command": "x"}}}"#).unwrap();
    assert_eq!(inline["x"].command.as_deref(), Some("x"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("servers.json");
    std::fs::write(
        &file,
        r#"// a comment
        {"y": {"httpUrl": "http://h/mcp"}}"#,
    )
    .unwrap();
    let from_file = parse_mcp_config(file.to_str().unwrap()).unwrap();
    assert_eq!(from_file["y"].http_url.as_deref(), Some("http://h/mcp"));
    let err = parse_mcp_config("/nonexistent/servers.json").unwrap_err();
    assert!(matches!(err, McpConfigError::Unreadable { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("cannot read the --mcp-config file"),
        "{err}"
    );
    let err = parse_mcp_config(r#"{"x": {"args": "not a list"}}"#).unwrap_err();
    assert!(matches!(err, McpConfigError::NotServers { .. }), "{err:?}");
    assert!(
        err.to_string().contains("not a map of MCP servers"),
        "{err}"
    );
    let err = parse_mcp_config("{not json").unwrap_err();
    assert!(matches!(err, McpConfigError::Syntax { .. }), "{err:?}");
}

#[test]
fn toolbelts_own_mcp_serve_is_recognised() {
    let root = Path::new("/project");
    let own = |value: serde_json::Value, exe: Option<&Path>| {
        let entry: McpServerSettings = serde_json::from_value(value).unwrap();
        ServerConfig::from_settings("t", &entry, root)
            .unwrap()
            .is_toolbelt_serve(exe)
    };
    assert!(own(
        json!({"command": "toolbelt", "args": ["mcp", "serve"]}),
        None
    ));
    assert!(own(
        json!({"command": "/usr/local/bin/toolbelt", "args": ["--model", "m", "mcp", "serve", "--approval-mode", "auto-edit"]}),
        None
    ));
    // Under another name, when it is the running binary.
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("tb");
    std::fs::write(&exe, "").unwrap();
    let link = dir.path().join("my-agent");
    std::os::unix::fs::symlink(&exe, &link).unwrap();
    let by_path = json!({"command": link.to_str().unwrap(), "args": ["mcp", "serve"]});
    assert!(own(by_path.clone(), Some(&exe)));
    assert!(!own(by_path, None));
    // Not toolbelt's server: another command, or toolbelt doing something else.
    assert!(!own(
        json!({"command": "npx", "args": ["server-everything", "mcp", "serve"]}),
        None
    ));
    assert!(!own(
        json!({"command": "toolbelt", "args": ["mcp", "list"]}),
        None
    ));
    assert!(!own(json!({"httpUrl": "http://127.0.0.1:8765/mcp"}), None));
}
