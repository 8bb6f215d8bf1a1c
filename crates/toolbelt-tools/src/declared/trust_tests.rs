//! Issue 41: a declared tool asks as the tool it runs would, and a tool from the
//! manifests of an untrusted folder never runs unasked, through the one scheduler every
//! front end uses. One tool per binding kind, in a trusted and an untrusted folder.

use std::sync::{Arc, Mutex};
use toolbelt_engine::{scheduler::CallRules, scheduler::Permissions};

use serde_json::{Value, json};
use toolbelt_config::ApprovalMode;
use toolbelt_config::settings::Settings;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ConfirmationOutcome, ErrorKind, ExecContext, Invocation, Kind,
    Tool, ToolError, ToolResult,
};
use toolbelt_engine::{registry::Origin, registry::ToolRegistry};
use toolbelt_engine::{
    scheduler::Approval, scheduler::ApprovalRequest, scheduler::Approver, scheduler::Scheduler,
    scheduler::SchedulerConfig, scheduler::ToolCallRequest, scheduler::TurnInfo,
};

use super::tests::{builtins, load, setup, write_json};
use super::*;
use crate::test_support::Fixture;

/// An MCP tool of a server the person trusts: it never asks.
struct QuietMcp(Value);

impl Tool for QuietMcp {
    fn name(&self) -> &str {
        "mcp__srv__quiet"
    }
    fn display_name(&self) -> &str {
        "quiet"
    }
    fn description(&self) -> &str {
        "Answers."
    }
    fn kind(&self) -> Kind {
        Kind::Read
    }
    fn parameter_schema(&self) -> &Value {
        &self.0
    }
    fn build(&self, _args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        Ok(Box::new(QuietCall))
    }
}

struct QuietCall;

impl Invocation for QuietCall {
    fn describe(&self) -> String {
        "quiet".into()
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }
    fn execute(self: Box<Self>, _ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async { ToolResult::text("mcp answered") })
    }
}

/// Answers yes, and keeps the questions.
#[derive(Default)]
struct Yes(Mutex<Vec<ApprovalRequest>>);

impl Approver for Yes {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        self.0.lock().unwrap().push(request.clone());
        Box::pin(async { ConfirmationOutcome::ProceedOnce.into() })
    }
}

const KINDS: [&str; 4] = ["via_read_file", "via_shell", "via_mcp", "via_command"];

/// The project's manifest: one tool per binding kind, each reading `notes.txt`.
fn project(untrusted: bool) -> (Fixture, ToolRegistry) {
    let f = setup(Settings::default());
    let mut settings = Settings::default();
    if untrusted {
        settings.untrusted_project = Some(f.ws());
    }
    let f = f.with_settings(settings);
    let notes = f.write("notes.txt", "the notes\n");
    let tools: Vec<Value> = KINDS
        .iter()
        .map(|n| json!({"name": n, "displayName": n, "modelDescription": "Shows the notes."}))
        .collect();
    write_json(
        &f.ws().join(".qwen/tools/t.json"),
        &json!({
            "languageModelTools": tools,
            "bindings": {
                "via_read_file": {"builtin": "read_file", "arguments": {"absolute_path": notes},
                    "invocationMessage": "Show the README"},
                "via_shell": {"builtin": "run_shell_command", "arguments": {"command": "cat notes.txt"},
                    "invocationMessage": "Show the README"},
                "via_mcp": {"mcp": "srv/quiet"},
                "via_command": {"command": ["cat", notes]}
            }
        }),
    );
    let mut registry = builtins(&f);
    registry.register(
        Arc::new(QuietMcp(json!({"type": "object"}))),
        Origin::Mcp {
            server: "srv".into(),
        },
    );
    register_declared(&mut registry, load(&f));
    (f, registry)
}

async fn run(
    f: &Fixture,
    registry: &ToolRegistry,
    name: &str,
    yes: Option<Arc<Yes>>,
) -> ToolResult {
    run_with(f, registry, name, json!({}), yes).await
}

async fn run_with(
    f: &Fixture,
    registry: &ToolRegistry,
    name: &str,
    args: Value,
    yes: Option<Arc<Yes>>,
) -> ToolResult {
    let scheduler = Scheduler::new(
        f.env.clone(),
        SchedulerConfig::new(CallRules::new(
            Permissions::new(&toolbelt_engine::rules::RuleVocabulary::default()),
            ApprovalMode::Default,
            None,
            None,
        ))
        .approver(yes.map(|y| y as Arc<dyn Approver>)),
    );
    let call = ToolCallRequest::new("1", name, &args);
    let mut done = scheduler
        .run(
            registry,
            vec![call],
            TurnInfo::default(),
            &Default::default(),
        )
        .await;
    done.remove(0).result
}

fn refused_unasked(result: &ToolResult) -> bool {
    result
        .error
        .as_ref()
        .is_some_and(|e| e.kind == ErrorKind::ExecutionDenied && e.message.contains("approval"))
}

#[tokio::test]
async fn in_a_trusted_folder_a_declared_tool_asks_as_the_tool_it_runs() {
    let (f, registry) = project(false);
    let confirm = |name: &str| registry.get(name).unwrap().tool.needs_confirmation();
    // The listing's CONFIRM column: read_file and a trusted MCP tool do not ask, the
    // shell may, a command binding does.
    assert!(!confirm("via_read_file") && !confirm("via_mcp"));
    assert!(confirm("via_shell") && confirm("via_command"));
    for name in ["via_read_file", "via_mcp"] {
        let result = run(&f, &registry, name, None).await;
        assert!(result.error.is_none(), "{name}: {result:?}");
    }
    // The shell runs a read-only command unasked where it can confine it, and asks
    // where it cannot: the declared tool does what the shell does here.
    let direct = json!({"command": "cat notes.txt"});
    let shell = run_with(&f, &registry, "run_shell_command", direct, None).await;
    let declared = run(&f, &registry, "via_shell", None).await;
    assert_eq!(declared.error.map(|e| e.kind), shell.error.map(|e| e.kind));
    let result = run(&f, &registry, "via_command", None).await;
    assert!(refused_unasked(&result), "{result:?}");
    let yes = Arc::new(Yes::default());
    let result = run(&f, &registry, "via_command", Some(yes.clone())).await;
    assert_eq!(result.llm_text().trim(), "the notes");
}

#[tokio::test]
async fn in_an_untrusted_folder_every_declared_tool_asks_and_commands_do_not_load() {
    let (f, registry) = project(true);
    assert!(registry.get("via_command").is_none());
    for name in ["via_read_file", "via_shell", "via_mcp"] {
        let tool = &registry.get(name).unwrap().tool;
        assert!(tool.needs_confirmation(), "{name}: CONFIRM must say yes");
        let result = run(&f, &registry, name, None).await;
        assert!(refused_unasked(&result), "{name} ran unasked: {result:?}");
    }
    // Asked, the question shows what runs, not the manifest's words for it.
    let yes = Arc::new(Yes::default());
    let result = run(&f, &registry, "via_shell", Some(yes.clone())).await;
    assert!(result.llm_text().contains("the notes"), "{result:?}");
    let asked = yes.0.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].description.contains("cat notes.txt"),
        "{:?}",
        asked[0]
    );
    match &asked[0].details {
        ConfirmationDetails::Info { prompt, .. } => {
            assert!(prompt.contains("cat notes.txt"), "{prompt}")
        }
        other => panic!("expected the untrusted question, got {other:?}"),
    }
}

/// Issue 41: the user's own `context.envKeys` (or settings holding `$VAR` values) must
/// not become an oracle for an untrusted project's `when` clauses either.
#[test]
fn an_untrusted_folders_when_clause_may_not_read_env_or_config() {
    let f = setup(Settings::default());
    let mut settings = Settings::default();
    settings.untrusted_project = Some(f.ws());
    settings.context.env_keys = vec!["PATH".into()];
    let f = f.with_settings(settings);
    let tool = |name: &str, when: &str| json!({"name": name, "displayName": name, "modelDescription": "d", "when": when});
    let manifest = json!({
        "languageModelTools": [
            tool("probe_env", "env.PATH =~ /^a/"),
            tool("probe_config", "config.webSearch.provider"),
            tool("plain", "isLinux || isMac"),
        ],
        "bindings": {
            "probe_env": {"builtin": "list_directory"},
            "probe_config": {"builtin": "list_directory"},
            "plain": {"builtin": "list_directory"}
        }
    });
    write_json(&f.ws().join(".qwen/tools/t.json"), &manifest);
    let loaded = load(&f);
    assert_eq!(loaded.tool_names(), vec!["plain"]);
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("probe_env, probe_config")),
        "{:?}",
        loaded.warnings
    );
    // Trusted, they load.
    let f = f.with_settings(Settings::default());
    assert_eq!(load(&f).tool_names().len(), 3);
}

/// Issue 41: a (trusted) project's `tools.manifests` names manifests inside the project
/// only; the person's own entries may name any folder.
#[test]
fn a_projects_manifest_entries_stay_inside_the_project() {
    use toolbelt_config::{settings::SettingsPaths, settings::WorkspaceTrust};
    let f = setup(Settings::default());
    let outside = f.outside().join("tools");
    write_json(
        &outside.join("o.json"),
        &json!({"languageModelTools": [{"name": "from_outside", "displayName": "o", "modelDescription": "d"}],
                "bindings": {"from_outside": {"builtin": "list_directory"}}}),
    );
    write_json(
        &f.ws().join("mine/m.json"),
        &json!({"languageModelTools": [{"name": "inside", "displayName": "i", "modelDescription": "d"}],
                "bindings": {"inside": {"builtin": "list_directory"}}}),
    );
    let settings_file = f.ws().join(".qwen/settings.json");
    let entries = json!([outside.display().to_string(), "../outside/tools", "mine"]);
    write_json(&settings_file, &json!({"tools": {"manifests": entries}}));
    let paths = SettingsPaths {
        user: None,
        workspace: Some(settings_file.clone()),
        system: None,
        trust: WorkspaceTrust::Trusted,
        claude_hooks: Vec::new(),
    };
    let f = f.with_settings(Settings::load(&paths).unwrap());
    let loaded = load(&f);
    assert_eq!(loaded.tool_names(), vec!["inside"]);
    let outside_warnings = loaded
        .warnings
        .iter()
        .filter(|w| w.contains("leads outside the project"))
        .count();
    assert_eq!(outside_warnings, 2, "{:?}", loaded.warnings);
    // The same entries in the person's own settings load.
    let mut own = Settings::default();
    own.tools.manifests = vec![outside.display().to_string()];
    let f = f.with_settings(own);
    assert_eq!(load(&f).tool_names(), vec!["from_outside"]);
}
