use serde_json::json;

use super::*;
use toolbelt_core::ConfirmationDetails;
use toolbelt_core::ToolResult;
use toolbelt_core::{BoxFuture, ExecContext, Kind};

struct Fake {
    name: String,
    aliases: &'static [&'static str],
    schema: Value,
}

struct FakeCall(Value);

impl Invocation for FakeCall {
    fn describe(&self) -> String {
        format!("fake {}", self.0)
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }
    fn execute(self: Box<Self>, _ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move { ToolResult::text(self.0.to_string()) })
    }
}

impl Tool for Fake {
    fn name(&self) -> &str {
        &self.name
    }
    fn display_name(&self) -> &str {
        "Fake"
    }
    fn description(&self) -> &str {
        "A fake tool."
    }
    fn kind(&self) -> Kind {
        Kind::Read
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn aliases(&self) -> &[&'static str] {
        self.aliases
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        if args.get("n").and_then(Value::as_i64) == Some(13) {
            return Err(ToolError::invalid_params("n must not be 13"));
        }
        Ok(Box::new(FakeCall(args)))
    }
}

fn fake(name: &str) -> Arc<dyn Tool> {
    fake_with_aliases(name, &[])
}

fn fake_with_aliases(name: &str, aliases: &'static [&'static str]) -> Arc<dyn Tool> {
    Arc::new(Fake {
        name: name.to_string(),
        aliases,
        schema: json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
    })
}

fn names(r: &ToolRegistry) -> Vec<&str> {
    r.all().map(|e| e.name.as_str()).collect()
}

#[test]
fn register_get_all_and_declarations() {
    let mut r = ToolRegistry::new();
    r.register(fake("read_file"), Origin::BuiltIn);
    r.register(fake("glob"), Origin::BuiltIn);
    assert_eq!(names(&r), ["read_file", "glob"]);
    assert!(r.get("glob").is_some());
    assert!(r.get("nope").is_none());
    let decls = r.function_declarations();
    assert_eq!(decls[0].name, "read_file");
    assert_eq!(decls[0].parameters["type"], "object");
}

#[test]
fn aliases_resolve_to_the_current_name() {
    let mut r = ToolRegistry::new();
    r.register(fake_with_aliases("edit", &["replace"]), Origin::BuiltIn);
    r.register(
        fake_with_aliases("grep_search", &["search_file_content", "grep"]),
        Origin::BuiltIn,
    );
    assert_eq!(r.get("replace").unwrap().name, "edit");
    assert_eq!(r.get("search_file_content").unwrap().name, "grep_search");
    assert_eq!(r.get("grep").unwrap().name, "grep_search");
    assert_eq!(
        names(&r),
        ["edit", "grep_search"],
        "aliases are not listed as tools"
    );
}

#[test]
fn collisions_never_drop_a_tool() {
    let mut r = ToolRegistry::new();
    r.register(fake("read_file"), Origin::BuiltIn);
    let d = r.register(fake("read_file"), Origin::Discovered);
    let d2 = r.register(fake("read_file"), Origin::Discovered);
    let m = r.register(fake("mcp__s__t"), Origin::Mcp { server: "s".into() });
    let m2 = r.register(fake("mcp__s__t"), Origin::Mcp { server: "s".into() });
    assert_eq!(d, "discovered__read_file");
    assert_eq!(d2, "discovered__read_file_2");
    assert_eq!(m, "mcp__s__t");
    assert_eq!(m2, "mcp__s__t_2");
    assert_eq!(r.len(), 5);
    assert_eq!(r.get("read_file").unwrap().origin, Origin::BuiltIn);
    assert_eq!(r.warnings().len(), 3);
    assert!(
        r.warnings()[0].contains("discovered__read_file"),
        "{:?}",
        r.warnings()
    );
}

#[test]
fn a_discovered_tool_named_like_an_alias_is_renamed() {
    let mut r = ToolRegistry::new();
    r.register(fake_with_aliases("edit", &["replace"]), Origin::BuiltIn);
    assert_eq!(
        r.register(fake("replace"), Origin::Discovered),
        "discovered__replace"
    );
}

#[test]
fn unknown_name_suggests_the_three_closest() {
    let mut r = ToolRegistry::new();
    for n in ["read_file", "write_file", "read_many_files", "glob", "edit"] {
        r.register(fake(n), Origin::BuiltIn);
    }
    let e = r.build("read_fil", json!({})).unwrap_err();
    assert_eq!(e.kind, ErrorKind::ToolNotRegistered);
    assert!(
        e.message.contains("Did you mean one of: \"read_file\""),
        "{}",
        e.message
    );
    assert_eq!(
        r.closest("read_fil", 3),
        ["read_file", "read_many_files", "write_file"]
    );
}

#[test]
fn build_validates_schema_then_tool_checks() {
    let mut r = ToolRegistry::new();
    r.register(fake("t"), Origin::BuiltIn);
    let e = r.build("t", json!({"n": "x"})).unwrap_err();
    assert!(
        e.message.contains("n: \"x\" is not of type \"integer\""),
        "{}",
        e.message
    );
    let e = r.build("t", json!({"n": 13})).unwrap_err();
    assert_eq!(e.message, "n must not be 13");
    let (reg, call) = r.build("t", json!({"n": "4"})).unwrap();
    assert_eq!(reg.name, "t");
    assert_eq!(call.describe(), "fake {\"n\":4}");
}

#[test]
fn settings_core_allow_list_keeps_only_named_builtins() {
    let mut r = ToolRegistry::new();
    r.register(fake_with_aliases("edit", &["replace"]), Origin::BuiltIn);
    r.register(fake("read_file"), Origin::BuiltIn);
    r.register(fake("run_shell_command"), Origin::BuiltIn);
    r.register(fake("mcp__s__t"), Origin::Mcp { server: "s".into() });
    let s = Settings::from_value(json!({"tools": {"core": ["replace", "run_shell_command(git)"]}}))
        .unwrap();
    r.apply_settings(&s);
    assert_eq!(names(&r), ["edit", "run_shell_command", "mcp__s__t"]);
    let e = r.build("read_file", json!({})).unwrap_err();
    assert_eq!(e.kind, ErrorKind::ExecutionDenied);
    assert!(e.message.contains("tools.core"), "{}", e.message);
}

#[test]
fn settings_exclude_and_deny_remove_whole_tools_only() {
    let mut r = ToolRegistry::new();
    for n in ["read_file", "glob", "run_shell_command", "edit"] {
        r.register(fake(n), Origin::BuiltIn);
    }
    let s = Settings::from_value(json!({
        "tools": {"exclude": ["read_file", "run_shell_command(rm *)"]},
        "permissions": {"deny": ["glob"]}
    }))
    .unwrap();
    r.apply_settings(&s);
    assert_eq!(names(&r), ["run_shell_command", "edit"]);
    assert!(
        r.build("read_file", json!({}))
            .unwrap_err()
            .message
            .contains("tools.exclude")
    );
    assert!(
        r.build("glob", json!({}))
            .unwrap_err()
            .message
            .contains("permissions.deny")
    );
}

#[test]
fn names_are_sanitized_and_clamped_with_a_stable_hash() {
    assert_eq!(
        sanitize_tool_name("mcp__my server__do/it"),
        "mcp__my_server__do_it"
    );
    let long_a = format!("mcp__server__{}", "a".repeat(80));
    let long_b = format!("mcp__server__{}b", "a".repeat(80));
    let (a, b) = (sanitize_tool_name(&long_a), sanitize_tool_name(&long_b));
    assert_eq!(a.len(), 64);
    assert_eq!(b.len(), 64);
    assert_ne!(a, b);
    assert_eq!(a, sanitize_tool_name(&long_a), "stable");
    assert_eq!(sanitize_tool_name(&"x".repeat(64)), "x".repeat(64));
    assert_eq!(sanitize_tool_name("ünï"), "_n_");
    assert_eq!(
        sanitize_tool_name("mcp__docs__search.v2"),
        "mcp__docs__search_v2"
    );
}

#[test]
fn remove_origin_drops_one_server() {
    let mut r = ToolRegistry::new();
    r.register(fake("mcp__a__t"), Origin::Mcp { server: "a".into() });
    r.register(fake("mcp__b__t"), Origin::Mcp { server: "b".into() });
    r.remove_origin(&Origin::Mcp { server: "a".into() });
    assert_eq!(names(&r), ["mcp__b__t"]);
    assert!(r.get("mcp__b__t").is_some());
}

/// A tool with a when clause and a reference name, as a declared tool has.
struct Conditional {
    inner: Fake,
    when: toolbelt_config::when::Expr,
    reference: &'static str,
}

impl Tool for Conditional {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn display_name(&self) -> &str {
        "Conditional"
    }
    fn description(&self) -> &str {
        "A tool with a when clause."
    }
    fn kind(&self) -> Kind {
        Kind::Read
    }
    fn parameter_schema(&self) -> &Value {
        self.inner.parameter_schema()
    }
    fn when_clause(&self) -> Option<&toolbelt_config::when::Expr> {
        Some(&self.when)
    }
    fn reference_name(&self) -> Option<&str> {
        Some(self.reference)
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        self.inner.build(args)
    }
}

fn conditional(name: &str, when: &str, reference: &'static str) -> Arc<dyn Tool> {
    Arc::new(Conditional {
        inner: Fake {
            name: name.into(),
            aliases: &[],
            schema: json!({"type": "object"}),
        },
        when: toolbelt_config::when::parse(when).unwrap(),
        reference,
    })
}

#[test]
fn a_false_when_clause_hides_the_tool_until_it_holds_or_is_referenced() {
    let mut registry = ToolRegistry::new();
    registry.register(fake("always"), Origin::BuiltIn);
    registry.register(
        conditional("debug_tool", "debugState == running", "dbg"),
        Origin::Declared,
    );
    let declared = |r: &ToolRegistry| -> Vec<String> {
        r.function_declarations()
            .into_iter()
            .map(|d| d.name)
            .collect()
    };
    registry.apply_when(&json!({"debugState": "stopped"}));
    assert_eq!(declared(&registry), ["always"]);
    let refusal = registry.disabled("debug_tool").unwrap();
    assert_eq!(refusal.kind, ErrorKind::ExecutionDenied);
    assert!(
        refusal.message.contains("debugState == 'running'"),
        "{}",
        refusal.message
    );
    assert!(registry.disabled("always").is_none());

    registry.apply_when(&json!({"debugState": "running"}));
    assert_eq!(declared(&registry), ["always", "debug_tool"]);
    assert!(registry.disabled("debug_tool").is_none());

    registry.apply_when(&json!({}));
    assert!(registry.is_disabled("debug_tool"));
    assert_eq!(registry.resolve_reference("dbg"), ["debug_tool"]);
    registry.enable("debug_tool");
    assert_eq!(declared(&registry), ["always", "debug_tool"]);
}

#[test]
fn tool_sets_keep_registered_members_and_resolve_as_references() {
    let mut registry = ToolRegistry::new();
    registry.register(fake("a"), Origin::Declared);
    registry.register(fake("b"), Origin::Declared);
    registry.add_tool_set(ToolSet {
        name: "pair".into(),
        description: "Both.".into(),
        tools: vec!["a".into(), "b".into(), "ghost".into()],
    });
    registry.add_tool_set(ToolSet {
        name: "nothing".into(),
        description: "None registered.".into(),
        tools: vec!["ghost".into()],
    });
    assert_eq!(registry.tool_sets().len(), 1);
    assert_eq!(registry.resolve_reference("pair"), ["a", "b"]);
    assert!(registry.resolve_reference("unknown").is_empty());
    assert!(registry.warnings().iter().any(|w| w.contains("'nothing'")));
    registry.retain(|r| r.name != "a", "gone");
    assert_eq!(registry.resolve_reference("pair"), ["b"]);
    registry.remove_origin(&Origin::Declared);
    assert!(registry.tool_sets().is_empty());
}

/// The built-in tools' schemas are compiled on a thread of their own, ahead of the first
/// call, and shared with copies of the registry; other tools' are not touched.
#[test]
fn built_in_schemas_compile_in_the_background_and_others_wait_for_a_call() {
    let mut r = ToolRegistry::new();
    r.register(fake("read_file"), Origin::BuiltIn);
    r.register(fake("glob"), Origin::BuiltIn);
    r.register(fake("from_a_manifest"), Origin::Declared);
    let copy = r.clone();
    r.compile_builtin_schemas_in_background();
    let compiled = |name: &str| {
        copy.get(name)
            .unwrap()
            .validator
            .get()
            .is_some_and(|v| v.compiled().is_ok())
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !(compiled("read_file") && compiled("glob")) {
        assert!(std::time::Instant::now() < deadline, "not compiled");
        std::thread::yield_now();
    }
    assert!(
        copy.get("from_a_manifest")
            .unwrap()
            .validator
            .get()
            .is_none()
    );
    // A call still checks its arguments against the compiled schema.
    let err = copy
        .get("glob")
        .unwrap()
        .build(json!({"n": "x"}))
        .err()
        .unwrap();
    assert!(err.message.contains("n"), "{err:?}");
}
