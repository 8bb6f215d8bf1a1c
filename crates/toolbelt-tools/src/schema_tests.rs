//! The parameter schemas the model reads, held to a snapshot. They are derived from the
//! tools' `Params` types; a change to a type that changes what the model sees shows here
//! and has to be accepted on purpose.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolbelt_core::Settings;

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
