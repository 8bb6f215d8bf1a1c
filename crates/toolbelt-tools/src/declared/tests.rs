//! Loading and checking manifests: real files in a temporary workspace.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolbelt_config::settings::Settings;
use toolbelt_core::Kind;
use toolbelt_engine::registry::ToolRegistry;

use super::*;
use crate::test_support::{Fixture, fixture_with};

pub(super) fn setup(settings: Settings) -> Fixture {
    fixture_with(25_000, 1_000, settings)
}

pub(super) fn home(f: &Fixture) -> PathBuf {
    f.dir.path().join("home")
}

/// Writes `value` as JSON at `path`, creating folders.
pub(super) fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

pub(super) fn load(f: &Fixture) -> LoadedManifests {
    load_with_home(&f.env, Some(&home(f)))
}

pub(super) fn builtins(f: &Fixture) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    crate::register_builtins(&mut registry, &f.env);
    registry
}

fn tool(name: &str) -> Value {
    json!({"name": name, "displayName": format!("Tool {name}"), "modelDescription": "Does things."})
}

fn with(mut entry: Value, key: &str, value: Value) -> Value {
    entry[key] = value;
    entry
}

fn command_binding() -> Value {
    json!({"command": ["true"]})
}

/// One warning that contains every one of `parts`.
fn assert_warned(warnings: &[String], parts: &[&str]) {
    assert!(
        warnings.iter().any(|w| parts.iter().all(|p| w.contains(p))),
        "no warning contains all of {parts:?}; warnings:\n{}",
        warnings.join("\n")
    );
}

#[test]
fn each_load_time_rule_skips_its_entry_names_file_entry_and_rule_and_the_rest_load() {
    let f = setup(Settings::default());
    let file = f.ws().join(".qwen/tools/rules.json");
    // (entry, what the warning says; None: the entry loads)
    let table: Vec<(Value, Option<&str>)> = vec![
        (tool("good"), None),
        (
            json!({"name": "no_display", "modelDescription": "d"}),
            Some("cannot register a tool without name, modelDescription, and displayName"),
        ),
        (
            json!({"displayName": "x", "modelDescription": "d"}),
            Some("cannot register a tool without name"),
        ),
        (tool("bad name"), Some("invalid id")),
        (
            tool("copilot_thing"),
            Some("prefix \"copilot_\" is reserved"),
        ),
        (tool("vscode_thing"), Some("prefix \"vscode_\" is reserved")),
        (
            with(tool("bad_ref"), "toolReferenceName", json!("has space")),
            Some("toolReferenceName must match"),
        ),
        (
            with(tool("no_ref"), "canBeReferencedInPrompt", json!(true)),
            Some("toolReferenceName is required when canBeReferencedInPrompt is true"),
        ),
        (
            with(
                tool("legacy"),
                "legacyToolReferenceFullNames",
                json!(["a/b"]),
            ),
            Some("legacyToolReferenceFullNames needs VS Code's proposed API"),
        ),
        (
            with(tool("extra"), "command", json!(["x"])),
            Some("unknown property \"command\""),
        ),
        (
            with(tool("schema_array"), "inputSchema", json!([1])),
            Some("inputSchema must be an object at the top level"),
        ),
        (
            with(
                tool("schema_string_type"),
                "inputSchema",
                json!({"type": "string"}),
            ),
            Some("inputSchema must be an object at the top level"),
        ),
        (
            with(
                tool("schema_keyword"),
                "inputSchema",
                json!({"type": "object", "x-extra": 1}),
            ),
            Some("\"x-extra\" is not one of the draft-07 keywords"),
        ),
        (
            with(
                tool("schema_type"),
                "inputSchema",
                json!({"type": "object", "properties": {"f": {"type": "file"}}}),
            ),
            Some("inputSchema.properties.f: \"type\" must be one of"),
        ),
        (
            with(
                tool("schema_meta"),
                "inputSchema",
                json!({"type": "object", "properties": {"p": {"type": "string", "minLength": -1}}}),
            ),
            Some("inputSchema.properties.p.minLength: "),
        ),
    ];
    let entries: Vec<Value> = table.iter().map(|(e, _)| e.clone()).collect();
    let mut bindings = serde_json::Map::new();
    for entry in &entries {
        if let Some(name) = entry["name"].as_str() {
            bindings.insert(name.to_string(), command_binding());
        }
    }
    write_json(
        &file,
        &json!({"languageModelTools": entries, "bindings": bindings}),
    );
    let loaded = load(&f);
    assert_eq!(loaded.tool_names(), vec!["good"]);
    let file_text = file.display().to_string();
    for (i, (entry, rule)) in table.iter().enumerate() {
        let Some(rule) = rule else { continue };
        let label = match entry["name"].as_str() {
            Some(name) => format!("'{name}' (languageModelTools[{i}])"),
            None => format!("languageModelTools[{i}]"),
        };
        assert_warned(&loaded.warnings, &[&file_text, &label, rule, "skipped"]);
    }
}

#[test]
fn reserved_tags_warn_but_load_and_bad_when_clauses_load_without_a_condition() {
    let f = setup(Settings::default());
    let file = f.ws().join(".qwen/tools/soft.json");
    write_json(
        &file,
        &json!({
            "languageModelTools": [
                with(tool("tagged"), "tags", json!(["fine", "copilot_x"])),
                with(tool("bad_when"), "when", json!("a && && b")),
                with(tool("empty_when"), "when", json!("")),
                with(tool("good_when"), "when", json!("myKey && config.x == 1")),
            ],
            "bindings": {
                "tagged": command_binding(), "bad_when": command_binding(),
                "empty_when": command_binding(), "good_when": command_binding()
            }
        }),
    );
    let loaded = load(&f);
    assert_eq!(
        loaded.tool_names(),
        vec!["tagged", "bad_when", "empty_when", "good_when"]
    );
    assert_warned(
        &loaded.warnings,
        &[
            &file.display().to_string(),
            "'tagged'",
            "reserved prefix \"copilot_\"",
            "still loads",
        ],
    );
    assert_warned(
        &loaded.warnings,
        &[
            "'bad_when'",
            "when clause does not parse",
            "at offset 5",
            "no condition",
        ],
    );
    let mut registry = builtins(&f);
    register_declared(&mut registry, loaded);
    let clause = |name: &str| {
        registry
            .get(name)
            .unwrap()
            .tool
            .when_clause()
            .map(|c| c.serialize())
    };
    assert_eq!(clause("bad_when"), None);
    assert_eq!(clause("empty_when"), None);
    assert_eq!(
        clause("good_when").as_deref(),
        Some("myKey && config.x == '1'")
    );
}

#[test]
fn a_missing_input_schema_is_an_empty_object_schema() {
    let f = setup(Settings::default());
    write_json(
        &f.ws().join(".qwen/tools/a.json"),
        &json!({"languageModelTools": [tool("plain")], "bindings": {"plain": command_binding()}}),
    );
    let mut registry = builtins(&f);
    let warnings = register_declared(&mut registry, load(&f));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        registry.get("plain").unwrap().tool.parameter_schema(),
        &json!({"type": "object", "properties": {}})
    );
}

#[test]
fn binding_problems_skip_the_tool_with_a_warning() {
    let f = setup(Settings::default());
    let file = f.ws().join(".qwen/tools/bindings.json");
    let names = [
        "unbound",
        "none",
        "two",
        "empty_argv",
        "not_argv",
        "bad_kind",
        "mcp_shape",
        "mcp_gone",
        "builtin_gone",
        "args_on_command",
        "unknown_key",
        "ok",
    ];
    write_json(
        &file,
        &json!({
            "languageModelTools": names.iter().map(|n| tool(n)).collect::<Vec<_>>(),
            "bindings": {
                "none": {"kind": "read"},
                "two": {"command": ["true"], "builtin": "read_file"},
                "empty_argv": {"command": []},
                "not_argv": {"command": "echo hi"},
                "bad_kind": {"command": ["true"], "kind": "dangerous"},
                "mcp_shape": {"mcp": "no-slash"},
                "mcp_gone": {"mcp": "srv/tool"},
                "builtin_gone": {"builtin": "no_such_tool"},
                "args_on_command": {"command": ["true"], "arguments": {}},
                "unknown_key": {"command": ["true"], "shell": true},
                "ok": {"command": ["true"]},
                "stray": {"command": ["true"]}
            }
        }),
    );
    let loaded = load(&f);
    let file_text = file.display().to_string();
    let expect = [
        (
            "'unbound'",
            "no binding: add one to \"bindings\" in this file",
        ),
        (
            "'none'",
            "exactly one of \"command\", \"mcp\" or \"builtin\" (found none)",
        ),
        ("'two'", "(found command, builtin)"),
        ("'empty_argv'", "non-empty array of strings"),
        ("'not_argv'", "non-empty array of strings"),
        ("'bad_kind'", "unknown kind \"dangerous\""),
        ("'mcp_shape'", "\"mcp\" must be \"server/tool\""),
        (
            "'args_on_command'",
            "\"arguments\" belongs to a \"builtin\" binding",
        ),
        ("'unknown_key'", "unknown property \"shell\""),
    ];
    for (entry, rule) in expect {
        assert_warned(&loaded.warnings, &[&file_text, entry, rule, "skipped"]);
    }
    assert_warned(
        &loaded.warnings,
        &[&file_text, "binding \"stray\"", "no tool of that name"],
    );
    let mut registry = builtins(&f);
    let warnings = register_declared(&mut registry, loaded);
    assert_warned(
        &warnings,
        &[
            &file_text,
            "'mcp_gone'",
            "MCP tool \"srv/tool\", which is not registered",
        ],
    );
    assert_warned(
        &warnings,
        &[
            &file_text,
            "'builtin_gone'",
            "built-in tool \"no_such_tool\", which is not registered",
        ],
    );
    assert!(registry.get("ok").is_some());
    for gone in ["mcp_gone", "builtin_gone", "unbound", "two"] {
        assert!(registry.get(gone).is_none(), "{gone} registered");
    }
}

#[test]
fn duplicate_names_across_manifests_keep_the_first_and_name_both_files() {
    let f = setup(Settings::default());
    let first = f.ws().join(".qwen/tools/a.json");
    let second = home(&f).join(".qwen/tools/b.json");
    for path in [&first, &second] {
        write_json(
            path,
            &json!({"languageModelTools": [tool("same")], "bindings": {"same": command_binding()}}),
        );
    }
    let loaded = load(&f);
    assert_eq!(loaded.tool_count(), 1);
    assert_warned(
        &loaded.warnings,
        &[
            &second.display().to_string(),
            "'same'",
            "already declared in",
            &first.display().to_string(),
        ],
    );
}

#[test]
fn unreadable_or_invalid_files_warn_missing_folders_are_silent_and_files_load_sorted() {
    let f = setup(Settings::default());
    let dir = f.ws().join(".qwen/tools");
    write_json(
        &dir.join("b.json"),
        &json!({"languageModelTools": [tool("from_b")], "bindings": {"from_b": command_binding()}}),
    );
    write_json(
        &dir.join("a.json"),
        &json!({"languageModelTools": [tool("from_a")], "bindings": {"from_a": command_binding()}}),
    );
    std::fs::write(dir.join("c.json"), "{ not json").unwrap();
    std::fs::write(dir.join("notes.txt"), "ignored").unwrap();
    let loaded = load(&f);
    assert_eq!(loaded.tool_names(), vec!["from_a", "from_b"]);
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert_warned(&loaded.warnings, &["c.json", "not valid JSON"]);

    let empty = setup(Settings::default());
    let loaded = load(&empty);
    assert_eq!(loaded.tool_count(), 0);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn tool_sets_resolve_by_reference_name_nest_without_looping_and_warn_on_unknown_members() {
    let f = setup(Settings::default());
    let file = f.ws().join(".qwen/tools/sets.json");
    write_json(
        &file,
        &json!({
            "languageModelTools": [
                with(tool("alpha"), "toolReferenceName", json!("a")),
                tool("beta"),
            ],
            "languageModelToolSets": [
                {"name": "first", "description": "d", "tools": ["a", "second", "ghost"]},
                {"name": "second", "description": "d", "tools": ["beta", "first"]},
                {"name": "old", "referenceName": "renamed", "description": "d", "tools": ["beta"]},
                {"name": "nobody", "description": "d", "tools": ["ghost"]},
                {"name": "no_description", "tools": ["beta"]},
                {"name": "empty", "description": "d", "tools": []},
                {"name": "bad name", "description": "d", "tools": ["beta"]},
                {"name": "extra", "description": "d", "tools": ["beta"], "when": "x"}
            ],
            "bindings": {"alpha": command_binding(), "beta": command_binding()}
        }),
    );
    let loaded = load(&f);
    let file_text = file.display().to_string();
    assert_eq!(loaded.tool_set_names(), vec!["first", "second", "renamed"]);
    assert_warned(
        &loaded.warnings,
        &[&file_text, "'first'", "unknown tool or tool set 'ghost'"],
    );
    assert_warned(
        &loaded.warnings,
        &[&file_text, "'nobody'", "none of its tools", "skipped"],
    );
    assert_warned(
        &loaded.warnings,
        &[
            &file_text,
            "'no_description'",
            "needs name, description and tools",
        ],
    );
    assert_warned(&loaded.warnings, &[&file_text, "'empty'", "minItems 1"]);
    assert_warned(&loaded.warnings, &[&file_text, "'bad name'", "must match"]);
    assert_warned(
        &loaded.warnings,
        &[&file_text, "'extra'", "unknown property \"when\""],
    );

    let mut registry = builtins(&f);
    register_declared(&mut registry, loaded);
    let set = |name: &str| {
        registry
            .tool_sets()
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.tools.clone())
    };
    assert_eq!(set("first").unwrap(), vec!["alpha", "beta"]);
    assert_eq!(set("second").unwrap(), vec!["beta", "alpha"]);
    assert_eq!(set("renamed").unwrap(), vec!["beta"]);
    assert_eq!(registry.resolve_reference("renamed"), vec!["beta"]);
}

#[test]
fn a_vscode_extension_package_json_loads_unchanged_with_toolbelt_json_beside_it() {
    let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vscode-sample");
    let mut settings = Settings::default();
    settings.tools.manifests = vec![sample.display().to_string()];
    let f = setup(settings);
    let loaded = load(&f);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(
        loaded.tool_names(),
        vec![
            "sample_tabCount",
            "sample_findFiles",
            "sample_runInTerminal",
            "sample_readme"
        ]
    );
    let mut registry = builtins(&f);
    let warnings = register_declared(&mut registry, loaded);
    assert!(warnings.is_empty(), "{warnings:?}");
    let tab = registry.get("sample_tabCount").unwrap();
    assert_eq!(tab.origin, Origin::Declared);
    assert_eq!(tab.tool.display_name(), "Tab Count");
    assert_eq!(
        tab.tool.description(),
        "The number of active tabs in a tab group"
    );
    assert_eq!(tab.tool.reference_name(), Some("countTabs"));
    assert_eq!(tab.tool.kind(), Kind::Read);
    assert_eq!(
        tab.tool.when_clause().map(|c| c.serialize()).as_deref(),
        Some("debugState == 'running'")
    );
    let find = registry.get("sample_findFiles").unwrap();
    assert_eq!(find.tool.kind(), registry.get("glob").unwrap().tool.kind());
    let terminal = registry.get("sample_runInTerminal").unwrap();
    assert_eq!(terminal.tool.reference_name(), None);
    assert!(terminal.tool.needs_confirmation());
    assert_eq!(
        registry.resolve_reference("countTabs"),
        vec!["sample_tabCount"]
    );
    assert_eq!(
        registry.resolve_reference("everything"),
        vec![
            "sample_tabCount",
            "sample_findFiles",
            "sample_runInTerminal",
            "sample_readme"
        ]
    );
}

#[test]
fn a_package_json_tool_without_a_binding_is_skipped_with_one_warning() {
    let f = setup(Settings::default());
    let dir = f.dir.path().join("ext");
    write_json(
        &dir.join("package.json"),
        &json!({"name": "ext", "contributes": {"languageModelTools": [tool("bound"), tool("loose")]}}),
    );
    write_json(
        &dir.join("toolbelt.json"),
        &json!({"bindings": {"bound": command_binding()}}),
    );
    let mut settings = Settings::default();
    settings.tools.manifests = vec![dir.display().to_string()];
    let f2 = setup(settings);
    let loaded = load(&f2);
    assert_eq!(loaded.tool_names(), vec!["bound"]);
    let about_loose: Vec<&String> = loaded
        .warnings
        .iter()
        .filter(|w| w.contains("'loose'"))
        .collect();
    assert_eq!(about_loose.len(), 1, "{:?}", loaded.warnings);
    assert_warned(
        &loaded.warnings,
        &[
            &dir.join("package.json").display().to_string(),
            "'loose'",
            "no binding: add one to toolbelt.json beside it",
        ],
    );
    drop(f);
}

#[test]
fn an_untrusted_folder_drops_workspace_commands_with_the_trust_warning() {
    let f0 = setup(Settings::default());
    let project = f0.ws();
    let mut settings = Settings::default();
    settings.untrusted_project = Some(project.clone());
    // The same project folder, now untrusted.
    let f = f0.with_settings(settings);
    write_json(
        &f.ws().join(".qwen/tools/ws.json"),
        &json!({
            "languageModelTools": [tool("ws_command"), tool("ws_builtin")],
            "bindings": {
                "ws_command": {"command": ["true"]},
                "ws_builtin": {"builtin": "list_directory", "prepare": ["true"]}
            }
        }),
    );
    write_json(
        &home(&f).join(".qwen/tools/user.json"),
        &json!({"languageModelTools": [tool("user_command")], "bindings": {"user_command": {"command": ["true"]}}}),
    );
    let loaded = load(&f);
    assert_eq!(loaded.tool_names(), vec!["ws_builtin", "user_command"]);
    let trust: Vec<&String> = loaded
        .warnings
        .iter()
        .filter(|w| w.contains("not trusted"))
        .collect();
    assert_eq!(trust.len(), 1, "{:?}", loaded.warnings);
    let warning = trust[0];
    for part in [
        "ws_command",
        "without their prepare command: ws_builtin",
        &format!("toolbelt trust {}", project.display()),
        "--trust-workspace",
        "TOOLBELT_TRUST_WORKSPACE=1",
    ] {
        assert!(warning.contains(part), "{part} not in {warning}");
    }
    let mut registry = builtins(&f);
    register_declared(&mut registry, loaded);
    assert!(registry.get("ws_builtin").is_some());
    assert!(registry.get("user_command").is_some());
    assert!(registry.get("ws_command").is_none());
}

#[test]
fn a_declared_name_taken_by_a_builtin_is_renamed_and_sets_follow_the_new_name() {
    let f = setup(Settings::default());
    write_json(
        &f.ws().join(".qwen/tools/a.json"),
        &json!({
            "languageModelTools": [tool("read_file")],
            "languageModelToolSets": [{"name": "mine", "description": "d", "tools": ["read_file"]}],
            "bindings": {"read_file": command_binding()}
        }),
    );
    let mut registry = builtins(&f);
    let warnings = register_declared(&mut registry, load(&f));
    assert_warned(&warnings, &["declared__read_file"]);
    assert_eq!(
        registry.resolve_reference("mine"),
        vec!["declared__read_file"]
    );
}

#[test]
fn tools_manifests_entries_are_relative_to_the_project_and_a_missing_one_warns() {
    let f0 = setup(Settings::default());
    let ws = f0.ws();
    write_json(
        &ws.join("tooling/one.json"),
        &json!({"languageModelTools": [tool("one")], "bindings": {"one": command_binding()}}),
    );
    write_json(
        &ws.join("tooling/two.json"),
        &json!({"languageModelTools": [tool("two")], "bindings": {"two": command_binding()}}),
    );
    // A package.json that contributes no tools is an extension with none, not an error.
    write_json(
        &ws.join("plain/package.json"),
        &json!({"name": "plain", "version": "1.0.0"}),
    );
    let mut settings = Settings::default();
    settings.tools.manifests = vec![
        "tooling".into(),
        "tooling/one.json".into(),
        "plain".into(),
        "nowhere".into(),
    ];
    let f = f0.with_settings(settings);
    let loaded = load(&f);
    assert_eq!(loaded.tool_names(), vec!["one", "two"]);
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert_warned(
        &loaded.warnings,
        &[
            "tools.manifests entry \"nowhere\"",
            "neither a file nor a folder",
        ],
    );
}

/// Compiling 500 schemas is most of a start-up with 500 declared tools, so a schema is
/// compiled on the tool's first call (an invalid one then skips validation with a
/// warning, as for MCP tools) and `tools lint` reports it; loading checks VS Code's
/// meta-schema subset only.
#[test]
fn a_schema_that_does_not_compile_loads_and_lint_reports_it() {
    let f = setup(Settings::default());
    let file = f.ws().join(".qwen/tools/pattern.json");
    write_json(
        &file,
        &json!({
            "languageModelTools": [with(
                tool("bad_pattern"),
                "inputSchema",
                json!({"type": "object", "properties": {"p": {"type": "string", "description": "A value.", "pattern": "(unclosed"}}}),
            )],
            "bindings": {"bad_pattern": command_binding()}
        }),
    );
    let mut registry = builtins(&f);
    let warnings = register_declared(&mut registry, load(&f));
    assert!(warnings.is_empty(), "{warnings:?}");
    let findings = toolbelt_engine::lint::lint_registry(&registry);
    assert!(
        findings
            .iter()
            .any(|x| x.tool == "bad_pattern" && x.rule == "schema-compiles"),
        "{findings:?}"
    );
}

/// A relative `tools.manifests` entry in the user's own settings points into every
/// project, so an untrusted project cannot use it to run its commands.
#[test]
fn a_configured_manifest_inside_an_untrusted_project_loses_its_commands() {
    let f0 = setup(Settings::default());
    let project = f0.ws();
    let mut settings: Settings =
        serde_json::from_value(json!({"tools": {"manifests": ["tools"]}})).unwrap();
    settings.untrusted_project = Some(project.clone());
    let f = f0.with_settings(settings);
    write_json(
        &f.ws().join("tools/evil.json"),
        &json!({
            "languageModelTools": [tool("evil_command"), tool("listing")],
            "bindings": {
                "evil_command": {"command": ["sh", "-c", "touch pwned"]},
                "listing": {"builtin": "list_directory"}
            }
        }),
    );
    let loaded = load(&f);
    assert_eq!(
        loaded.tool_names(),
        vec!["listing"],
        "{:?}",
        loaded.warnings
    );
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("not trusted") && w.contains("evil_command")),
        "{:?}",
        loaded.warnings
    );
}
