//! The JSON Schema subset Gemini's `functionDeclarations[].parameters` accepts (its
//! `Schema` object, a subset of OpenAPI 3.0), made from the full JSON Schema the tools
//! declare. Gemini refuses a whole request for one keyword it does not know, so:
//!
//! - `$ref` is replaced by what it points to in `$defs`/`definitions` (a cycle, or a
//!   reference that cannot be resolved, becomes an unconstrained object);
//! - `type: [T, "null"]` becomes `type: T, nullable: true`; several types become `anyOf`;
//! - `const` becomes a one-value `enum`; `oneOf` becomes `anyOf`; a one-element `allOf`
//!   is inlined, a longer one merged;
//! - `enum` keeps only string values (Gemini's enums are strings), `format` only the ones
//!   Gemini names, `required` only names among the properties;
//! - every other keyword (`$schema`, `additionalProperties`, `default`, `examples`,
//!   `exclusiveMinimum`, ...) is dropped: it narrows what the model may send, and the tool
//!   still validates its arguments itself.

use serde_json::{Map, Value, json};

/// Keywords kept as they are (after their values are made compliant).
const KEPT: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "items",
    "properties",
    "required",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "anyOf",
    "propertyOrdering",
];

/// The `format` values Gemini names.
const FORMATS: &[&str] = &["float", "double", "int32", "int64", "enum", "date-time"];

/// How deep references are followed: deeper is a cycle, or a schema no model needs.
const MAX_DEPTH: usize = 32;

/// `schema` in the subset Gemini accepts.
pub(crate) fn compliant(schema: &Value) -> Value {
    let defs = schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .cloned()
        .unwrap_or(Value::Null);
    let mut out = convert(schema, &defs, 0);
    // A function's parameters are an object, even when the tool declared nothing.
    if out.get("type").is_none() && out.get("anyOf").is_none() {
        out["type"] = json!("object");
    }
    out
}

fn convert(schema: &Value, defs: &Value, depth: usize) -> Value {
    let Some(obj) = schema.as_object() else {
        // `true` (anything) or a malformed schema: no constraint.
        return json!({});
    };
    if depth > MAX_DEPTH {
        return json!({"type": "object"});
    }
    if let Some(target) = obj.get("$ref").and_then(Value::as_str) {
        let name = target.rsplit('/').next().unwrap_or_default();
        return match defs.get(name) {
            Some(resolved) => {
                let mut out = convert(resolved, defs, depth + 1);
                if let Some(d) = obj.get("description") {
                    out["description"] = d.clone();
                }
                out
            }
            None => json!({"type": "object"}),
        };
    }
    let mut out = Map::new();
    for (key, value) in obj {
        match key.as_str() {
            "type" => set_type(&mut out, value),
            "const" => {
                if let Some(s) = value.as_str() {
                    out.insert("enum".into(), json!([s]));
                    out.entry("type").or_insert(json!("string"));
                }
            }
            "enum" => {
                let strings: Vec<Value> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|v| v.is_string())
                    .cloned()
                    .collect();
                if !strings.is_empty() {
                    out.insert("enum".into(), Value::Array(strings));
                }
            }
            "properties" => {
                let props: Map<String, Value> = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), convert(v, defs, depth + 1)))
                    .collect();
                out.insert("properties".into(), Value::Object(props));
            }
            "items" => {
                // A tuple form (`items` as an array) keeps its first schema.
                let item = value.as_array().and_then(|a| a.first()).unwrap_or(value);
                out.insert("items".into(), convert(item, defs, depth + 1));
            }
            "anyOf" | "oneOf" => {
                let variants = variants(value, defs, depth);
                if !variants.is_empty() {
                    out.insert("anyOf".into(), Value::Array(variants));
                }
            }
            "allOf" => merge_all_of(&mut out, value, defs, depth),
            "format" if value.as_str().is_some_and(|f| FORMATS.contains(&f)) => {
                out.insert(key.clone(), value.clone());
            }
            // Others (`uint`, `uri`, ...) Gemini refuses.
            "format" => {}
            k if KEPT.contains(&k) => {
                out.entry(k).or_insert_with(|| value.clone());
            }
            _ => {}
        }
    }
    keep_known_required(&mut out);
    fold_null_variant(&mut out);
    Value::Object(out)
}

/// `type` as one name: a list with `null` becomes `nullable`, a list of several becomes
/// `anyOf`; a lone `null` leaves the schema open.
fn set_type(out: &mut Map<String, Value>, value: &Value) {
    match value {
        Value::String(t) if t == "null" => {
            out.insert("nullable".into(), json!(true));
        }
        Value::String(_) => {
            out.insert("type".into(), value.clone());
        }
        Value::Array(types) => {
            let named: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            if named.contains(&"null") {
                out.insert("nullable".into(), json!(true));
            }
            let real: Vec<&str> = named.into_iter().filter(|t| *t != "null").collect();
            match real.as_slice() {
                [] => {}
                [one] => {
                    out.insert("type".into(), json!(one));
                }
                several => {
                    let any: Vec<Value> = several.iter().map(|t| json!({"type": t})).collect();
                    out.insert("anyOf".into(), Value::Array(any));
                }
            }
        }
        _ => {}
    }
}

fn variants(value: &Value, defs: &Value, depth: usize) -> Vec<Value> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| convert(v, defs, depth + 1))
        .collect()
}

/// `allOf`: each part's keywords added to the schema (properties and `required` joined).
fn merge_all_of(out: &mut Map<String, Value>, value: &Value, defs: &Value, depth: usize) {
    for part in variants(value, defs, depth) {
        let Value::Object(part) = part else { continue };
        for (k, v) in part {
            match (k.as_str(), out.get_mut(&k)) {
                ("properties", Some(Value::Object(mine))) => {
                    if let Value::Object(theirs) = v {
                        mine.extend(theirs);
                    }
                }
                ("required", Some(Value::Array(mine))) => {
                    if let Value::Array(theirs) = v {
                        mine.extend(theirs);
                    }
                }
                (_, Some(_)) => {}
                (_, None) => {
                    out.insert(k, v);
                }
            }
        }
    }
}

/// `required` names only properties that exist (Gemini refuses others).
fn keep_known_required(out: &mut Map<String, Value>) {
    let known: Vec<String> = out
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(Value::Array(required)) = out.get_mut("required") {
        required.retain(|r| r.as_str().is_some_and(|r| known.iter().any(|k| k == r)));
        if required.is_empty() {
            out.remove("required");
        }
    }
}

/// `anyOf: [X, {nullable}]` (an optional value, as schema generators write it) becomes
/// X with `nullable: true`.
fn fold_null_variant(out: &mut Map<String, Value>) {
    let Some(Value::Array(any)) = out.get("anyOf") else {
        return;
    };
    let is_null = |v: &Value| {
        v.as_object()
            .is_some_and(|o| o.len() == 1 && o.get("nullable") == Some(&json!(true)))
    };
    if any.len() != 2 || !any.iter().any(is_null) {
        return;
    }
    let Some(Value::Object(real)) = any.iter().find(|v| !is_null(v)).cloned() else {
        return;
    };
    out.remove("anyOf");
    for (k, v) in real {
        out.entry(k).or_insert(v);
    }
    out.insert("nullable".into(), json!(true));
}
