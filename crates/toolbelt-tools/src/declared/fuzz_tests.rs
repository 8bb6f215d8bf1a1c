//! The manifest parser against random JSON: it never panics.

use proptest::prelude::*;
use serde_json::{Map, Value};

use super::manifest::{ManifestInput, Scope, parse_manifest};

const KEYS: &[&str] = &[
    "name",
    "displayName",
    "modelDescription",
    "toolReferenceName",
    "canBeReferencedInPrompt",
    "tags",
    "inputSchema",
    "when",
    "type",
    "properties",
    "items",
    "tools",
    "description",
    "command",
    "mcp",
    "builtin",
    "arguments",
    "kind",
    "prepare",
    "confirmationMessages",
    "title",
    "message",
    "icon",
    "x",
];

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-z_ (){}$.&|!=']{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "object",
            "string",
            "copilot_x",
            "a && b",
            "read",
            "srv/tool",
            "${input.a}",
        ])
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|pairs| {
                Value::Object(
                    pairs
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect::<Map<_, _>>(),
                )
            }),
        ]
    })
}

proptest! {
    #[test]
    fn the_manifest_parser_never_panics(tools in json(), sets in json(), bindings in json()) {
        let file = std::path::Path::new("/tmp/fuzz/manifest.json");
        let parsed = parse_manifest(ManifestInput {
            file,
            scope: Scope::Workspace,
            tools: Some(&tools),
            sets: Some(&sets),
            bindings: Some(&bindings),
            bindings_file: file,
        });
        // Every loaded tool passed the name rule.
        for tool in parsed.tools {
            prop_assert!(super::manifest::is_word_name(&tool.name));
        }
    }
}
