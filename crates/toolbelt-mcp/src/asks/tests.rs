//! Reading a server's form and URL.

use serde_json::json;
use toolbelt_core::{Choice, FieldKind};

use super::{form_of, url_allowed};

fn choice(value: &str, label: &str) -> Choice {
    Choice {
        value: value.into(),
        label: label.into(),
    }
}

#[test]
fn every_kind_of_field_of_the_restricted_schema_is_read() {
    let form = form_of(json!({
        "type": "object",
        "properties": {
            "email": {"type": "string", "format": "email", "title": "Email"},
            "n": {"type": "integer", "minimum": 1, "maximum": 100, "default": 42},
            "ok": {"type": "boolean"},
            "pet": {"type": "string", "enum": ["p1", "p2"], "enumNames": ["Cats", "Dogs"]},
            "hero": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]},
            "fish": {"type": "array", "minItems": 1, "items": {"anyOf": [{"const": "f1", "title": "Tuna"}]}},
            "tools": {"type": "array", "items": {"type": "string", "enum": ["Guitar"]}}
        },
        "required": ["email"]
    }))
    .unwrap();
    let kind = |name: &str| {
        let field = form.fields.iter().find(|f| f.name == name).unwrap();
        (field.required, field.kind.clone())
    };
    assert_eq!(
        kind("email"),
        (
            true,
            FieldKind::Text {
                format: Some("email".into()),
                min_length: None,
                max_length: None
            }
        )
    );
    assert_eq!(
        kind("n").1,
        FieldKind::Number {
            integer: true,
            minimum: Some(1.0),
            maximum: Some(100.0)
        }
    );
    assert_eq!(kind("ok").1, FieldKind::Boolean);
    assert_eq!(
        kind("pet").1,
        FieldKind::Choice(vec![choice("p1", "Cats"), choice("p2", "Dogs")])
    );
    assert_eq!(
        kind("hero").1,
        FieldKind::Choice(vec![choice("h1", "Superman")])
    );
    assert_eq!(
        kind("fish").1,
        FieldKind::Choices {
            options: vec![choice("f1", "Tuna")],
            min_items: Some(1),
            max_items: None
        }
    );
    assert!(matches!(kind("tools").1, FieldKind::Choices { .. }));
    let nested = form_of(json!({"properties": {"a": {"type": "object"}}}));
    assert!(nested.unwrap_err().contains("\"a\""));
}

#[test]
fn only_https_or_loopback_http_urls_are_shown() {
    for fine in [
        "https://example.org/login",
        "http://127.0.0.1:8080/cb",
        "http://localhost/x",
        "http://[::1]/x",
    ] {
        assert!(url_allowed(fine).is_ok(), "{fine}");
    }
    assert_eq!(
        url_allowed("https://example.org/a\nb"),
        Ok("https://example.org/ab".to_string())
    );
    for refused in [
        "http://example.org/login",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "not a url",
    ] {
        assert!(url_allowed(refused).is_err(), "{refused}");
    }
}
