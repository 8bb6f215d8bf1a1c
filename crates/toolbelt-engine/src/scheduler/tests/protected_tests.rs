//! Protected configuration (`.qwen`, `.agents`, `.git`): a change to it is asked even in
//! auto-edit mode, under an "always allow" answer or a bare allow rule; only yolo and an
//! allow rule that names the file approve it. Against real files in a temp workspace,
//! through a file-writing tool that resolves its path as the built-in tools do.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::fixtures::{env, run};
use crate::registry::{Origin, ToolRegistry};
use crate::rules::RuleList;
use crate::scheduler::*;
use toolbelt_core::{
    BoxFuture, ExecContext, Invocation, Kind, PermissionSubject, Tool, ToolEnvironment, TurnGrant,
};
use toolbelt_core::{ConfirmationDetails, ConfirmationOutcome};
use toolbelt_core::{ErrorKind, ToolError, ToolResult};

/// Stands in for the built-in `edit`: resolves `file_path` through the workspace roots
/// (`..` and links resolved, as `write_file` does) and writes `content` there.
struct WriteTool {
    env: Arc<ToolEnvironment>,
    schema: Value,
}

struct WriteCall {
    path: PathBuf,
    shown: String,
    content: String,
}

impl Tool for WriteTool {
    fn name(&self) -> &str {
        "edit"
    }
    fn display_name(&self) -> &str {
        "Edit"
    }
    fn description(&self) -> &str {
        "Writes a file."
    }
    fn kind(&self) -> Kind {
        Kind::Edit
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let given = args["file_path"].as_str().unwrap_or("");
        let path = self.env.roots.resolve(given)?;
        Ok(Box::new(WriteCall {
            shown: self.env.roots.display_relative(&path),
            path,
            content: args["content"].as_str().unwrap_or("").to_string(),
        }))
    }
}

impl Invocation for WriteCall {
    fn describe(&self) -> String {
        format!("Write to {}", self.shown)
    }
    fn permission_subject(&self) -> PermissionSubject {
        PermissionSubject::Paths(vec![self.path.clone()])
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async move {
            Some(ConfirmationDetails::Edit {
                title: format!("Confirm Write: {}", self.shown),
                file_name: self.shown.clone(),
                file_path: self.path.clone(),
                diff: format!("+{}", self.content),
                is_new_file: !self.path.exists(),
                original_content: None,
                new_content: Some(self.content.clone()),
            })
        })
    }
    fn execute(self: Box<Self>, _ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            if let Some(parent) = self.path.parent() {
                std::fs::create_dir_all(parent).unwrap();
            }
            std::fs::write(&self.path, &self.content).unwrap();
            ToolResult::text("written")
        })
    }
}

/// A skill stand-in: needs no approval and grants `rules` for the rest of the turn.
struct Granter(Vec<String>);

struct GrantCall(Vec<String>);

impl Tool for Granter {
    fn name(&self) -> &str {
        "skill"
    }
    fn display_name(&self) -> &str {
        "Skill"
    }
    fn description(&self) -> &str {
        "Grants tools."
    }
    fn kind(&self) -> Kind {
        Kind::Think
    }
    fn parameter_schema(&self) -> &Value {
        static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        SCHEMA.get_or_init(|| json!({"type": "object"}))
    }
    fn build(&self, _: Value) -> Result<Box<dyn Invocation>, ToolError> {
        Ok(Box::new(GrantCall(self.0.clone())))
    }
}

impl Invocation for GrantCall {
    fn describe(&self) -> String {
        "skill".into()
    }
    fn turn_grant(&self) -> Option<TurnGrant> {
        Some(TurnGrant {
            source: "skill \"x\"".into(),
            rules: self.0.clone(),
        })
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }
    fn execute(self: Box<Self>, _: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async { ToolResult::text("granted") })
    }
}

/// Answers with a fixed outcome and keeps every request.
pub(super) struct Recorder {
    outcome: ConfirmationOutcome,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Recorder {
    pub(super) fn new(outcome: ConfirmationOutcome) -> Arc<Self> {
        Arc::new(Recorder {
            outcome,
            asked: Mutex::new(Vec::new()),
        })
    }
    pub(super) fn asked(&self) -> Vec<ApprovalRequest> {
        self.asked.lock().unwrap().clone()
    }
}

impl Approver for Recorder {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        self.asked.lock().unwrap().push(request.clone());
        Box::pin(async move { self.outcome.into() })
    }
}

/// A workspace in a temp dir with `edit` (the write tool above) and `skill`.
pub(super) struct Setup {
    dir: tempfile::TempDir,
    pub(super) env: Arc<ToolEnvironment>,
    pub(super) registry: ToolRegistry,
}

impl Setup {
    pub(super) fn new() -> Setup {
        Setup::granting(&[])
    }

    /// With a `skill` tool that grants `rules` for the turn.
    fn granting(rules: &[&str]) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let env = env(&dir);
        let mut registry = ToolRegistry::new();
        let tool = WriteTool {
            env: env.clone(),
            schema: json!({"type": "object"}),
        };
        registry.register(Arc::new(tool), Origin::BuiltIn);
        let granted = rules.iter().map(|r| r.to_string()).collect();
        registry.register(Arc::new(Granter(granted)), Origin::BuiltIn);
        std::fs::create_dir_all(dir.path().join(".qwen")).unwrap();
        std::fs::write(dir.path().join(".qwen/settings.json"), "{}").unwrap();
        Setup { dir, env, registry }
    }

    pub(super) fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    pub(super) fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.root().join(rel)).ok()
    }

    /// Path rules anchored at the workspace, as the binary anchors them.
    pub(super) fn rules(&self, allow: &[&str]) -> Permissions {
        let mut rules = crate::rules::tests::empty_rules().with_base(self.root(), None);
        for rule in allow {
            rules.add(RuleList::Allow, rule);
        }
        Permissions::from_rules(rules)
    }

    fn scheduler(
        &self,
        mode: ApprovalMode,
        approver: Option<Arc<dyn Approver>>,
        permissions: Permissions,
    ) -> Scheduler {
        Scheduler::new(
            self.env.clone(),
            SchedulerConfig::new(CallRules::new(permissions, mode, None, None))
                .approver(approver)
                .turn_grants(true),
        )
    }

    pub(super) fn write(&self, id: &str, rel: &str) -> ToolCallRequest {
        let path = self.root().join(rel);
        ToolCallRequest::new(
            id,
            "edit",
            &json!({"file_path": path, "content": format!("by {id}")}),
        )
    }
}

fn refusal(result: &ToolResult) -> String {
    let error = result.error.as_ref().expect("the call was refused");
    assert_eq!(error.kind, ErrorKind::ExecutionDenied, "{}", error.message);
    error.message.clone()
}

#[tokio::test]
async fn auto_edit_asks_before_changing_toolbelt_settings_and_not_for_other_files() {
    let w = Setup::new();
    let person = Recorder::new(ConfirmationOutcome::ProceedOnce);
    let s = w.scheduler(
        ApprovalMode::AutoEdit,
        Some(person.clone()),
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    );
    let out = run(
        &s,
        &w.registry,
        vec![
            w.write("1", "src/lib.rs"),
            w.write("2", ".qwen/settings.json"),
        ],
    )
    .await;
    assert!(out.iter().all(|c| c.state == CallState::Success), "{out:?}");
    let asked = person.asked();
    assert_eq!(asked.len(), 1, "only the settings were asked");
    let request = &asked[0];
    assert_eq!(request.call_id, "2");
    assert!(!request.may_always_allow, "no 'always' for protected files");
    assert!(
        request.description.contains("protected: toolbelt settings"),
        "{}",
        request.description
    );
    assert!(
        request
            .details
            .title()
            .contains("protected: toolbelt settings")
    );
    assert_eq!(w.read(".qwen/settings.json").as_deref(), Some("by 2"));
}

#[tokio::test]
async fn headless_auto_edit_refuses_protected_files_with_how_to_allow_them() {
    let w = Setup::new();
    let s = w.scheduler(
        ApprovalMode::AutoEdit,
        None,
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    );
    let out = run(
        &s,
        &w.registry,
        vec![
            w.write("1", ".qwen/settings.json"),
            w.write("2", "notes.md"),
        ],
    )
    .await;
    let message = refusal(&out[0].result);
    for part in [
        ".qwen/settings.json",
        "protected configuration",
        "toolbelt settings",
        "permission rules",
        "auto-edit",
        "--allowed-tools 'Edit(.qwen/settings.json)'",
        "--approval-mode yolo",
    ] {
        assert!(message.contains(part), "{part:?} missing from: {message}");
    }
    assert_eq!(w.read(".qwen/settings.json").as_deref(), Some("{}"));
    assert_eq!(
        out[1].state,
        CallState::Success,
        "an ordinary file still runs"
    );
    assert_eq!(w.read("notes.md").as_deref(), Some("by 2"));
}

#[tokio::test]
async fn a_link_into_qwen_new_skill_files_and_git_internals_are_caught() {
    let w = Setup::new();
    std::os::unix::fs::symlink(
        w.root().join(".qwen/settings.json"),
        w.root().join("notes.txt"),
    )
    .unwrap();
    std::fs::create_dir_all(w.root().join(".git/hooks")).unwrap();
    std::fs::create_dir_all(w.root().join("docs")).unwrap();
    std::os::unix::fs::symlink(w.root().join(".git"), w.root().join("docs/g")).unwrap();
    let s = w.scheduler(
        ApprovalMode::AutoEdit,
        None,
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    );
    let cases = [
        ("notes.txt", "toolbelt settings"),
        (".qwen/skills/x/SKILL.md", "skills"),
        (".agents/skills/x/SKILL.md", "skills"),
        (".qwen/tools/t.json", "declared tools"),
        (".qwen/agents/a.md", "sub-agent definitions"),
        (".git/hooks/pre-commit", "git hooks"),
        (".git/config", "git configuration"),
        ("docs/g/hooks/post-checkout", "git hooks"),
        (".QWEN/settings.json", "toolbelt settings"),
    ];
    let calls = cases
        .iter()
        .enumerate()
        .map(|(i, (rel, _))| w.write(&i.to_string(), rel))
        .collect();
    let out = run(&s, &w.registry, calls).await;
    for ((rel, label), done) in cases.iter().zip(&out) {
        let message = refusal(&done.result);
        assert!(message.contains(label), "{rel}: {message}");
    }
    assert_eq!(w.read(".qwen/settings.json").as_deref(), Some("{}"));
    for rel in [".qwen/skills", ".agents", ".git/hooks/pre-commit", ".QWEN"] {
        assert!(!w.root().join(rel).exists(), "{rel} was created");
    }
}

#[tokio::test]
async fn always_allow_for_edit_does_not_cover_protected_files() {
    let w = Setup::new();
    let person = Recorder::new(ConfirmationOutcome::ProceedAlways);
    let s = w.scheduler(
        ApprovalMode::Default,
        Some(person.clone()),
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    );
    let out = run(
        &s,
        &w.registry,
        vec![
            w.write("1", "a.txt"),
            w.write("2", "b.txt"),
            w.write("3", ".qwen/settings.json"),
            w.write("4", ".qwen/settings.json"),
        ],
    )
    .await;
    assert!(out.iter().all(|c| c.state == CallState::Success), "{out:?}");
    let ids: Vec<String> = person.asked().iter().map(|r| r.call_id.clone()).collect();
    // "Always" for a.txt covers b.txt; each settings change is asked, and the "always"
    // given for the first one counted once.
    assert_eq!(ids, ["1", "3", "4"]);
}

#[tokio::test]
async fn only_an_allow_rule_that_names_the_file_approves_it() {
    let w = Setup::new();
    for bare in ["edit", "Edit", "Edit(**)", "edit(/**)"] {
        let s = w.scheduler(ApprovalMode::AutoEdit, None, w.rules(&[bare]));
        let out = run(&s, &w.registry, vec![w.write("1", ".qwen/settings.json")]).await;
        refusal(&out[0].result);
        assert_eq!(
            w.read(".qwen/settings.json").as_deref(),
            Some("{}"),
            "{bare}"
        );
    }
    for named in ["Edit(.qwen/settings.json)", "edit(/.qwen/**)"] {
        std::fs::write(w.root().join(".qwen/settings.json"), "{}").unwrap();
        let s = w.scheduler(ApprovalMode::Default, None, w.rules(&[named]));
        let out = run(&s, &w.registry, vec![w.write("1", ".qwen/settings.json")]).await;
        assert_eq!(out[0].state, CallState::Success, "{named}: {out:?}");
    }
    // A rule naming another protected file does not reach this one.
    let s = w.scheduler(ApprovalMode::Default, None, w.rules(&["Edit(.git/**)"]));
    let out = run(&s, &w.registry, vec![w.write("1", ".qwen/settings.json")]).await;
    refusal(&out[0].result);
}

#[tokio::test]
async fn a_skills_grant_does_not_approve_protected_files() {
    let w = Setup::granting(&["Edit", "Edit(.qwen/settings.json)"]);
    let s = w.scheduler(
        ApprovalMode::Default,
        None,
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    );
    let grant = ToolCallRequest::new("g", "skill", &json!({}));
    let out = run(&s, &w.registry, vec![grant]).await;
    assert_eq!(out[0].state, CallState::Success);
    let out = run(
        &s,
        &w.registry,
        vec![w.write("1", "a.txt"), w.write("2", ".qwen/settings.json")],
    )
    .await;
    assert_eq!(out[0].state, CallState::Success, "the grant covers a.txt");
    refusal(&out[1].result);
    assert_eq!(w.read(".qwen/settings.json").as_deref(), Some("{}"));
}

#[tokio::test]
async fn yolo_still_approves_protected_files() {
    let w = Setup::new();
    let s = w.scheduler(
        ApprovalMode::Yolo,
        None,
        Permissions::from_rules(crate::rules::tests::empty_rules()),
    );
    let out = run(
        &s,
        &w.registry,
        vec![
            w.write("1", ".qwen/settings.json"),
            w.write("2", ".git/hooks/pre-commit"),
        ],
    )
    .await;
    assert!(out.iter().all(|c| c.state == CallState::Success), "{out:?}");
    assert_eq!(w.read(".qwen/settings.json").as_deref(), Some("by 1"));
}

#[tokio::test]
async fn a_path_the_session_protects_is_asked_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut roots = toolbelt_core::WorkspaceRoots::new([dir.path()]).unwrap();
    roots.protect(
        &dir.path().join("tbhome"),
        "toolbelt's own files",
        "saved sessions",
    );
    let env = Arc::new(ToolEnvironment::new(
        roots,
        Arc::new(toolbelt_config::settings::Settings::default()),
        dir.path().join("s"),
    ));
    let mut registry = ToolRegistry::new();
    let tool = WriteTool {
        env: env.clone(),
        schema: json!({"type": "object"}),
    };
    registry.register(Arc::new(tool), Origin::BuiltIn);
    let s = Scheduler::new(
        env,
        SchedulerConfig::new(CallRules::new(
            Permissions::new(&crate::rules::RuleVocabulary::default()),
            ApprovalMode::AutoEdit,
            None,
            None,
        )),
    );
    let path = dir.path().join("tbhome/sessions/x.jsonl");
    let request = ToolCallRequest::new("1", "edit", &json!({"file_path": path, "content": "x"}));
    let out = run(&s, &registry, vec![request]).await;
    let message = refusal(&out[0].result);
    assert!(message.contains("toolbelt's own files"), "{message}");
    assert!(!Path::new(&path).exists());
}
