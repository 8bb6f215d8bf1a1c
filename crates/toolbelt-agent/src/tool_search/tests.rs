//! Ranking, the declaration plan and the tool's own text.

use proptest::prelude::*;
use toolbelt_config::settings::Settings;
use toolbelt_core::WorkspaceRoots;
use toolbelt_engine::lint::lint_declaration;

use super::*;
use index::tokenize;

/// A tool that only declares itself; calling it echoes its name and arguments.
pub(crate) struct FakeTool {
    name: String,
    description: String,
    schema: Value,
}

impl FakeTool {
    pub(crate) fn new(name: &str, description: &str, params: &[(&str, &str)]) -> Self {
        let properties: serde_json::Map<String, Value> = params
            .iter()
            .map(|(p, d)| (p.to_string(), json!({"type": "string", "description": d})))
            .collect();
        FakeTool {
            name: name.to_string(),
            description: description.to_string(),
            schema: json!({"type": "object", "properties": properties}),
        }
    }
}

struct FakeCall(String, Value);

impl Tool for FakeTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn display_name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn kind(&self) -> Kind {
        Kind::Read
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        Ok(Box::new(FakeCall(self.name.clone(), args)))
    }
}

impl Invocation for FakeCall {
    fn describe(&self) -> String {
        self.0.clone()
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }
    fn execute(self: Box<Self>, _ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move { ToolResult::text(format!("{} ran with {}", self.0, self.1)) })
    }
}

const SERVICES: &[(&str, &str)] = &[
    ("github", "GitHub"),
    ("gitlab", "GitLab"),
    ("jira", "Jira"),
    ("slack", "Slack"),
    ("linear", "Linear"),
    ("notion", "Notion"),
    ("postgres", "PostgreSQL"),
    ("sentry", "Sentry"),
    ("stripe", "Stripe"),
    ("gdrive", "Google Drive"),
    ("figma", "Figma"),
    ("datadog", "Datadog"),
];
const OBJECTS: &[(&str, &[&str])] = &[
    ("issue", &["title", "body", "labels", "assignee"]),
    ("comment", &["body", "thread_id"]),
    ("file", &["path", "content", "encoding"]),
    ("user", &["username", "email"]),
    ("project", &["project_id", "visibility"]),
];
const VERBS: &[(&str, &str)] = &[
    ("create", "Creates a new"),
    ("get", "Fetches one"),
    ("list", "Lists every"),
    ("update", "Changes the fields of an existing"),
    ("delete", "Deletes a"),
];

/// `n` MCP tools as servers name them (`mcp__github__create_issue`), with descriptions
/// and parameters; at most 300.
pub(crate) fn mcp_tools(n: usize) -> Vec<(Arc<dyn Tool>, Origin)> {
    let mut out: Vec<(Arc<dyn Tool>, Origin)> = Vec::new();
    for (server, service) in SERVICES {
        for (object, params) in OBJECTS {
            for (verb, phrase) in VERBS {
                let name = format!("mcp__{server}__{verb}_{object}");
                let description = format!(
                    "{phrase} {object} in {service}. Use it to {verb} {object}s of the connected {service} account; it needs the {service} token of the server."
                );
                let mut all: Vec<(&str, &str)> = params
                    .iter()
                    .map(|p| (*p, "a field of the object"))
                    .collect();
                all.push(("workspace", "the account or organisation"));
                out.push((
                    Arc::new(FakeTool::new(&name, &description, &all)),
                    Origin::Mcp {
                        server: server.to_string(),
                    },
                ));
            }
        }
    }
    out.truncate(n);
    out
}

fn registry_with(builtins: &[&str], tools: Vec<(Arc<dyn Tool>, Origin)>) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for name in builtins {
        registry.register(
            Arc::new(FakeTool::new(name, "a built-in tool of the session", &[])),
            Origin::BuiltIn,
        );
    }
    for (tool, origin) in tools {
        registry.register(tool, origin);
    }
    registry
}

fn names<'a>(found: impl IntoIterator<Item = &'a IndexedTool>) -> Vec<&'a str> {
    found.into_iter().map(|t| t.name.as_str()).collect()
}

fn index_of(tools: Vec<(Arc<dyn Tool>, Origin)>) -> ToolIndex {
    ToolIndex::from_registry(&registry_with(&["read_file"], tools))
}

#[test]
fn only_tools_that_are_not_built_in_are_indexed() {
    let index = index_of(mcp_tools(7));
    assert_eq!(index.len(), 7);
    assert!(index.tools().iter().all(|t| t.name.starts_with("mcp__")));
}

#[test]
fn an_exact_name_comes_first() {
    let index = index_of(mcp_tools(300));
    for name in [
        "mcp__github__create_issue",
        "MCP__JIRA__DELETE_USER",
        "mcp__stripe__list_file",
    ] {
        let found = index.search(name, 5).unwrap();
        assert_eq!(found[0].name, name.to_lowercase(), "{name}");
    }
    // Also as one word of a longer query, quoted by the model.
    let found = index
        .search("call `mcp__slack__get_comment` please", 3)
        .unwrap();
    assert_eq!(found[0].name, "mcp__slack__get_comment");
}

#[test]
fn keywords_rank_by_name_and_description() {
    let index = index_of(mcp_tools(300));
    let found = index.search("create github issue", 5).unwrap();
    assert_eq!(found[0].name, "mcp__github__create_issue");
    let found = index.search("delete issues in Jira", 3).unwrap();
    assert_eq!(found[0].name, "mcp__jira__delete_issue");
    // The service's display name in the description counts too.
    let found = index.search("Google Drive files list", 3).unwrap();
    assert_eq!(found[0].name, "mcp__gdrive__list_file");
}

#[test]
fn parameter_names_are_searched() {
    let index = index_of(vec![
        (
            Arc::new(FakeTool::new(
                "mcp__db__run",
                "Runs a statement against the database.",
                &[("sql_statement", "the SQL text")],
            )) as Arc<dyn Tool>,
            Origin::Mcp {
                server: "db".into(),
            },
        ),
        (
            Arc::new(FakeTool::new(
                "mcp__db__status",
                "Says whether the database is up.",
                &[],
            )),
            Origin::Mcp {
                server: "db".into(),
            },
        ),
    ]);
    let found = index.search("sql", 5).unwrap();
    assert_eq!(names(found), ["mcp__db__run"]);
    let found = index.search("statement", 5).unwrap();
    assert_eq!(found[0].name, "mcp__db__run");
    assert_eq!(found[0].parameters, ["sql_statement"]);
}

#[test]
fn camel_case_and_separators_are_split() {
    let mut words = Vec::new();
    tokenize(
        "createPullRequest HTTPServer get-file.v2 a__b Ünïcode",
        &mut words,
    );
    assert_eq!(
        words,
        [
            "create",
            "pull",
            "request",
            "http",
            "server",
            "get",
            "file",
            "v2",
            "b",
            "ünïcode"
        ]
    );
    let index = index_of(vec![(
        Arc::new(FakeTool::new(
            "createPullRequest",
            "Opens a change for review.",
            &[],
        )) as Arc<dyn Tool>,
        Origin::Declared,
    )]);
    assert_eq!(
        names(index.search("pull request", 5).unwrap()),
        ["createPullRequest"]
    );
    assert_eq!(
        names(index.search("pull requests", 5).unwrap()),
        ["createPullRequest"]
    );
}

#[test]
fn an_empty_query_is_a_clear_error() {
    let index = index_of(mcp_tools(10));
    for q in ["", "   ", "\n\t"] {
        let err = index.search(q, 5).unwrap_err();
        assert!(err.to_string().contains("query is empty"), "{err}");
    }
    let tool = ToolSearchTool::new(Arc::new(SearchState::default()));
    let err = tool.build(json!({"query": "  "})).err().unwrap();
    assert!(err.message.contains("query is empty"), "{}", err.message);
}

#[test]
fn words_that_match_nothing_give_no_results() {
    let index = index_of(mcp_tools(50));
    assert!(index.search("zebra quantum", 5).unwrap().is_empty());
    // Only stop words and punctuation.
    assert!(index.search("the of ?!", 5).unwrap().is_empty());
}

#[test]
fn unicode_and_huge_queries_do_not_panic() {
    let index = index_of(mcp_tools(300));
    let huge = "issue ".repeat(200_000);
    assert_eq!(index.search(&huge, 5).unwrap().len(), 5);
    let weird = "İstanbul ǅ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \u{0}\u{200b}é\u{301} 🦀🦀 ﷽ ".repeat(500);
    assert!(index.search(&weird, 20).is_ok());
    assert!(index.search("\u{10FFFF}", 0).unwrap().is_empty());
}

proptest! {
    #[test]
    fn random_queries_never_panic_and_respect_max_results(
        query in "\\PC{0,300}",
        words in proptest::collection::vec("[a-zA-Z_]{1,12}", 0..6),
        max in 0usize..30,
    ) {
        let index = PROP_INDEX.with(|i| i.clone());
        for q in [query.clone(), words.join(" "), format!("{query} {}", words.join("_"))] {
            match index.search(&q, max) {
                Ok(found) => prop_assert!(found.len() <= max),
                Err(QueryError::Empty) => prop_assert!(q.trim().is_empty()),
            }
        }
    }
}

thread_local! {
    static PROP_INDEX: Arc<ToolIndex> = Arc::new(index_of(mcp_tools(300)));
}

// --- the declaration plan ---

fn settings(
    enabled: Option<bool>,
    max_tools: Option<u32>,
    bytes: Option<u64>,
) -> ToolSearchSettings {
    ToolSearchSettings {
        enabled,
        max_tools,
        max_schema_bytes: bytes,
    }
}

/// A registry of three built-ins, `n` MCP tools and `tool_search`.
fn searchable(n: usize) -> ToolRegistry {
    let mut registry = registry_with(&["read_file", "edit", "glob"], mcp_tools(n));
    registry.register(
        Arc::new(ToolSearchTool::new(Arc::new(SearchState::default()))),
        Origin::BuiltIn,
    );
    registry
}

fn declared(plan: &DeclarationPlan) -> Vec<&str> {
    plan.declarations.iter().map(|d| d.name.as_str()).collect()
}

#[test]
fn few_tools_are_all_declared_without_tool_search() {
    let registry = searchable(20);
    let plan = plan_declarations(
        &registry,
        &settings(None, None, None),
        Some(TOOL_SEARCH_NAME),
        &[],
        &[],
    );
    assert!(!plan.deferring);
    assert_eq!(plan.declarations.len(), 23);
    assert!(!declared(&plan).contains(&TOOL_SEARCH_NAME));
}

#[test]
fn the_tool_count_budget_defers() {
    let registry = searchable(58);
    let s = settings(None, None, Some(u64::MAX));
    // 61 tools > 60.
    let plan = plan_declarations(&registry, &s, Some(TOOL_SEARCH_NAME), &[], &[]);
    assert!(plan.deferring);
    assert_eq!(
        declared(&plan),
        ["read_file", "edit", "glob", "tool_search"]
    );
    assert_eq!(plan.deferred, 58);
    // 60 tools: not over.
    let registry = searchable(57);
    let plan = plan_declarations(&registry, &s, Some(TOOL_SEARCH_NAME), &[], &[]);
    assert!(!plan.deferring);
    let plan = plan_declarations(
        &registry,
        &settings(None, Some(10), Some(u64::MAX)),
        Some(TOOL_SEARCH_NAME),
        &[],
        &[],
    );
    assert!(plan.deferring);
}

#[test]
fn the_byte_budget_defers() {
    let registry = searchable(10);
    let bytes: u64 = registry
        .all()
        .filter(|r| r.name != TOOL_SEARCH_NAME)
        .map(declaration_bytes)
        .sum();
    let under = settings(None, None, Some(bytes));
    assert!(!plan_declarations(&registry, &under, Some(TOOL_SEARCH_NAME), &[], &[]).deferring);
    let over = settings(None, None, Some(bytes - 1));
    assert!(plan_declarations(&registry, &over, Some(TOOL_SEARCH_NAME), &[], &[]).deferring);
    // The default budget (40 KiB) is passed by 300 tools of about 400 bytes.
    assert!(needs_deferral(
        &searchable(300),
        &settings(None, Some(1000), None),
        Some(TOOL_SEARCH_NAME)
    ));
}

#[test]
fn enabled_forces_or_forbids_deferral() {
    let small = searchable(2);
    let plan = plan_declarations(
        &small,
        &settings(Some(true), None, None),
        Some(TOOL_SEARCH_NAME),
        &[],
        &[],
    );
    assert_eq!(
        declared(&plan),
        ["read_file", "edit", "glob", "tool_search"]
    );
    // Nothing to defer: built-ins only.
    let builtins = registry_with(&["read_file"], Vec::new());
    assert!(!needs_deferral(
        &builtins,
        &settings(Some(true), None, None),
        None
    ));
    let large = searchable(100);
    let plan = plan_declarations(
        &large,
        &settings(Some(false), None, None),
        Some(TOOL_SEARCH_NAME),
        &[],
        &[],
    );
    assert!(!plan.deferring);
    assert_eq!(plan.declarations.len(), 103);
    // Without tool_search registered nothing can be deferred.
    let plan = plan_declarations(&large, &settings(Some(true), None, None), None, &[], &[]);
    assert!(!plan.deferring);
}

#[test]
fn loaded_and_forced_tools_are_declared() {
    let registry = searchable(100);
    let s = settings(None, None, None);
    let loaded = vec!["mcp__github__create_issue".to_string(), "nope".to_string()];
    let forced = vec!["mcp__slack__list_user".to_string(), "read_file".to_string()];
    let plan = plan_declarations(&registry, &s, Some(TOOL_SEARCH_NAME), &loaded, &forced);
    assert_eq!(
        declared(&plan),
        [
            "read_file",
            "edit",
            "glob",
            "mcp__github__create_issue",
            "mcp__slack__list_user",
            "tool_search"
        ]
    );
    assert_eq!(plan.deferred, 98);
}

#[test]
fn a_request_never_carries_more_than_128_tools() {
    let registry = searchable(300);
    let all: Vec<String> = registry
        .all()
        .filter(|r| is_deferrable(r))
        .map(|r| r.name.clone())
        .collect();
    assert_eq!(all.len(), 300);
    let forced = vec![all[0].clone()];
    let plan = plan_declarations(
        &registry,
        &settings(None, None, None),
        Some(TOOL_SEARCH_NAME),
        &all,
        &forced,
    );
    assert_eq!(plan.declarations.len(), MAX_TOOLS_PER_REQUEST);
    let names = declared(&plan);
    assert!(names.contains(&TOOL_SEARCH_NAME));
    assert!(names.contains(&all[0].as_str()), "forced stays");
    // The most recently loaded stay; the oldest go (3 core + tool_search + forced).
    assert!(names.contains(&all[299].as_str()));
    assert!(!names.contains(&all[1].as_str()));
    assert_eq!(plan.loaded_cut.len(), 300 - 124);
    assert_eq!(plan.deferred, 300 - 124);
    // Never deferring with 300 tools: cut to 128, with a warning's worth of names.
    let plan = plan_declarations(
        &registry,
        &settings(Some(false), None, None),
        Some(TOOL_SEARCH_NAME),
        &[],
        &[],
    );
    assert_eq!(plan.declarations.len(), MAX_TOOLS_PER_REQUEST);
    assert_eq!(plan.core_cut.len(), 303 - 128);
    assert!(
        declared(&plan).contains(&"glob"),
        "built-ins are kept first"
    );
}

#[test]
fn core_tools_over_the_cap_are_cut_but_tool_search_stays() {
    let names: Vec<String> = (0..140).map(|i| format!("builtin_{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut registry = registry_with(&refs, mcp_tools(5));
    registry.register(
        Arc::new(ToolSearchTool::new(Arc::new(SearchState::default()))),
        Origin::BuiltIn,
    );
    let plan = plan_declarations(
        &registry,
        &settings(None, None, None),
        Some(TOOL_SEARCH_NAME),
        &[],
        &[],
    );
    assert!(plan.deferring);
    assert_eq!(plan.declarations.len(), 128);
    assert!(declared(&plan).contains(&TOOL_SEARCH_NAME));
    assert_eq!(plan.core_cut.len(), 13);
}

// --- the agent side and the tool ---

#[test]
fn tool_search_is_registered_once_deferral_is_needed() {
    let search = ToolSearch::new(settings(None, None, None));
    let small = Arc::new(searchable_without_search(5));
    let (replaced, plan) = search.declarations(&small, &[]);
    assert!(replaced.is_none());
    assert_eq!(plan.declarations.len(), 8);
    let large = Arc::new(searchable_without_search(100));
    let (replaced, plan) = search.declarations(&large, &[]);
    let replaced = replaced.unwrap();
    assert!(replaced.get(TOOL_SEARCH_NAME).is_some());
    assert_eq!(
        declared(&plan),
        ["read_file", "edit", "glob", "tool_search"]
    );
    assert_eq!(search.state().index().len(), 100);
    // The same registry again: nothing to register, same plan.
    let (again, plan2) = search.declarations(&replaced, &[]);
    assert!(again.is_none());
    assert_eq!(plan, plan2);
}

fn searchable_without_search(n: usize) -> ToolRegistry {
    registry_with(&["read_file", "edit", "glob"], mcp_tools(n))
}

#[test]
fn the_declaration_of_tool_search_lints_clean() {
    let tool = ToolSearchTool::new(Arc::new(SearchState::default()));
    let findings = lint_declaration(
        tool.name(),
        tool.description(),
        tool.parameter_schema(),
        false,
    );
    assert_eq!(findings, []);
    assert_eq!(tool.kind(), Kind::Search);
    assert!(!tool.needs_confirmation());
}

fn exec_context() -> (tempfile::TempDir, ExecContext) {
    let dir = tempfile::tempdir().unwrap();
    let env = toolbelt_core::ToolEnvironment::new(
        WorkspaceRoots::new([dir.path()]).unwrap(),
        Arc::new(Settings::default()),
        dir.path().join("s"),
    );
    (dir, ExecContext::new(Arc::new(env)))
}

#[tokio::test]
async fn found_tools_are_listed_and_loaded() {
    let state = Arc::new(SearchState::default());
    state.set_index(index_of(mcp_tools(300)));
    let tool = ToolSearchTool::new(state.clone());
    let (_dir, ctx) = exec_context();
    let call = tool
        .build(json!({"query": "create github issue", "max_results": 2}))
        .unwrap();
    let text = call.execute(ctx.clone()).await.llm_text();
    assert!(
        text.starts_with(
            "Found 2 tools for \"create github issue\". They can be called from now on"
        ),
        "{text}"
    );
    assert!(
        text.contains("- mcp__github__create_issue: Creates a new issue in GitHub. Use it to create issues of the connected GitHub account; it needs the GitHub token of the server. Parameters: title, body, labels, assignee, workspace."),
        "{text}"
    );
    assert_eq!(text.lines().count(), 3);
    assert_eq!(state.loaded()[0], "mcp__github__create_issue");
    assert_eq!(state.loaded().len(), 2);

    let call = tool.build(json!({"query": "zebra"})).unwrap();
    let text = call.execute(ctx).await.llm_text();
    assert!(
        text.starts_with("No tool matched \"zebra\". Try other words"),
        "{text}"
    );
    assert!(
        text.contains("come from: datadog (25), figma (25)"),
        "{text}"
    );
    assert_eq!(state.loaded().len(), 2);
}
