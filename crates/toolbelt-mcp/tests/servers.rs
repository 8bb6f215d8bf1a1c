#![allow(clippy::too_many_lines)]
//! The MCP client against real servers: the `mcp_testserver` example (built by
//! `cargo test`) as a child process over stdio, and over Streamable HTTP and legacy SSE on
//! 127.0.0.1.

// Test helpers outside #[test] functions may unwrap: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use toolbelt_config::settings::McpServerSettings;
use toolbelt_config::settings::Settings;
use toolbelt_core::{
    ConfirmationDetails, ErrorKind, ExecContext, Kind, OutputSink, Part, ToolEnvironment,
    ToolResult, WorkspaceRoots,
};
use toolbelt_engine::{registry::Origin, registry::ToolRegistry};
use toolbelt_mcp::{McpServers, ServerConfig, ServerStatus};

fn testserver() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    let path = dir.join("examples").join("mcp_testserver");
    assert!(
        path.exists(),
        "{} is missing: `cargo test` builds it (cargo build -p toolbelt-mcp --examples)",
        path.display()
    );
    path
}

struct Fixture {
    dir: tempfile::TempDir,
    env: Arc<ToolEnvironment>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let roots = WorkspaceRoots::new([dir.path().join("ws")]).unwrap();
    let env = Arc::new(ToolEnvironment::new(
        roots,
        Arc::new(Settings::default()),
        dir.path().join("session"),
    ));
    Fixture { dir, env }
}

fn stdio(args: &[&str]) -> McpServerSettings {
    McpServerSettings {
        command: Some(testserver().to_string_lossy().into_owned()),
        args: args.iter().map(|a| a.to_string()).collect(),
        ..Default::default()
    }
}

impl Fixture {
    fn config(&self, alias: &str, entry: McpServerSettings) -> ServerConfig {
        ServerConfig::from_settings(alias, &entry, &self.dir.path().join("ws")).unwrap()
    }

    fn log_dir(&self) -> PathBuf {
        self.dir.path().join("session").join("mcp")
    }

    async fn connect(&self, servers: Vec<(&str, McpServerSettings)>) -> (McpServers, ToolRegistry) {
        let configs = servers
            .into_iter()
            .map(|(alias, entry)| self.config(alias, entry))
            .collect();
        let servers = McpServers::connect_all(configs, Vec::new(), &self.log_dir()).await;
        let mut registry = ToolRegistry::new();
        servers.register(&mut registry);
        (servers, registry)
    }

    async fn call(&self, registry: &ToolRegistry, name: &str, args: Value) -> ToolResult {
        self.call_with(registry, name, args, ExecContext::new(self.env.clone()))
            .await
    }

    async fn call_with(
        &self,
        registry: &ToolRegistry,
        name: &str,
        args: Value,
        ctx: ExecContext,
    ) -> ToolResult {
        match registry.build(name, args) {
            Ok((_, call)) => call.execute(ctx).await,
            Err(e) => ToolResult::error(e),
        }
    }
}

fn error_of(r: &ToolResult) -> (ErrorKind, String) {
    let e = r
        .error
        .clone()
        .unwrap_or_else(|| panic!("expected an error, got {r:?}"));
    (e.kind, e.message)
}

#[tokio::test]
async fn stdio_server_tools_are_registered_as_mcp_alias_tool() {
    let f = fixture();
    let (servers, registry) = f.connect(vec![("t", stdio(&[]))]).await;
    assert_eq!(servers.connections()[0].status(), ServerStatus::Connected);
    let echo = registry.get("mcp__t__echo").expect("echo registered");
    assert_eq!(echo.origin, Origin::Mcp { server: "t".into() });
    assert_eq!(echo.tool.display_name(), "echo (t MCP Server)");
    let r = f
        .call(&registry, "mcp__t__echo", json!({"message": "hi"}))
        .await;
    assert_eq!(r.llm_text(), "echo: hi");
    assert!(r.error.is_none());
}

#[tokio::test]
async fn content_maps_to_parts() {
    let f = fixture();
    let (_servers, registry) = f.connect(vec![("t", stdio(&[]))]).await;

    let image = f.call(&registry, "mcp__t__image", json!({})).await;
    assert_eq!(image.llm_content[0], Part::text("a tiny image"));
    match &image.llm_content[2] {
        Part::InlineData {
            mime_type, data, ..
        } => {
            assert_eq!(mime_type, "image/png");
            assert!(data.starts_with(b"\x89PNG"));
        }
        other => panic!("expected inline data, got {other:?}"),
    }

    let structured = f
        .call(&registry, "mcp__t__structured", json!({"city": "Oslo"}))
        .await;
    let v: Value = serde_json::from_str(&structured.llm_text()).unwrap();
    assert_eq!(v, json!({"city": "Oslo", "temperature": 21}));

    let resource = f.call(&registry, "mcp__t__resource", json!({})).await;
    assert_eq!(
        resource.llm_text(),
        "file body\nResource Link: big.log at file:///big.log"
    );
}

#[tokio::test]
async fn is_error_results_and_json_rpc_errors_are_mcp_tool_errors_with_the_server_text() {
    let f = fixture();
    let (_servers, registry) = f.connect(vec![("t", stdio(&[]))]).await;
    let (kind, message) = error_of(&f.call(&registry, "mcp__t__fail", json!({})).await);
    assert_eq!(kind, ErrorKind::McpToolError);
    assert!(message.contains("disk is full"), "{message}");
    let (kind, message) = error_of(&f.call(&registry, "mcp__t__protocol_error", json!({})).await);
    assert_eq!(kind, ErrorKind::McpToolError);
    assert!(
        message.contains("-32602") && message.contains("bad widget id"),
        "{message}"
    );
}

#[tokio::test]
async fn progress_notifications_reach_the_live_output() {
    let f = fixture();
    let (_servers, registry) = f.connect(vec![("t", stdio(&[]))]).await;
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut ctx = ExecContext::new(f.env.clone());
    let sink = seen.clone();
    ctx.output = OutputSink::new(move |chunk| sink.lock().unwrap().push(chunk.to_string()));
    let r = f
        .call_with(&registry, "mcp__t__progress", json!({"steps": 3}), ctx)
        .await;
    assert_eq!(r.llm_text(), "done after 3 steps");
    assert_eq!(
        *seen.lock().unwrap(),
        ["[1/3] step 1\n", "[2/3] step 2\n", "[3/3] step 3\n"]
    );
}

#[tokio::test]
async fn cancelling_a_call_sends_notifications_cancelled() {
    let f = fixture();
    let (_servers, registry) = f.connect(vec![("t", stdio(&[]))]).await;
    let ctx = ExecContext::new(f.env.clone());
    ctx.cancel.cancel();
    let started = Instant::now();
    let r = f
        .call_with(&registry, "mcp__t__sleep", json!({"ms": 120000}), ctx)
        .await;
    assert_eq!(error_of(&r).0, ErrorKind::Cancelled);
    // A deadline far under the server's two-minute sleep, far over a loaded machine's delay.
    assert!(started.elapsed() < Duration::from_secs(60));
    // The server saw the cancellation (it counts calls whose token was cancelled).
    let count = f
        .call(
            &registry,
            "mcp__t__cancelled_count",
            json!({"wait_ms": 5000}),
        )
        .await;
    assert_eq!(count.llm_text(), "cancelled: 1");
}

#[tokio::test]
async fn a_call_over_its_timeout_is_cancelled_on_the_server() {
    let f = fixture();
    // Qwen Code's `timeout` is the time a call may take (toolbelt read it as the
    // start-up's before).
    let entry = McpServerSettings {
        timeout: Some(1000),
        ..stdio(&[])
    };
    let (_servers, registry) = f.connect(vec![("t", entry)]).await;
    let started = Instant::now();
    let r = f
        .call(&registry, "mcp__t__sleep", json!({"ms": 120000}))
        .await;
    let (kind, message) = error_of(&r);
    assert_eq!(kind, ErrorKind::Timeout);
    assert!(
        message.contains("within 1 s (the server's `timeout` setting"),
        "{message}"
    );
    // A deadline far under the server's two-minute sleep, far over a loaded machine's delay.
    assert!(started.elapsed() < Duration::from_secs(60));
    let count = f
        .call(
            &registry,
            "mcp__t__cancelled_count",
            json!({"wait_ms": 5000}),
        )
        .await;
    assert_eq!(count.llm_text(), "cancelled: 1");
}

#[tokio::test]
async fn a_crashed_server_fails_its_call_and_is_restarted_on_next_use() {
    let f = fixture();
    let (servers, registry) = f
        .connect(vec![("t", stdio(&[])), ("other", stdio(&[]))])
        .await;
    let first_pid = f.call(&registry, "mcp__t__pid", json!({})).await.llm_text();
    let (kind, message) = error_of(&f.call(&registry, "mcp__t__crash", json!({})).await);
    assert_eq!(kind, ErrorKind::McpToolError);
    assert!(message.contains("closed the connection"), "{message}");
    // The server's own words stay in its log: the result names the log, not the line.
    assert!(
        !message.contains("crashing on purpose"),
        "stderr reached the result: {message}"
    );
    assert!(message.contains("server log"), "{message}");
    assert!(matches!(
        servers.connections()[0].status(),
        ServerStatus::Failed(_)
    ));
    // The other server carries on.
    assert_eq!(
        f.call(&registry, "mcp__other__echo", json!({"message": "x"}))
            .await
            .llm_text(),
        "echo: x"
    );
    // The next call starts the crashed one again.
    let second_pid = f.call(&registry, "mcp__t__pid", json!({})).await.llm_text();
    assert_ne!(first_pid, second_pid);
    assert!(second_pid.parse::<u32>().is_ok(), "{second_pid}");
}

#[tokio::test]
async fn tool_list_changes_update_the_registry() {
    let f = fixture();
    let (servers, mut registry) = f.connect(vec![("t", stdio(&[]))]).await;
    assert!(registry.get("mcp__t__late").is_none());
    let r = f
        .call(&registry, "mcp__t__add_tool", json!({"name": "late"}))
        .await;
    assert_eq!(r.llm_text(), "added late");
    let alias = tokio::time::timeout(Duration::from_secs(10), servers.wait_for_change())
        .await
        .expect("a tools/list_changed notification");
    assert_eq!(alias.as_deref(), Some("t"));
    servers.refresh("t", &mut registry).await.unwrap();
    assert_eq!(
        f.call(&registry, "mcp__t__late", json!({}))
            .await
            .llm_text(),
        "dynamic late"
    );
    // The refresh replaced the server's tools rather than adding duplicates.
    assert_eq!(
        registry.all().filter(|r| r.name == "mcp__t__echo").count(),
        1
    );
    assert!(registry.get("mcp__t__echo_2").is_none());
}

#[tokio::test]
async fn a_server_that_prints_garbage_on_stdout_still_connects() {
    let f = fixture();
    // An older revision: rmcp's own server, before the first request of the 2026-07-28
    // revision, exits on the error answer rmcp's client sends to the JSON line that is
    // not JSON-RPC (the client is fine; that server is strict).
    let entry = McpServerSettings {
        env: [("TESTSERVER_PROTOCOL".to_string(), "2025-11-25".to_string())].into(),
        ..stdio(&["garbage"])
    };
    let (servers, registry) = f.connect(vec![("g", entry)]).await;
    assert_eq!(servers.connections()[0].status(), ServerStatus::Connected);
    assert_eq!(
        f.call(&registry, "mcp__g__echo", json!({"message": "ok"}))
            .await
            .llm_text(),
        "echo: ok"
    );
}

#[tokio::test]
async fn hanging_and_missing_servers_fail_with_reasons_without_blocking_the_healthy_one() {
    let f = fixture();
    // Three servers that never answer, each with a 4 s timeout: connected in parallel the
    // wait is one timeout, in sequence it would be 12 s.
    let silent = || McpServerSettings {
        startup_timeout: Some(4000),
        ..stdio(&["silent"])
    };
    let missing = McpServerSettings {
        command: Some("/nonexistent/mcp-server".into()),
        ..Default::default()
    };
    let started = Instant::now();
    let (servers, registry) = f
        .connect(vec![
            ("healthy", stdio(&[])),
            ("hangs", silent()),
            ("hangs2", silent()),
            ("hangs3", silent()),
            ("missing", missing),
        ])
        .await;
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(4000), "{elapsed:?}");
    assert!(
        elapsed < Duration::from_secs(10),
        "the wait is the timeout, not a sum: {elapsed:?}"
    );
    let reports = servers.reports();
    let status = |alias: &str| {
        reports
            .iter()
            .find(|r| r.alias == alias)
            .unwrap()
            .status
            .clone()
    };
    assert_eq!(status("healthy"), ServerStatus::Connected);
    assert!(
        matches!(status("hangs"), ServerStatus::Failed(why) if why.contains("no answer within 4 s"))
    );
    assert!(matches!(status("hangs3"), ServerStatus::Failed(_)));
    assert!(
        matches!(status("missing"), ServerStatus::Failed(why) if why.contains("cannot start `/nonexistent/mcp-server`"))
    );
    assert!(registry.get("mcp__healthy__echo").is_some());
    assert!(registry.all().all(|r| !r.name.starts_with("mcp__hangs__")));
}

#[tokio::test]
async fn include_and_exclude_lists_filter_tools_and_exclude_wins() {
    let f = fixture();
    let entry = McpServerSettings {
        include_tools: Some(vec!["echo".into(), "sleep(ms)".into(), "pid".into()]),
        exclude_tools: vec!["sleep".into()],
        ..stdio(&[])
    };
    let (_servers, registry) = f.connect(vec![("t", entry)]).await;
    let names: Vec<&str> = registry.all().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["mcp__t__echo", "mcp__t__pid"]);
}

#[tokio::test]
async fn aliases_that_sanitise_alike_do_not_drop_tools() {
    let f = fixture();
    let (_servers, registry) = f
        .connect(vec![("a b", stdio(&[])), ("a_b", stdio(&[]))])
        .await;
    let echoes: Vec<(&str, &Origin)> = registry
        .all()
        .filter(|r| r.name.contains("echo"))
        .map(|r| (r.name.as_str(), &r.origin))
        .collect();
    assert_eq!(echoes.len(), 2, "{echoes:?}");
    assert_eq!(echoes[0].0, "mcp__a_b__echo");
    assert_eq!(echoes[1].0, "mcp__a_b__echo_2");
    assert_ne!(echoes[0].1, echoes[1].1);
}

#[tokio::test]
async fn long_names_are_cut_to_64_with_a_stable_hash() {
    let f = fixture();
    let alias = "a-very-long-server-alias-that-goes-on-and-on-and-on";
    let (_servers, registry) = f.connect(vec![(alias, stdio(&[]))]).await;
    let names: Vec<&str> = registry.all().map(|r| r.name.as_str()).collect();
    assert!(names.iter().all(|n| n.len() <= 64), "{names:?}");
    let echo = toolbelt_engine::registry::sanitize_tool_name(&format!("mcp__{alias}__echo"));
    let sleep = toolbelt_engine::registry::sanitize_tool_name(&format!("mcp__{alias}__sleep"));
    assert_ne!(echo, sleep);
    assert_eq!(
        f.call(&registry, &echo, json!({"message": "long"}))
            .await
            .llm_text(),
        "echo: long"
    );
}

#[tokio::test]
async fn trust_and_trusted_annotations_skip_confirmation() {
    let f = fixture();
    let trusted = McpServerSettings {
        trust: true,
        ..stdio(&[])
    };
    let believed = McpServerSettings {
        trust_annotations: true,
        ..stdio(&[])
    };
    let (_servers, registry) = f
        .connect(vec![
            ("t", stdio(&[])),
            ("trusted", trusted),
            ("believed", believed),
        ])
        .await;
    let (_, echo) = registry
        .build("mcp__t__echo", json!({"message": "x"}))
        .unwrap();
    match echo.confirmation().await {
        Some(ConfirmationDetails::Mcp { server, tool, .. }) => {
            assert_eq!((server.as_str(), tool.as_str()), ("t", "echo"))
        }
        other => panic!("expected an MCP confirmation, got {other:?}"),
    }
    // An untrusted server's readOnlyHint is a hint: the call still asks and is not a read.
    let read = registry.get("mcp__t__read_status").unwrap();
    assert_eq!(read.tool.kind(), Kind::Other);
    let (_, status) = registry.build("mcp__t__read_status", json!({})).unwrap();
    assert!(status.confirmation().await.is_some());
    // With trustAnnotations in the person's settings, the hint is believed.
    let read = registry.get("mcp__believed__read_status").unwrap();
    assert_eq!(read.tool.kind(), Kind::Read);
    let (_, status) = registry
        .build("mcp__believed__read_status", json!({}))
        .unwrap();
    assert!(status.confirmation().await.is_none());
    let (_, echo) = registry
        .build("mcp__believed__echo", json!({"message": "x"}))
        .unwrap();
    assert!(echo.confirmation().await.is_some());
    let (_, trusted_echo) = registry
        .build("mcp__trusted__echo", json!({"message": "x"}))
        .unwrap();
    assert!(trusted_echo.confirmation().await.is_none());
}

#[tokio::test]
async fn server_stderr_goes_to_a_log_file_not_into_answers() {
    let f = fixture();
    let entry = McpServerSettings {
        env: [(
            "TESTSERVER_STDERR".to_string(),
            "secret startup chatter".to_string(),
        )]
        .into(),
        ..stdio(&[])
    };
    let (servers, registry) = f.connect(vec![("t", entry)]).await;
    let r = f
        .call(&registry, "mcp__t__echo", json!({"message": "x"}))
        .await;
    assert!(!r.llm_text().contains("chatter"));
    // The log is written by a copy of toolbelt's, which may lag the call by a moment.
    let log = logged(servers.connections()[0].log_path(), |log| {
        log.contains("secret startup chatter")
    });
    assert!(log.contains("secret startup chatter"), "{log}");
    assert!(
        servers.connections()[0]
            .log_path()
            .starts_with(f.dir.path().join("session"))
    );
}

/// The log at `path` once `ready` holds for it (bounded: a loaded machine is slow).
fn logged(path: &std::path::Path, ready: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let log = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
        if ready(&log) || std::time::Instant::now() >= deadline {
            return log;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[tokio::test]
async fn a_server_flooding_its_stderr_cannot_fill_the_disk() {
    let f = fixture();
    let cap = 16 << 20;
    let entry = McpServerSettings {
        env: [(
            "TESTSERVER_STDERR_BYTES".to_string(),
            (cap + 5000).to_string(),
        )]
        .into(),
        ..stdio(&[])
    };
    let (servers, registry) = f.connect(vec![("t", entry.clone())]).await;
    let path = servers.connections()[0].log_path().to_path_buf();
    let r = f
        .call(&registry, "mcp__t__echo", json!({"message": "x"}))
        .await;
    assert!(r.error.is_none(), "{}", r.llm_text());
    servers.close().await;
    let note = "\n[toolbelt: this log stops after its first 16777216 bytes; the 5000 bytes of output after them were not saved]\n";
    let log = logged(&path, |log| log.ends_with(note));
    assert_eq!(log.len(), cap + note.len());
    assert!(log.starts_with("eeee"));
    // An earlier log that reached the cap is started afresh.
    std::fs::write(&path, "old run\n".repeat(cap / 8 + 1)).unwrap();
    let (servers, _) = f.connect(vec![("t", entry)]).await;
    servers.close().await;
    let log = logged(&path, |log| log.ends_with(note));
    assert!(!log.contains("old run"));
    assert_eq!(log.len(), cap + note.len());
}

/// The test server in `http` mode; its base URL, and the process (killed on drop).
async fn http_server() -> (String, tokio::process::Child) {
    let mut child = tokio::process::Command::new(testserver())
        .arg("http")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let url = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    (url, child)
}

#[tokio::test]
async fn streamable_http_server_on_loopback() {
    let f = fixture();
    let (base, _child) = http_server().await;
    let entry = McpServerSettings {
        http_url: Some(format!("{base}/mcp")),
        headers: [("X-Test".to_string(), "1".to_string())].into(),
        ..Default::default()
    };
    let (servers, registry) = f.connect(vec![("web", entry)]).await;
    assert_eq!(
        servers.connections()[0].status(),
        ServerStatus::Connected,
        "{:?}",
        servers.reports()
    );
    assert_eq!(
        f.call(&registry, "mcp__web__echo", json!({"message": "over http"}))
            .await
            .llm_text(),
        "echo: over http"
    );
    let (kind, message) = error_of(&f.call(&registry, "mcp__web__fail", json!({})).await);
    assert_eq!(kind, ErrorKind::McpToolError);
    assert!(message.contains("disk is full"));
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut ctx = ExecContext::new(f.env.clone());
    let sink = seen.clone();
    ctx.output = OutputSink::new(move |chunk| sink.lock().unwrap().push(chunk.to_string()));
    f.call_with(&registry, "mcp__web__progress", json!({"steps": 2}), ctx)
        .await;
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn legacy_sse_server_on_loopback() {
    let f = fixture();
    let (base, _child) = http_server().await;
    let entry = McpServerSettings {
        url: Some(format!("{base}/sse")),
        ..Default::default()
    };
    let (servers, registry) = f.connect(vec![("old", entry)]).await;
    assert_eq!(
        servers.connections()[0].status(),
        ServerStatus::Connected,
        "{:?}",
        servers.reports()
    );
    assert_eq!(
        f.call(&registry, "mcp__old__echo", json!({"message": "over sse"}))
            .await
            .llm_text(),
        "echo: over sse"
    );
    let image = f.call(&registry, "mcp__old__image", json!({})).await;
    assert!(matches!(image.llm_content[2], Part::InlineData { .. }));
}

#[tokio::test]
async fn an_unreachable_http_server_fails_with_its_reason() {
    let f = fixture();
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let entry = McpServerSettings {
        http_url: Some(format!("http://127.0.0.1:{port}/mcp")),
        startup_timeout: Some(3000),
        ..Default::default()
    };
    let (servers, _) = f.connect(vec![("down", entry)]).await;
    assert!(
        matches!(servers.connections()[0].status(), ServerStatus::Failed(_)),
        "{:?}",
        servers.reports()
    );
}

#[tokio::test]
async fn servers_speaking_older_protocol_revisions_work() {
    let f = fixture();
    for revision in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let entry = McpServerSettings {
            env: [("TESTSERVER_PROTOCOL".to_string(), revision.to_string())].into(),
            ..stdio(&[])
        };
        let (servers, registry) = f.connect(vec![("v", entry)]).await;
        assert_eq!(
            servers.connections()[0].status(),
            ServerStatus::Connected,
            "{revision}: {:?}",
            servers.reports()
        );
        assert_eq!(
            f.call(&registry, "mcp__v__protocol", json!({}))
                .await
                .llm_text(),
            revision
        );
        assert_eq!(
            f.call(&registry, "mcp__v__echo", json!({"message": revision}))
                .await
                .llm_text(),
            format!("echo: {revision}")
        );
    }
}
