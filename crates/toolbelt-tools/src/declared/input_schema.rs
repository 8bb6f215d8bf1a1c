//! The `inputSchema` of a tool entry, checked against VS Code's
//! `vscode://schemas/toolsParameters` (a subset of draft-07).

use serde_json::{Value, json};
use toolbelt_core::validate::describe_type;

use super::manifest::printable;

/// The draft-07 keywords of VS Code's `vscode://schemas/toolsParameters`.
const SCHEMA_KEYWORDS: &[&str] = &[
    "$id",
    "$schema",
    "$ref",
    "$comment",
    "title",
    "description",
    "readOnly",
    "writeOnly",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "additionalItems",
    "items",
    "maxItems",
    "minItems",
    "uniqueItems",
    "contains",
    "maxProperties",
    "minProperties",
    "required",
    "additionalProperties",
    "definitions",
    "properties",
    "patternProperties",
    "dependencies",
    "propertyNames",
    "enum",
    "type",
    "format",
    "contentMediaType",
    "contentEncoding",
    "if",
    "then",
    "else",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
];

const SCHEMA_TYPES: &[&str] = &[
    "array", "boolean", "integer", "null", "number", "object", "string",
];

/// VS Code's `vscode://schemas/toolsParameters`: an object at the top level, only the
/// listed draft-07 keywords there, `type` from the JSON types. Compiling is left to the
/// first call and to `tools lint`.
///
/// The keyword list is applied at the top level only: nested property schemas commonly
/// carry `default` or `examples` (VS Code's own sample does), and VS Code's meta-schema
/// does not close the nested ones either.
pub(crate) fn check_schema(schema: &Value) -> Result<Value, String> {
    let Some(map) = schema.as_object() else {
        return Err(format!(
            "inputSchema must be an object at the top level, not {}",
            describe_type(schema)
        ));
    };
    if let Some(key) = map.keys().find(|k| !SCHEMA_KEYWORDS.contains(&k.as_str())) {
        return Err(format!(
            "inputSchema: \"{}\" is not one of the draft-07 keywords VS Code accepts",
            printable(key, 60)
        ));
    }
    check_types(schema, "inputSchema", 0)?;
    if let Some(t) = map.get("type")
        && t != "object"
    {
        return Err(format!(
            "inputSchema must be an object at the top level (\"type\": \"object\"), not {t}"
        ));
    }
    let mut schema = schema.clone();
    if schema.get("type").is_none() {
        schema["type"] = json!("object");
    }
    // Not compiled here: that is most of the start-up cost with hundreds of declared
    // tools. The registry compiles a schema on the tool's first call and `tools lint`
    // reports one that does not compile (rule `schema-compiles`).
    Ok(schema)
}

/// Every `type` in the schema is a JSON type or a unique non-empty array of them.
fn check_types(schema: &Value, at: &str, depth: usize) -> Result<(), String> {
    // A schema nests as deep as its author wrote it; past this, the compiler decides.
    if depth > 64 {
        return Ok(());
    }
    let Some(map) = schema.as_object() else {
        if let Value::Array(items) = schema {
            for item in items {
                check_types(item, at, depth + 1)?;
            }
        }
        return Ok(());
    };
    if let Some(t) = map.get("type") {
        let ok = match t {
            Value::String(s) => SCHEMA_TYPES.contains(&s.as_str()),
            Value::Array(items) => {
                !items.is_empty()
                    && items
                        .iter()
                        .all(|i| i.as_str().is_some_and(|s| SCHEMA_TYPES.contains(&s)))
                    && items
                        .iter()
                        .enumerate()
                        .all(|(n, i)| !items[..n].contains(i))
            }
            _ => false,
        };
        if !ok {
            return Err(format!(
                "{at}: \"type\" must be one of {} or a unique non-empty array of them, not {t}",
                SCHEMA_TYPES.join(", ")
            ));
        }
    }
    for (key, value) in map {
        match key.as_str() {
            "properties" | "patternProperties" | "definitions" | "dependencies" => {
                if let Value::Object(children) = value {
                    for (name, child) in children {
                        check_types(child, &format!("{at}.{key}.{name}"), depth + 1)?;
                    }
                }
            }
            "items"
            | "additionalItems"
            | "additionalProperties"
            | "contains"
            | "propertyNames"
            | "if"
            | "then"
            | "else"
            | "not"
            | "allOf"
            | "anyOf"
            | "oneOf" => {
                check_types(value, &format!("{at}.{key}"), depth + 1)?;
            }
            _ => {}
        }
    }
    Ok(())
}
