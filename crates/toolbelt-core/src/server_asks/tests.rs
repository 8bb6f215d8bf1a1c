//! Checking a person's answer against the form a server asked for.

use serde_json::{Map, Value, json};

use super::*;

fn form() -> Form {
    let field = |name: &str, required: bool, kind: FieldKind| FormField {
        name: name.into(),
        title: None,
        description: None,
        required,
        default: None,
        kind,
    };
    let text = |format: Option<&str>, min_length: Option<u64>| FieldKind::Text {
        format: format.map(str::to_string),
        min_length,
        max_length: None,
    };
    let choices = vec![
        Choice {
            value: "hero-1".into(),
            label: "Superman".into(),
        },
        Choice {
            value: "hero-2".into(),
            label: "Green Lantern".into(),
        },
    ];
    Form {
        fields: vec![
            field("name", true, text(None, Some(2))),
            field("email", false, text(Some("email"), None)),
            field(
                "age",
                false,
                FieldKind::Number {
                    integer: true,
                    minimum: Some(1.0),
                    maximum: Some(100.0),
                },
            ),
            field("agree", false, FieldKind::Boolean),
            field("hero", false, FieldKind::Choice(choices.clone())),
            field(
                "heroes",
                false,
                FieldKind::Choices {
                    options: choices,
                    min_items: Some(1),
                    max_items: Some(1),
                },
            ),
            field("born", false, text(Some("date"), None)),
        ],
        schema: Value::Null,
    }
}

fn content(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

#[test]
fn a_complete_answer_passes_and_each_kind_of_mistake_is_named() {
    let form = form();
    let good = content(json!({"name": "Ada", "email": "ada@example.org", "age": 36,
        "agree": true, "hero": "hero-2", "heroes": ["hero-1"], "born": "1815-12-10"}));
    assert_eq!(form.check(&good), Ok(()));
    for (bad, says) in [
        (json!({}), "name: an answer is required"),
        (json!({"name": "A"}), "at least 2 characters"),
        (
            json!({"name": "Ada", "colour": "red"}),
            "colour: the form has no such field",
        ),
        (json!({"name": "Ada", "email": "nope"}), "not a valid email"),
        (json!({"name": "Ada", "age": 3.5}), "whole number"),
        (json!({"name": "Ada", "age": 300}), "between 1 and 100"),
        (json!({"name": "Ada", "agree": "yes"}), "true or false"),
        (
            json!({"name": "Ada", "hero": "Batman"}),
            "not one of the choices",
        ),
        (
            json!({"name": "Ada", "heroes": ["hero-1", "hero-2"]}),
            "wrong number",
        ),
        (
            json!({"name": "Ada", "born": "1815-13-10"}),
            "not a valid date",
        ),
    ] {
        let error = form.check(&content(bad.clone())).unwrap_err().to_string();
        assert!(error.contains(says), "{bad}: {error}");
    }
}

#[test]
fn typed_answers_become_the_fields_values() {
    let form = form();
    let field = |name: &str| form.fields.iter().find(|f| f.name == name).unwrap();
    assert_eq!(field("age").parse_typed(" 42 "), Ok(json!(42)));
    assert!(field("age").parse_typed("forty").is_err());
    assert_eq!(field("agree").parse_typed("Yes"), Ok(json!(true)));
    assert_eq!(field("hero").parse_typed("superman"), Ok(json!("hero-1")));
    assert_eq!(field("heroes").parse_typed("hero-2"), Ok(json!(["hero-2"])));
    assert!(field("heroes").parse_typed("hero-1, hero-2").is_err());
}
