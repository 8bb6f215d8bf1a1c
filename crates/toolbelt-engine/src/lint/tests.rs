use serde_json::{Value, json};

use super::*;

fn rules(findings: &[Finding]) -> Vec<(&'static str, Severity)> {
    findings.iter().map(|f| (f.rule, f.severity)).collect()
}

const GOOD: &str = "Gets the weather for a place. Use it when the user asks about weather; it covers the United States only.";

fn good_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "destination_location": {"type": "string", "description": "A city name or coordinates."}
        },
        "required": ["destination_location"]
    })
}

#[test]
fn a_declaration_that_follows_the_guidelines_has_no_findings() {
    let f = lint_declaration("get_weather", GOOD, &good_schema(), false);
    assert_eq!(f, vec![]);
    let f = lint_declaration("mcp__github__search_issues", GOOD, &good_schema(), false);
    assert_eq!(f, vec![]);
}

#[test]
fn names_providers_reject_are_errors() {
    for name in [
        "",
        "get weather",
        "get.weather",
        "получить_погоду",
        &"a_b".repeat(30),
    ] {
        let f = lint_declaration(name, GOOD, &good_schema(), false);
        assert!(
            rules(&f).contains(&("name-charset", Severity::Error)),
            "{name}: {f:?}"
        );
    }
    let f = lint_declaration(&"a_".repeat(32), GOOD, &good_schema(), false);
    assert!(
        !rules(&f).contains(&("name-charset", Severity::Error)),
        "64 is allowed"
    );
}

#[test]
fn names_that_are_not_verb_noun_are_warnings_except_the_compatible_builtins() {
    for name in [
        "weather",
        "getWeather",
        "Get_Weather",
        "get__weather",
        "mcp__srv__weather",
    ] {
        let f = lint_declaration(name, GOOD, &good_schema(), false);
        assert_eq!(
            rules(&f),
            vec![("name-verb-noun", Severity::Warning)],
            "{name}"
        );
    }
    assert_eq!(lint_declaration("edit", GOOD, &good_schema(), true), vec![]);
    assert_eq!(
        rules(&lint_declaration("edit", GOOD, &good_schema(), false)),
        vec![("name-verb-noun", Severity::Warning)],
        "only the built-in keeps Qwen Code's name"
    );
}

#[test]
fn descriptions_are_bounded() {
    let f = lint_declaration("get_weather", "  ", &good_schema(), false);
    assert_eq!(rules(&f), vec![("description-missing", Severity::Error)]);
    let f = lint_declaration("get_weather", "Weather.", &good_schema(), false);
    assert_eq!(rules(&f), vec![("description-length", Severity::Warning)]);
    let long = "word ".repeat(1000);
    let f = lint_declaration("get_weather", &long, &good_schema(), false);
    assert_eq!(rules(&f), vec![("description-length", Severity::Warning)]);
}

#[test]
fn schemas_must_be_objects_that_compile_and_require_what_they_define() {
    let f = lint_declaration("get_weather", GOOD, &json!({"type": "string"}), false);
    assert_eq!(rules(&f), vec![("schema-object", Severity::Error)]);
    let f = lint_declaration(
        "get_weather",
        GOOD,
        &json!({"type": "object", "properties": {"a": {"type": "strng", "description": "x"}}}),
        false,
    );
    assert_eq!(rules(&f), vec![("schema-compiles", Severity::Error)]);
    let f = lint_declaration(
        "get_weather",
        GOOD,
        &json!({"type": "object", "properties": {
            "place": {"type": "object", "description": "where", "properties": {}, "required": ["city"]}
        }, "required": ["place", "when"]}),
        false,
    );
    let messages: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(
        rules(&f),
        vec![
            ("schema-required", Severity::Error),
            ("schema-required", Severity::Error)
        ]
    );
    assert!(messages[0].contains("\"when\""), "{messages:?}");
    assert!(
        messages[1].starts_with("/properties/place: \"city\""),
        "{messages:?}"
    );
}

#[test]
fn undescribed_parameters_and_strict_mode_keywords_are_warnings_with_pointers() {
    let schema = json!({"type": "object", "properties": {
        "query": {"type": "string", "minLength": 1},
        "tags": {"type": "array", "description": "labels", "uniqueItems": true,
                 "items": {"type": "object", "properties": {"a/b": {"type": "string"}}}}
    }});
    let f = lint_declaration("find_items", GOOD, &schema, false);
    let got: Vec<(&str, &str)> = f.iter().map(|f| (f.rule, f.message.as_str())).collect();
    assert_eq!(got.len(), 4, "{got:#?}");
    assert!(got.contains(&(
        "parameter-description",
        "parameter \"query\" (/properties/query) has no description: say what it is and how it changes the call"
    )));
    assert!(got.iter().any(|(r, m)| *r == "parameter-description"
        && m.contains("/properties/tags/items/properties/a~1b")));
    assert!(
        got.iter()
            .any(|(r, m)| *r == "strict-mode"
                && m.starts_with("/properties/query uses \"minLength\""))
    );
    assert!(got.iter().any(
        |(r, m)| *r == "strict-mode" && m.starts_with("/properties/tags uses \"uniqueItems\"")
    ));
}

#[test]
fn a_registry_is_linted_tool_by_tool_errors_first() {
    use toolbelt_core::ToolError;
    use toolbelt_core::{Invocation, Kind, Tool};
    struct T(&'static str, &'static str, Value);
    impl Tool for T {
        fn name(&self) -> &str {
            self.0
        }
        fn display_name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            self.1
        }
        fn kind(&self) -> Kind {
            Kind::Other
        }
        fn parameter_schema(&self) -> &Value {
            &self.2
        }
        fn build(&self, _: Value) -> Result<Box<dyn Invocation>, ToolError> {
            Err(ToolError::invalid_params("not for running"))
        }
    }
    let mut registry = ToolRegistry::default();
    registry.register(
        std::sync::Arc::new(T("get_weather", GOOD, good_schema())),
        Origin::Declared,
    );
    registry.register(
        std::sync::Arc::new(T("Get_Weather", GOOD, good_schema())),
        Origin::Declared,
    );
    registry.register(
        std::sync::Arc::new(T("list_things", "", good_schema())),
        Origin::Declared,
    );
    let f = lint_registry(&registry);
    assert_eq!(f[0].severity, Severity::Error);
    assert_eq!(f[0].tool, "list_things");
    assert!(f.iter().any(|f| f.rule == "name-unique"
        && f.tool == "Get_Weather"
        && f.severity == Severity::Warning));
}

#[test]
fn only_a_built_in_that_keeps_its_legacy_name_skips_verb_noun() {
    use toolbelt_core::ToolError;
    use toolbelt_core::{Invocation, Kind, Tool};
    struct Legacy(&'static str, Value);
    impl Tool for Legacy {
        fn name(&self) -> &str {
            self.0
        }
        fn display_name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            GOOD
        }
        fn kind(&self) -> Kind {
            Kind::Other
        }
        fn parameter_schema(&self) -> &Value {
            &self.1
        }
        fn keeps_legacy_name(&self) -> bool {
            true
        }
        fn build(&self, _: Value) -> Result<Box<dyn Invocation>, ToolError> {
            Err(ToolError::invalid_params("not for running"))
        }
    }
    let mut registry = ToolRegistry::default();
    registry.register(
        std::sync::Arc::new(Legacy("edit", good_schema())),
        Origin::BuiltIn,
    );
    registry.register(
        std::sync::Arc::new(Legacy("glob", good_schema())),
        Origin::Declared,
    );
    let f = lint_registry(&registry);
    assert_eq!(
        f.iter()
            .map(|f| (f.tool.as_str(), f.rule))
            .collect::<Vec<_>>(),
        vec![("glob", "name-verb-noun")],
        "only the built-in keeps Qwen Code's name"
    );
}
