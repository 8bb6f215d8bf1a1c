//! The built-in tools pass `toolbelt tools lint` without a finding.

use toolbelt_config::settings::Settings;
use toolbelt_engine::lint::lint_registry;
use toolbelt_engine::registry::ToolRegistry;

use crate::test_support::fixture_with;

#[test]
fn every_builtin_tool_passes_the_lint_clean() {
    // With a search provider, so web_search is among them.
    let settings: Settings = serde_json::from_value(serde_json::json!({
        "webSearch": {"provider": [{"type": "searxng", "baseUrl": "http://127.0.0.1:9"}]}
    }))
    .unwrap();
    let f = fixture_with(25_000, 1_000, settings);
    let mut registry = ToolRegistry::default();
    crate::register_builtins(&mut registry, &f.env);
    assert!(registry.get("web_search").is_some());
    assert!(registry.len() >= 14);
    assert_eq!(lint_registry(&registry), vec![]);
}
