//! The crates below the tools (toolbelt-config, toolbelt-core, toolbelt-engine) know no
//! tool by name: what a tool is to the rules, plan mode and the lint it says about itself
//! through the `Tool` trait (issue 30). This test reads their non-test sources and fails
//! when a built-in tool's name, or an older name it still answers to, appears there as a
//! string literal.

use std::path::{Path, PathBuf};

use toolbelt_config::settings::Settings;
use toolbelt_engine::registry::ToolRegistry;

use crate::test_support::fixture_with;

/// Files that still name tools. Empty: rules, plan mode and the lint learn every tool
/// word from the tools (a [`toolbelt_engine::rules::RuleVocabulary`]).
const NOT_YET_FREE: &[&str] = &[];

/// The built-in tools' names and the older names they answer to.
fn builtin_names() -> Vec<String> {
    let settings: Settings = serde_json::from_value(serde_json::json!({
        "webSearch": {"provider": [{"type": "searxng", "baseUrl": "http://127.0.0.1:9"}]}
    }))
    .unwrap();
    let f = fixture_with(25_000, 1_000, settings);
    let mut registry = ToolRegistry::default();
    crate::register_builtins(&mut registry, &f.env);
    let mut names: Vec<String> = Vec::new();
    for r in registry.all() {
        names.push(r.name.clone());
        names.extend(r.tool.aliases().iter().map(|a| a.to_string()));
    }
    assert!(names.len() >= 14, "{names:?}");
    names
}

/// The non-test `.rs` files under `dir`: test files and test directories are left out,
/// and a file's inline `#[cfg(test)] mod ... {` block is cut off.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if name != "tests" {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") && !name.ends_with("tests.rs") {
            out.push(path);
        }
    }
}

fn without_inline_tests(text: &str) -> &str {
    let mut offset = 0;
    let mut previous_was_cfg_test = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if previous_was_cfg_test && trimmed.starts_with("mod ") && trimmed.ends_with('{') {
            return &text[..offset];
        }
        previous_was_cfg_test = trimmed == "#[cfg(test)]";
        offset += line.len();
    }
    text
}

/// The crates that must not name a tool, as the tools crate sees them.
const BELOW_THE_TOOLS: &[&str] = &["toolbelt-config", "toolbelt-core", "toolbelt-engine"];

#[test]
fn the_crates_below_the_tools_write_no_tool_name_outside_tests() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for name in BELOW_THE_TOOLS {
        sources(&crates.join(name).join("src"), &mut files);
    }
    assert!(
        files.len() > 40,
        "read {} files of {BELOW_THE_TOOLS:?}",
        files.len()
    );
    let names = builtin_names();
    let mut found = Vec::new();
    for file in &files {
        let relative = file
            .strip_prefix(&crates)
            .unwrap()
            .to_string_lossy()
            .to_string();
        if NOT_YET_FREE.contains(&relative.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        // A kind's spelling (`Kind::Edit => "edit"`) is the kind's, not a tool's.
        let code = without_inline_tests(&text)
            .lines()
            .filter(|line| !line.contains("Kind::"))
            .collect::<Vec<_>>()
            .join("\n");
        for name in &names {
            if code.contains(&format!("\"{name}\"")) {
                found.push(format!("{relative}: \"{name}\""));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a crate below the tools names tools; let the tool say it through the Tool trait: {found:#?}"
    );
}

#[test]
fn the_scan_sees_a_name_outside_tests_and_not_inside_them() {
    let text = "fn f() { g(\"edit\") }\n#[cfg(test)]\nmod tests {\n    fn t() { h(\"glob\") }\n}\n";
    let code = without_inline_tests(text);
    assert!(code.contains("\"edit\""));
    assert!(!code.contains("\"glob\""));
}

/// The vocabulary a session has before its registry (`crate::rule_vocabulary`, from
/// the tool modules' constants) is what a registry of every built-in says
/// (`Tool::rule_aliases`, `Tool::path_operation`, `Kind::Execute`), the skill tool
/// included, so the two cannot drift.
#[test]
fn the_static_vocabulary_is_what_the_registered_builtins_say() {
    use toolbelt_core::PathOperation;
    let settings: Settings = serde_json::from_value(serde_json::json!({
        "webSearch": {"provider": [{"type": "searxng", "baseUrl": "http://127.0.0.1:9"}]}
    }))
    .unwrap();
    let f = fixture_with(25_000, 1_000, settings);
    let mut registry = ToolRegistry::default();
    crate::register_builtins(&mut registry, &f.env);
    let skills = crate::skills::SkillTool::new(std::sync::Arc::new(crate::skills::Skills::load(
        None, None, false,
    )));
    registry.register(
        std::sync::Arc::new(skills),
        toolbelt_engine::registry::Origin::BuiltIn,
    );
    // `monitor` is registered by sessions that deliver events between turns.
    let jobs = std::sync::Arc::new(crate::JobTable::new(true));
    let monitors = crate::MonitorTable::new(&jobs);
    registry.register(
        std::sync::Arc::new(crate::Monitor::new(f.env.clone(), jobs, monitors)),
        toolbelt_engine::registry::Origin::BuiltIn,
    );
    let registered = registry.rule_vocabulary();
    assert_eq!(crate::rule_vocabulary(), registered);
    let aliases: Vec<&str> = registered.aliases().collect();
    for alias in [
        "Read",
        "Edit",
        "Write",
        "Bash",
        "Shell",
        "Grep",
        "Glob",
        "LS",
        "ls",
        "WebSearch",
        "Skill",
    ] {
        assert!(aliases.contains(&alias), "{alias} in {aliases:?}");
    }
    assert_eq!(registered.operation("read_file"), Some(PathOperation::Read));
    assert_eq!(
        registered.operation("grep_search"),
        Some(PathOperation::Read)
    );
    assert_eq!(
        registered.operation("notebook_edit"),
        Some(PathOperation::Edit)
    );
    assert!(registered.runs_commands("run_shell_command"));
    assert!(!registered.runs_commands("read_file"));
}

/// A hook matcher's alias names one tool, as in Qwen Code and Claude Code (`Read` is
/// `read_file`, not every tool a `Read(...)` rule covers): among the built-ins, no name a
/// hook may use for one tool (display name or hook alias) is another's.
#[test]
fn each_hook_alias_names_exactly_one_builtin() {
    let f = fixture_with(25_000, 1_000, Settings::default());
    let mut registry = ToolRegistry::default();
    crate::register_builtins(&mut registry, &f.env);
    let jobs = std::sync::Arc::new(crate::JobTable::new(true));
    let monitors = crate::MonitorTable::new(&jobs);
    registry.register(
        std::sync::Arc::new(crate::Monitor::new(f.env.clone(), jobs, monitors)),
        toolbelt_engine::registry::Origin::BuiltIn,
    );
    let mut named: std::collections::HashMap<String, Vec<String>> = Default::default();
    for r in registry.all() {
        let tool = r.tool.as_ref();
        for alias in std::iter::once(tool.display_name()).chain(tool.hook_aliases().iter().copied())
        {
            if alias != r.name {
                let tools = named.entry(alias.to_string()).or_default();
                if !tools.contains(&r.name) {
                    tools.push(r.name.clone());
                }
            }
        }
    }
    let shared: Vec<_> = named.iter().filter(|(_, tools)| tools.len() > 1).collect();
    assert!(
        shared.is_empty(),
        "hook aliases naming several tools: {shared:?}"
    );
    for (alias, tool) in [
        ("Read", "read_file"),
        ("Edit", "edit"),
        ("Write", "write_file"),
        ("Bash", "run_shell_command"),
        ("Grep", "grep_search"),
        ("Glob", "glob"),
        ("LS", "list_directory"),
    ] {
        assert_eq!(named.get(alias), Some(&vec![tool.to_string()]), "{alias}");
    }
}
