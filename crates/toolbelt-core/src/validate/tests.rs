use serde_json::json;

use super::*;

fn read_file_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "absolute_path": {"type": "string"},
            "offset": {"type": "integer", "minimum": 0},
            "limit": {"type": "integer", "minimum": 1},
            "verbose": {"type": "boolean"},
            "options": {"type": "object", "properties": {"deep": {"type": "boolean"}}},
            "names": {"type": "array", "items": {"type": "string"}},
            "either": {"anyOf": [{"type": "string"}, {"type": "array"}]}
        },
        "required": ["absolute_path"],
        "additionalProperties": false
    })
}

/// Each case: arguments, then `Ok(expected arguments)` or `Err(message fragments)`.
fn check(args: Value, expect: Result<Value, &[&str]>) {
    let v = SchemaValidator::new(read_file_schema());
    match (v.validate(args.clone()), expect) {
        (Ok(got), Ok(want)) => assert_eq!(got, want, "args {args}"),
        (Err(e), Err(fragments)) => {
            for f in fragments {
                assert!(
                    e.message.contains(f),
                    "message {:?} lacks {f:?} (args {args})",
                    e.message
                );
            }
            assert_eq!(e.kind, crate::ErrorKind::InvalidToolParams);
        }
        (got, want) => panic!("args {args}: got {got:?}, want {want:?}"),
    }
}

#[test]
fn valid_arguments_pass_unchanged() {
    check(
        json!({"absolute_path": "/a"}),
        Ok(json!({"absolute_path": "/a"})),
    );
}

#[test]
fn wrong_type_names_the_path_and_the_expected_type() {
    check(
        json!({"absolute_path": 5}),
        Err(&["absolute_path: 5 is not of type \"string\""]),
    );
}

#[test]
fn missing_required_property_is_named() {
    check(json!({}), Err(&["absolute_path", "required"]));
}

#[test]
fn unknown_property_is_named_when_the_schema_forbids_it() {
    check(json!({"absolute_path": "/a", "bogus": 1}), Err(&["bogus"]));
}

#[test]
fn minimum_is_reported_with_the_path() {
    check(
        json!({"absolute_path": "/a", "limit": 0}),
        Err(&["limit: 0 is less than the minimum of 1"]),
    );
}

#[test]
fn nested_paths_use_dots_and_brackets() {
    check(
        json!({"absolute_path": "/a", "names": ["x", 3]}),
        Err(&["names[1]: 3 is not of type \"string\""]),
    );
}

#[test]
fn boolean_strings_are_coerced_also_nested() {
    check(
        json!({"absolute_path": "/a", "verbose": "true", "options": {"deep": "false"}}),
        Ok(json!({"absolute_path": "/a", "verbose": true, "options": {"deep": false}})),
    );
}

#[test]
fn numeric_strings_are_coerced_for_integers() {
    check(
        json!({"absolute_path": "/a", "offset": "10"}),
        Ok(json!({"absolute_path": "/a", "offset": 10})),
    );
}

#[test]
fn stringified_objects_and_arrays_are_parsed() {
    check(
        json!({"absolute_path": "/a", "options": "{\"deep\": true}", "names": "[\"a\"]"}),
        Ok(json!({"absolute_path": "/a", "options": {"deep": true}, "names": ["a"]})),
    );
}

#[test]
fn strings_are_left_alone_where_a_string_is_accepted() {
    // `either` accepts a string, so "[1]" stays a string and the arguments are valid.
    check(
        json!({"absolute_path": "/a", "either": "[1]"}),
        Ok(json!({"absolute_path": "/a", "either": "[1]"})),
    );
    // A path that looks like `true` stays a string.
    check(
        json!({"absolute_path": "true"}),
        Ok(json!({"absolute_path": "true"})),
    );
}

#[test]
fn coercion_that_does_not_help_reports_the_error() {
    check(
        json!({"absolute_path": "/a", "verbose": "yes"}),
        Err(&["verbose: \"yes\" is not of type \"boolean\""]),
    );
}

#[test]
fn non_object_arguments_are_refused() {
    check(json!([1, 2]), Err(&["must be a JSON object, not an array"]));
    check(json!(7), Err(&["not a number"]));
}

#[test]
fn null_and_empty_string_mean_no_arguments() {
    let v = SchemaValidator::new(json!({"type": "object", "properties": {}}));
    assert_eq!(v.validate(Value::Null).unwrap(), json!({}));
    assert_eq!(v.validate(json!("")).unwrap(), json!({}));
}

#[test]
fn draft_2020_12_prefix_items_are_checked() {
    let v = SchemaValidator::new(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}}
    }));
    assert!(v.validate(json!({"pair": ["a", 1]})).is_ok());
    let e = v.validate(json!({"pair": ["a", "b"]})).unwrap_err();
    assert!(e.message.contains("pair[1]"), "{}", e.message);
    // prefixItems also guide coercion.
    assert_eq!(
        v.validate(json!({"pair": ["a", "2"]})).unwrap(),
        json!({"pair": ["a", 2]})
    );
}

#[test]
fn draft_07_is_the_default() {
    let v =
        SchemaValidator::new(json!({"type": "object", "properties": {"a": {"type": "integer"}}}));
    assert_eq!(v.compiled().unwrap().draft(), Draft::Draft7);
}

#[test]
fn a_schema_that_does_not_compile_skips_validation() {
    let v = SchemaValidator::new(
        json!({"type": "object", "properties": {"a": {"type": "no-such-type"}}}),
    );
    assert!(v.compiled().is_err());
    assert_eq!(v.validate(json!({"a": 1})).unwrap(), json!({"a": 1}));
}

#[test]
fn malformed_json_names_the_position() {
    let e = parse_arguments("{not json").unwrap_err();
    assert!(e.message.contains("line 1 column 2"), "{}", e.message);
    assert_eq!(parse_arguments("  ").unwrap(), json!({}));
    assert_eq!(parse_arguments("{\"a\":1}").unwrap(), json!({"a": 1}));
}

#[test]
fn pointer_to_path_handles_escapes() {
    assert_eq!(pointer_to_path(""), "");
    assert_eq!(pointer_to_path("/a~1b/0/c~0d"), "a/b[0].c~d");
}

#[test]
fn an_integral_float_is_the_integer_and_a_fraction_is_refused() {
    // `1.0` passes JSON Schema's "integer" but not serde's u64: it must arrive as 1.
    check(
        json!({"absolute_path": "/a", "offset": 1.0}),
        Ok(json!({"absolute_path": "/a", "offset": 1})),
    );
    check(
        json!({"absolute_path": "/a", "offset": 1e3}),
        Ok(json!({"absolute_path": "/a", "offset": 1000})),
    );
    check(
        json!({"absolute_path": "/a", "offset": "1.0"}),
        Ok(json!({"absolute_path": "/a", "offset": 1})),
    );
    check(
        json!({"absolute_path": "/a", "offset": "1"}),
        Ok(json!({"absolute_path": "/a", "offset": 1})),
    );
    check(
        json!({"absolute_path": "/a", "offset": 1.5}),
        Err(&["offset: 1.5 is not of type \"integer\""]),
    );
    check(
        json!({"absolute_path": "/a", "offset": "1.5"}),
        Err(&["offset: \"1.5\" is not of type \"integer\""]),
    );
    // A number parameter keeps its float.
    let schema = json!({"type": "object", "properties": {"x": {"type": "number"}}});
    let got = SchemaValidator::new(schema)
        .validate(json!({"x": 2.0}))
        .unwrap();
    assert!(got["x"].is_f64(), "{got}");
}

#[test]
fn every_integer_parameter_gets_the_same_float_rule() {
    // Nested in arrays and objects, and through anyOf.
    let schema = json!({
        "type": "object",
        "properties": {
            "list": {"type": "array", "items": {"type": "integer"}},
            "inner": {"type": "object", "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}
        }
    });
    let got = SchemaValidator::new(schema)
        .validate(json!({"list": [1.0, 2, 3e0], "inner": {"n": 4.0}}))
        .unwrap();
    assert_eq!(got, json!({"list": [1, 2, 3], "inner": {"n": 4}}));
    let typed: Vec<u64> = serde_json::from_value(got["list"].clone()).unwrap();
    assert_eq!(typed, [1, 2, 3]);
}

#[test]
fn a_huge_value_is_not_quoted_whole_in_the_message() {
    let huge = "x".repeat(140_000);
    let v = SchemaValidator::new(read_file_schema());
    let e = v
        .validate(json!({"absolute_path": "/a", "offset": huge}))
        .unwrap_err();
    assert!(e.message.len() < 1_000, "{} bytes", e.message.len());
    assert!(e.message.starts_with("offset: \"xxx"), "{}", e.message);
    assert!(e.message.contains("characters cut"), "{}", e.message);
}
