#![allow(clippy::too_many_lines)]
//! Property tests over the parsers that take input from outside: settings text, function
//! call arguments, schema validation with coercion, and model-given paths. Whatever the
//! input, they return a value or a clear error; they never panic.

// Test fixtures outside #[test] functions may panic on a broken test setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::{Value, json};
use toolbelt_config::settings::Settings;
use toolbelt_config::settings::parse_settings_text;
use toolbelt_core::WorkspaceRoots;
use toolbelt_core::{SchemaValidator, parse_arguments};

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("true"),
            Just("false"),
            Just("12"),
            Just("{\"a\":1}"),
            Just("[1,2]"),
            Just("null")
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("path".to_string()),
                    Just("n".to_string()),
                    Just("flag".to_string()),
                    "[a-z]{1,6}"
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "n": {"type": "integer", "minimum": 0},
            "flag": {"type": "boolean"},
            "obj": {"type": "object", "properties": {"deep": {"type": ["boolean", "null"]}}},
            "list": {"type": "array", "items": {"type": "number"}},
            "choice": {"anyOf": [{"type": "string"}, {"type": "array"}]}
        },
        "required": ["path"]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn settings_text_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(value) = parse_settings_text(&bytes) {
            let _ = Settings::from_value(value);
        }
    }

    #[test]
    fn settings_like_text_never_panics(text in r#"[{}\[\]":,/\*# \n a-z0-9$]{0,120}"#) {
        if let Ok(value) = parse_settings_text(text.as_bytes()) {
            let _ = Settings::from_value(value);
        }
    }

    #[test]
    fn any_settings_value_gives_settings_or_a_named_key(value in arb_json()) {
        let wrapped = json!({"tools": value.clone(), "permissions": value.clone(), "mcpServers": value});
        if let Err((key, message)) = Settings::from_value(wrapped) {
            prop_assert!(!key.is_empty());
            prop_assert!(!message.is_empty());
        }
    }

    #[test]
    fn argument_text_never_panics(text in ".{0,200}") {
        let _ = parse_arguments(&text);
    }

    #[test]
    fn validation_returns_valid_args_or_a_message(args in arb_json()) {
        let validator = SchemaValidator::new(schema());
        match validator.validate(args) {
            Ok(valid) => {
                // What passes (after coercion) really is valid.
                prop_assert!(validator.compiled().unwrap().is_valid(&valid));
            }
            Err(e) => prop_assert!(!e.message.is_empty()),
        }
    }

    #[test]
    fn path_resolution_never_escapes(given in r"(/|\.\./|\./|[a-z]{1,3}/|\x00|~){0,8}[a-z.]{0,4}") {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        let roots = WorkspaceRoots::new([dir.path().join("ws")]).unwrap();
        let root = dir.path().join("ws").canonicalize().unwrap();
        let full = format!("{}/{}", root.display(), given);
        if let Ok(real) = roots.resolve(&full) {
            prop_assert!(real.starts_with(&root), "{} escaped to {}", full, real.display());
        }
        if let Ok(real) = roots.resolve(&given) {
            prop_assert!(real.starts_with(&root), "{} escaped to {}", given, real.display());
        }
    }
}
