use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolbelt_config::settings::Settings;
use toolbelt_core::{ExecContext, ToolEnvironment, WorkspaceRoots};
use toolbelt_engine::{registry::Origin, registry::ToolRegistry};

use super::*;

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        Fixture { dir }
    }

    /// Writes an executable script into the workspace and returns its path.
    fn script(&self, name: &str, body: &str) -> String {
        let path = self.dir.path().join("ws").join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.to_str().unwrap().to_string()
    }

    fn env(&self, settings: serde_json::Value) -> Arc<ToolEnvironment> {
        let settings = Settings::from_value(settings).unwrap();
        let roots = WorkspaceRoots::new([self.dir.path().join("ws")]).unwrap();
        Arc::new(ToolEnvironment::new(
            roots,
            Arc::new(settings),
            self.dir.path().join("session"),
        ))
    }

    async fn registry(
        &self,
        settings: serde_json::Value,
    ) -> (ToolRegistry, Vec<String>, Arc<ToolEnvironment>) {
        let env = self.env(settings);
        let found = discover(&env).await;
        let mut registry = ToolRegistry::new();
        crate::register_builtins(&mut registry, &env);
        for tool in found.tools {
            registry.register(tool, Origin::Discovered);
        }
        (registry, found.warnings, env)
    }
}

async fn call(
    registry: &ToolRegistry,
    env: &Arc<ToolEnvironment>,
    name: &str,
    args: serde_json::Value,
) -> ToolResult {
    match registry.build(name, args) {
        Ok((_, call)) => call.execute(ExecContext::new(env.clone())).await,
        Err(e) => ToolResult::error(e),
    }
}

/// The names of the tools that are not built in: what discovery added.
fn names(registry: &ToolRegistry) -> Vec<String> {
    registry
        .all()
        .filter(|r| r.origin != Origin::BuiltIn)
        .map(|r| r.name.clone())
        .collect()
}

#[tokio::test]
async fn bare_declarations_with_parameters_or_parameters_json_schema_become_tools() {
    let f = Fixture::new();
    let cmd = f.script(
        "discover.sh",
        r#"cat <<'EOF'
[{"name": "deploy", "description": "Deploys.", "parameters": {"type": "OBJECT", "properties": {"env": {"type": "STRING"}}, "required": ["env"]}},
 {"name": "lint", "description": "Lints.", "parametersJsonSchema": {"type": "object", "properties": {}}}]
EOF"#,
    );
    let (registry, warnings, _) = f
        .registry(json!({"tools": {"discoveryCommand": cmd}}))
        .await;
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(names(&registry), ["deploy", "lint"]);
    let deploy = registry.get("deploy").unwrap();
    assert_eq!(deploy.origin, Origin::Discovered);
    assert_eq!(
        deploy.tool.parameter_schema()["properties"]["env"]["type"],
        "string"
    );
    assert!(deploy.tool.description().starts_with("Deploys."));
    // The schema is enforced: `env` is required.
    assert!(registry.build("deploy", json!({})).is_err());
}

#[tokio::test]
async fn both_wrapper_spellings_are_accepted_alongside_bare_items() {
    let f = Fixture::new();
    let cmd = f.script(
        "discover.sh",
        r#"echo '[{"functionDeclarations": [{"name": "a"}]}, {"function_declarations": [{"name": "b", "description": "B"}]}, {"name": "c"}]'"#,
    );
    let (registry, warnings, _) = f
        .registry(json!({"tools": {"discoveryCommand": cmd}}))
        .await;
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(names(&registry), ["a", "b", "c"]);
}

#[tokio::test]
async fn garbage_output_is_a_warning_that_says_what_was_wrong() {
    let f = Fixture::new();
    let cmd = f.script("discover.sh", "echo 'Loading plugins... done'");
    let (registry, warnings, _) = f
        .registry(json!({"tools": {"discoveryCommand": cmd}}))
        .await;
    assert!(names(&registry).is_empty());
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("not JSON"), "{}", warnings[0]);
    assert!(warnings[0].contains("Loading plugins"), "{}", warnings[0]);
}

#[tokio::test]
async fn bad_items_are_skipped_with_a_warning_and_good_ones_still_load() {
    let f = Fixture::new();
    let cmd = f.script(
        "discover.sh",
        r#"echo '[42, {"description": "no name"}, {"name": "ok", "parameters": "oops"}, {"functionDeclarations": 3}]'"#,
    );
    let (registry, warnings, _) = f
        .registry(json!({"tools": {"discoveryCommand": cmd}}))
        .await;
    assert_eq!(names(&registry), ["ok"]);
    let all = warnings.join("\n");
    assert!(all.contains("item 0 is a number"), "{all}");
    assert!(all.contains("item 1 has no \"name\""), "{all}");
    assert!(
        all.contains("(\"ok\"): the parameters must be a JSON Schema object, not a string"),
        "{all}"
    );
    assert!(
        all.contains("item 3: functionDeclarations must be an array"),
        "{all}"
    );
}

#[tokio::test]
async fn non_array_output_is_a_warning() {
    let parsed = parse_declarations(br#"{"name": "x"}"#);
    assert!(parsed.declarations.is_empty());
    assert!(
        parsed.warnings[0].contains("must be a JSON array"),
        "{:?}",
        parsed.warnings
    );
}

#[tokio::test]
async fn a_failing_discovery_command_is_a_warning_naming_exit_code_and_stderr() {
    let f = Fixture::new();
    let cmd = f.script("discover.sh", "echo 'config missing' >&2; exit 3");
    let (registry, warnings, _) = f
        .registry(json!({"tools": {"discoveryCommand": cmd}}))
        .await;
    assert!(names(&registry).is_empty());
    assert!(warnings[0].contains("exit code 3"), "{}", warnings[0]);
    assert!(warnings[0].contains("config missing"), "{}", warnings[0]);
}

#[tokio::test]
async fn a_hanging_discovery_command_is_killed_at_its_timeout() {
    let f = Fixture::new();
    let cmd = f.script("discover.sh", "sleep 120 & wait");
    let started = Instant::now();
    let (registry, warnings, _) = f
        .registry(json!({"tools": {"discoveryCommand": cmd, "discoveryTimeout": 300}}))
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    assert!(names(&registry).is_empty());
    assert!(
        warnings[0].contains("no answer within 300 ms"),
        "{}",
        warnings[0]
    );
}

#[tokio::test]
async fn a_missing_discovery_command_is_a_warning() {
    let f = Fixture::new();
    let (_, warnings, _) = f
        .registry(json!({"tools": {"discoveryCommand": "/nonexistent/discover --all"}}))
        .await;
    assert!(
        warnings[0].contains("cannot start `/nonexistent/discover`"),
        "{}",
        warnings[0]
    );
}

#[tokio::test]
async fn discovery_runs_in_the_project_root() {
    let f = Fixture::new();
    std::fs::write(
        f.dir.path().join("ws/tools.json"),
        r#"[{"name": "from_file"}]"#,
    )
    .unwrap();
    let (registry, warnings, _) = f
        .registry(json!({"tools": {"discoveryCommand": "cat tools.json"}}))
        .await;
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(registry.get("from_file").is_some());
}

fn call_fixture(f: &Fixture, call_body: &str) -> serde_json::Value {
    let discover = f.script(
        "discover.sh",
        r#"echo '[{"name": "greet", "parameters": {"type": "object", "properties": {"who": {"type": "string"}}}}]'"#,
    );
    let call = f.script("call.sh", call_body);
    json!({"tools": {"discoveryCommand": discover, "callCommand": call}})
}

#[tokio::test]
async fn call_command_gets_the_name_as_argument_and_the_arguments_on_stdin() {
    let f = Fixture::new();
    let settings = call_fixture(&f, r#"echo "tool=$1"; cat"#);
    let (registry, _, env) = f.registry(settings).await;
    let r = call(&registry, &env, "greet", json!({"who": "Ada"})).await;
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(r.llm_text(), "tool=greet\n{\"who\":\"Ada\"}");
}

#[tokio::test]
async fn exit_zero_with_stderr_is_success_with_a_note() {
    let f = Fixture::new();
    let settings = call_fixture(&f, "echo done; echo 'deprecated flag' >&2");
    let (registry, _, env) = f.registry(settings).await;
    let r = call(&registry, &env, "greet", json!({})).await;
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(r.llm_content[0], Part::text("done\n"));
    assert!(
        r.llm_text()
            .contains("Note: the tool also wrote to stderr:\ndeprecated flag"),
        "{}",
        r.llm_text()
    );
}

#[tokio::test]
async fn a_non_zero_exit_is_an_error_with_stdout_stderr_and_code() {
    let f = Fixture::new();
    let settings = call_fixture(&f, "echo partial; echo 'bad input' >&2; exit 4");
    let (registry, _, env) = f.registry(settings).await;
    let r = call(&registry, &env, "greet", json!({})).await;
    let e = r.error.unwrap();
    assert_eq!(e.kind, ErrorKind::DiscoveredToolExecutionError);
    assert!(e.message.contains("Stdout: partial"), "{}", e.message);
    assert!(e.message.contains("Stderr: bad input"), "{}", e.message);
    assert!(e.message.contains("Exit Code: 4"), "{}", e.message);
    assert!(e.message.contains("Signal: (none)"), "{}", e.message);
}

#[tokio::test]
async fn a_signal_is_reported_by_name() {
    let f = Fixture::new();
    let settings = call_fixture(&f, "kill -TERM $$");
    let (registry, _, env) = f.registry(settings).await;
    let e = call(&registry, &env, "greet", json!({}))
        .await
        .error
        .unwrap();
    assert!(e.message.contains("Signal: SIGTERM"), "{}", e.message);
}

#[tokio::test]
async fn a_hanging_call_times_out_and_its_children_are_killed() {
    let f = Fixture::new();
    let pid_file = f.dir.path().join("child.pid");
    let mut settings = call_fixture(
        &f,
        &format!("sleep 120 & echo $! > {}; wait", pid_file.display()),
    );
    // Long enough for the shell to start its child on a loaded machine.
    settings["tools"]["callTimeout"] = json!(1500);
    let (registry, _, env) = f.registry(settings).await;
    let started = Instant::now();
    let r = call(&registry, &env, "greet", json!({})).await;
    // A deadline far under the two-minute sleep.
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(r.error.unwrap().kind, ErrorKind::Timeout);
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(
        !process_alive(pid.trim()),
        "the grandchild {pid} survived the timeout"
    );
}

#[tokio::test]
async fn cancellation_kills_the_process_group() {
    let f = Fixture::new();
    let pid_file = f.dir.path().join("child.pid");
    let settings = call_fixture(
        &f,
        &format!("sleep 120 & echo $! > {}; wait", pid_file.display()),
    );
    let (registry, _, env) = f.registry(settings).await;
    let (_, invocation) = registry.build("greet", json!({})).unwrap();
    let ctx = ExecContext::new(env.clone());
    let cancel = ctx.cancel.clone();
    let running = tokio::spawn(invocation.execute(ctx));
    // Cancel once the script has started its child (the pid file appears).
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&pid_file)
        .map(|s| s.trim().is_empty())
        .unwrap_or(true)
    {
        assert!(Instant::now() < deadline, "the call command never started");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cancel.cancel();
    let r = running.await.unwrap();
    assert_eq!(r.error.unwrap().kind, ErrorKind::Cancelled);
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(
        !process_alive(pid.trim()),
        "the grandchild {pid} survived the cancel"
    );
}

#[tokio::test]
async fn output_over_the_cap_kills_the_command_and_says_so() {
    let f = Fixture::new();
    let mut settings = call_fixture(&f, "yes");
    settings["tools"]["commandOutputLimit"] = json!(10_000);
    let (registry, _, env) = f.registry(settings).await;
    let e = call(&registry, &env, "greet", json!({}))
        .await
        .error
        .unwrap();
    assert!(
        e.message.contains("over the 10000-byte limit"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn discovered_tools_ask_for_confirmation_unless_allowed() {
    let f = Fixture::new();
    let settings = call_fixture(&f, "true");
    let (registry, _, _) = f.registry(settings.clone()).await;
    let (_, invocation) = registry.build("greet", json!({})).unwrap();
    assert!(invocation.confirmation().await.is_some());
    assert!(registry.get("greet").unwrap().tool.needs_confirmation());

    let mut allowed = settings.clone();
    allowed["tools"]["allowed"] = json!(["greet"]);
    let (registry, _, _) = f.registry(allowed).await;
    let (_, invocation) = registry.build("greet", json!({})).unwrap();
    assert!(invocation.confirmation().await.is_none());

    let mut trusted = settings;
    trusted["tools"]["trustDiscoveredTools"] = json!(true);
    let (registry, _, _) = f.registry(trusted).await;
    assert!(!registry.get("greet").unwrap().tool.needs_confirmation());
}

#[tokio::test]
async fn a_discovered_tool_named_like_a_builtin_is_renamed_not_dropped() {
    let f = Fixture::new();
    let cmd = f.script("discover.sh", r#"echo '[{"name": "read_file"}]'"#);
    let (registry, warnings, _) = f
        .registry(json!({"tools": {"discoveryCommand": cmd}}))
        .await;
    assert!(warnings.is_empty());
    assert_eq!(names(&registry), ["discovered__read_file"]);
    assert_eq!(registry.get("read_file").unwrap().origin, Origin::BuiltIn);
}

#[tokio::test]
async fn without_a_call_command_a_call_is_a_clear_error() {
    let f = Fixture::new();
    let cmd = f.script("discover.sh", r#"echo '[{"name": "x"}]'"#);
    let (registry, _, env) = f
        .registry(json!({"tools": {"discoveryCommand": cmd}}))
        .await;
    let e = call(&registry, &env, "x", json!({})).await.error.unwrap();
    assert!(
        e.message.contains("tools.callCommand is not set"),
        "{}",
        e.message
    );
}

#[test]
fn legacy_spellings_of_the_commands_are_read() {
    let env_settings = Settings::from_value(
        json!({"toolDiscoveryCommand": "a", "tools": {"toolCallCommand": "b"}}),
    )
    .unwrap();
    assert_eq!(env_settings.tools.discovery_command.as_deref(), Some("a"));
    assert_eq!(env_settings.tools.call_command.as_deref(), Some("b"));
}

fn process_alive(pid: &str) -> bool {
    // A killed process closes its pipes a moment before it becomes a zombie (state Z)
    // and is reaped; wait up to five seconds for that, and count a zombie as gone.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let alive = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat
                .split(") ")
                .nth(1)
                .is_some_and(|rest| rest.starts_with('Z')),
            Err(_) => false,
        };
        if !alive || Instant::now() >= deadline {
            return alive;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
