//! The parameter schemas the model reads, held to a snapshot. They are derived from the
//! tools' `Params` types; a change to a type that changes what the model sees shows here
//! and has to be accepted on purpose.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use toolbelt_config::settings::Settings;
use toolbelt_core::SchemaValidator;

use crate::test_support::fixture_with;

/// Every built-in (with a search provider configured so `web_search` is among them) and
/// the `skill` tool, name to schema, in registration order.
fn builtin_schemas() -> Value {
    let settings: Settings = serde_json::from_value(json!({
        "webSearch": {"provider": [{"type": "searxng", "baseUrl": "http://127.0.0.1:9"}]}
    }))
    .unwrap();
    let fx = fixture_with(25_000, 1_000, settings);
    let mut tools = crate::builtin_tools(&fx.env);
    tools.push(Arc::new(crate::skills::SkillTool::new(Arc::new(
        crate::skills::Skills::default(),
    ))));
    let mut all = Map::new();
    for tool in tools {
        all.insert(tool.name().to_owned(), tool.parameter_schema().clone());
    }
    Value::Object(all)
}

#[test]
fn builtin_schemas_are_the_ones_the_model_has_always_seen() {
    insta::assert_snapshot!(serde_json::to_string_pretty(&builtin_schemas()).unwrap());
}

/// Holds a tool's schema to its `Params` type: the tool shows the schema derived from
/// the type; the schema compiles; `full` (every property the schema offers) validates
/// and deserialises; without any one property, it validates exactly when it still
/// deserialises (so `required` is the type's non-optional fields); and an unknown
/// property is refused by the schema.
fn holds<T: DeserializeOwned + JsonSchema>(tools: &Map<String, Value>, name: &str, full: Value) {
    let schema = crate::params::schema_for::<T>();
    assert_eq!(
        tools[name], schema,
        "{name}: the tool's schema is not its type's"
    );
    let validator = SchemaValidator::new(schema.clone());
    if let Err(why) = validator.compiled() {
        panic!("{name}: the schema does not compile: {why}");
    }
    let valid = |args: &Value| validator.compiled().unwrap().is_valid(args);
    let parses = |args: &Value| serde_json::from_value::<T>(args.clone()).is_ok();
    assert!(
        valid(&full),
        "{name}: the full example is refused by the schema"
    );
    assert!(
        parses(&full),
        "{name}: the full example does not deserialise"
    );
    let properties = schema["properties"].as_object().unwrap();
    let given = full.as_object().unwrap();
    assert_eq!(
        properties.keys().collect::<Vec<_>>(),
        given.keys().collect::<Vec<_>>(),
        "{name}: the example must give every property, in order"
    );
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for key in given.keys() {
        let mut without = given.clone();
        without.remove(key);
        let without = Value::Object(without);
        assert_eq!(
            parses(&without),
            !required.contains(&key.as_str()),
            "{name}: without {key}, the type and the required list disagree"
        );
        assert_eq!(valid(&without), parses(&without), "{name}: without {key}");
    }
    let mut extra = given.clone();
    extra.insert("no_such_parameter".into(), json!(1));
    assert!(
        !valid(&Value::Object(extra)),
        "{name}: unknown parameter accepted"
    );
}

#[test]
fn every_builtin_schema_is_derived_from_its_parameter_type() {
    let Value::Object(tools) = builtin_schemas() else {
        unreachable!()
    };
    holds::<crate::read_file::Params>(
        &tools,
        "read_file",
        json!({"absolute_path": "/a", "offset": 0, "limit": 1}),
    );
    holds::<crate::list_directory::Params>(
        &tools,
        "list_directory",
        json!({"path": "/a", "ignore": ["*.log"],
               "file_filtering_options": {"respect_git_ignore": false, "respect_qwen_ignore": true}}),
    );
    holds::<crate::read_many_files::Params>(
        &tools,
        "read_many_files",
        json!({"paths": ["a"], "include": ["*.md"], "exclude": ["*.ts"], "recursive": false,
               "useDefaultExcludes": false,
               "file_filtering_options": {"respect_git_ignore": false, "respect_qwen_ignore": false}}),
    );
    holds::<crate::write_file::Params>(
        &tools,
        "write_file",
        json!({"file_path": "/a", "content": "x"}),
    );
    holds::<crate::edit::Params>(
        &tools,
        "edit",
        json!({"file_path": "/a", "old_string": "x", "new_string": "y", "replace_all": true,
               "expected_replacements": 2}),
    );
    holds::<crate::glob::Params>(
        &tools,
        "glob",
        json!({"pattern": "*", "path": "/a", "case_sensitive": true, "respect_git_ignore": false,
               "respect_qwen_ignore": false}),
    );
    holds::<crate::grep_search::Params>(
        &tools,
        "grep_search",
        json!({"pattern": "x", "path": "/a", "glob": "*.rs", "limit": 5, "case_sensitive": true}),
    );
    holds::<crate::shell::Params>(
        &tools,
        "run_shell_command",
        json!({"command": "ls", "description": "list", "directory": "/a", "is_background": false,
               "timeout": 1000}),
    );
    holds::<crate::web_fetch::Params>(
        &tools,
        "web_fetch",
        json!({"url": "https://example.com", "prompt": "p", "format": "text"}),
    );
    holds::<crate::web_search::Params>(&tools, "web_search", json!({"query": "q"}));
    holds::<crate::save_memory::Params>(
        &tools,
        "save_memory",
        json!({"fact": "f", "scope": "project"}),
    );
    holds::<crate::todo_write::Params>(
        &tools,
        "todo_write",
        json!({"todos": [{"id": "1", "content": "c", "status": "in_progress"}]}),
    );
    holds::<crate::exit_plan_mode::Params>(&tools, "exit_plan_mode", json!({"plan": "p"}));
    holds::<crate::notebook_edit::Params>(
        &tools,
        "notebook_edit",
        json!({"notebook_path": "/a.ipynb", "cell_id": "c", "new_source": "s", "cell_type": "code",
               "edit_mode": "insert"}),
    );
    holds::<crate::ask_user_question::Params>(
        &tools,
        "ask_user_question",
        json!({"questions": [{"question": "q?", "header": "h",
                              "options": [{"label": "a", "description": "d"},
                                          {"label": "b", "description": "e"}],
                              "multiSelect": true}],
               "metadata": {"source": "s"}}),
    );
    holds::<crate::skills::SkillParams>(&tools, "skill", json!({"skill": "s"}));
    assert_eq!(
        tools.len(),
        16,
        "a built-in without a check here: {:?}",
        tools.keys()
    );
}

/// Every value an enum of the schema offers deserialises, and its neighbour spelled
/// differently is refused by both.
#[test]
fn enum_choices_are_the_types_variants() {
    let Value::Object(tools) = builtin_schemas() else {
        unreachable!()
    };
    fn each<T: DeserializeOwned>(tools: &Map<String, Value>, name: &str, field: &str, base: Value) {
        let choices = tools[name]["properties"][field]["enum"].as_array().unwrap();
        for choice in choices {
            let mut args = base.clone();
            args[field] = choice.clone();
            assert!(
                serde_json::from_value::<T>(args).is_ok(),
                "{name}.{field} = {choice}"
            );
        }
        let mut args = base;
        args[field] = json!("NoSuchChoice");
        assert!(serde_json::from_value::<T>(args).is_err(), "{name}.{field}");
    }
    each::<crate::web_fetch::Params>(
        &tools,
        "web_fetch",
        "format",
        json!({"url": "u", "prompt": "p"}),
    );
    // `save_memory`'s scope is read as a string (anything but "project" is global); its
    // choices come from the schema-only `Scope`, and the full example above uses one.
    each::<crate::notebook_edit::Params>(
        &tools,
        "notebook_edit",
        "cell_type",
        json!({"notebook_path": "/a"}),
    );
    each::<crate::notebook_edit::Params>(
        &tools,
        "notebook_edit",
        "edit_mode",
        json!({"notebook_path": "/a"}),
    );
}
