//! The `inputSchema` of a tool entry, checked against VS Code's
//! `vscode://schemas/toolsParameters` (a subset of draft-07): the draft-07 meta-schema as
//! `jsonschema` knows it, and at the top level only the keywords that subset names.

use jsonschema::error::ValidationErrorKind;
use jsonschema::{Draft, ValidationError};
use serde_json::{Value, json};
use toolbelt_core::describe_type;

use super::manifest::printable;

/// The draft-07 annotations VS Code's subset adds to the validation keywords `jsonschema`
/// knows (`Draft::is_known_keyword`); `default` and `examples` are not among them.
const ANNOTATIONS: &[&str] = &["$comment", "title", "description", "readOnly", "writeOnly"];

/// VS Code's `vscode://schemas/toolsParameters`: an object at the top level, only
/// draft-07 keywords there, and valid under draft-07's meta-schema. Compiling is left to
/// the first call and to `tools lint`.
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
    if let Some(key) = map
        .keys()
        .find(|k| !Draft::Draft7.is_known_keyword(k) && !ANNOTATIONS.contains(&k.as_str()))
    {
        return Err(format!(
            "inputSchema: \"{}\" is not one of the draft-07 keywords VS Code accepts",
            printable(key, 60)
        ));
    }
    check_meta_schema(schema)?;
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

/// The first draft-07 meta-schema violation, named by its place (`inputSchema.properties.f`).
/// A `format` one (a `pattern` that is no regular expression) is left to compiling, so a
/// tool with one loads and `tools lint` reports it.
fn check_meta_schema(schema: &Value) -> Result<(), String> {
    let meta = jsonschema::draft7::meta::validator();
    let Some(error) = meta
        .iter_errors(schema)
        .find(|e| !matches!(e.kind(), ValidationErrorKind::Format { .. }))
    else {
        return Ok(());
    };
    Err(describe(&error))
}

fn describe(error: &ValidationError<'_>) -> String {
    let mut at = String::from("inputSchema");
    let segments: Vec<String> = error
        .instance_path()
        .iter()
        .map(|s| printable(&s.to_string(), 60))
        .collect();
    // The meta-schema's own `type` keyword (not a property that happens to be called so).
    let bad_type = error
        .schema_path()
        .as_str()
        .starts_with("/properties/type/");
    let end = if bad_type {
        segments.len().saturating_sub(1)
    } else {
        segments.len()
    };
    for segment in &segments[..end] {
        at.push('.');
        at.push_str(segment);
    }
    if bad_type {
        format!(
            "{at}: \"type\" must be one of array, boolean, integer, null, number, object, \
             string or a unique non-empty array of them, not {}",
            error.instance()
        )
    } else {
        format!("{at}: {}", error.masked())
    }
}
