//! Checking the arguments of a call against its tool's JSON Schema.
//!
//! The engine is the `jsonschema` crate: draft-07 when a schema names no `$schema` (Qwen
//! Code's default), otherwise the draft it names (2020-12 included). Models are sloppy in a
//! few known ways, so a failed check is retried once after schema-guided coercion:
//! `"true"`/`"false"` where only a boolean fits, `"5"` where only a number fits, and
//! stringified JSON where only an object or array fits. A value whose schema also accepts
//! a string is never coerced. Messages name the JSON path and what was expected, e.g.
//! `absolute_path: 5 is not of type "string"`.

use std::sync::OnceLock;

use jsonschema::{Draft, Validator};
use serde_json::{Map, Value};

use crate::result::ToolError;

/// Parses the raw argument text of a function call. Empty text means no arguments.
/// Malformed JSON is an error that gives the position.
pub fn parse_arguments(raw: &str) -> Result<Value, ToolError> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_str(raw).map_err(|e| {
        ToolError::invalid_params(format!(
            "the arguments are not valid JSON: {e}. Send one JSON object with the parameters."
        ))
    })
}

/// A compiled schema, compiled on first use.
#[derive(Debug)]
pub struct SchemaValidator {
    schema: Value,
    compiled: OnceLock<Result<Validator, String>>,
}

impl Clone for SchemaValidator {
    fn clone(&self) -> Self {
        SchemaValidator::new(self.schema.clone())
    }
}

impl SchemaValidator {
    pub fn new(schema: Value) -> Self {
        SchemaValidator {
            schema,
            compiled: OnceLock::new(),
        }
    }

    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The compiled schema, or why it does not compile.
    pub fn compiled(&self) -> Result<&Validator, &str> {
        self.compiled
            .get_or_init(|| compile(&self.schema))
            .as_ref()
            .map_err(String::as_str)
    }

    /// Validates `args`, coercing sloppy values where the schema leaves no doubt.
    /// Returns the (possibly coerced) arguments.
    ///
    /// A schema that does not compile skips validation with a warning, as Qwen Code does:
    /// the tool's own checks still run, and `toolbelt tools lint` reports the schema.
    pub fn validate(&self, args: Value) -> Result<Value, ToolError> {
        let args = match args {
            Value::Null => Value::Object(Map::new()),
            Value::String(s) if s.trim().is_empty() => Value::Object(Map::new()),
            Value::String(s) if s.trim_start().starts_with('{') => {
                serde_json::from_str(&s).unwrap_or(Value::String(s))
            }
            other => other,
        };
        if !args.is_object() {
            return Err(ToolError::invalid_params(format!(
                "the arguments must be a JSON object, not {}",
                describe_type(&args)
            )));
        }
        let validator = match self.compiled() {
            Ok(v) => v,
            Err(why) => {
                tracing::warn!("skipping argument validation: the schema does not compile: {why}");
                return Ok(args);
            }
        };
        if validator.is_valid(&args) {
            return Ok(args);
        }
        let mut coerced = args.clone();
        if coerce(&self.schema, &mut coerced) && validator.is_valid(&coerced) {
            return Ok(coerced);
        }
        Err(ToolError::invalid_params(error_text(validator, &coerced)))
    }
}

fn compile(schema: &Value) -> Result<Validator, String> {
    let mut options = jsonschema::options();
    if schema.get("$schema").is_none() {
        options = options.with_draft(Draft::Draft7);
    }
    options.build(schema).map_err(|e| e.to_string())
}

fn error_text(validator: &Validator, args: &Value) -> String {
    let mut lines: Vec<String> = validator
        .iter_errors(args)
        .map(|e| {
            let path = pointer_to_path(e.instance_path().as_str());
            if path.is_empty() {
                e.to_string()
            } else {
                format!("{path}: {e}")
            }
        })
        .collect();
    lines.dedup();
    if lines.is_empty() {
        lines.push("the arguments do not match the parameter schema".to_string());
    }
    lines.join("; ")
}

/// `/todos/0/status` → `todos[0].status`.
fn pointer_to_path(pointer: &str) -> String {
    let mut out = String::new();
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{segment}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&segment);
        }
    }
    out
}

/// "a string", "an object", ...: a JSON value's type for messages.
pub fn describe_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The JSON types a schema admits, looking through `anyOf`/`oneOf`. Empty when the
/// schema does not say (then nothing is coerced).
fn admitted_types(schema: &Value) -> Vec<&str> {
    let mut types = Vec::new();
    match schema.get("type") {
        Some(Value::String(t)) => types.push(t.as_str()),
        Some(Value::Array(ts)) => types.extend(ts.iter().filter_map(Value::as_str)),
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            for branch in branches {
                types.extend(admitted_types(branch));
            }
        }
    }
    types
}

/// Rewrites sloppy values in place where the schema leaves no doubt. Returns whether
/// anything changed.
fn coerce(schema: &Value, value: &mut Value) -> bool {
    let mut changed = false;
    if let Value::String(s) = value {
        let types = admitted_types(schema);
        if !types.is_empty()
            && !types.contains(&"string")
            && let Some(new) = coerce_string(s, &types)
        {
            *value = new;
            changed = true;
        }
    }
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|v| v.is_object());
            for (key, child) in map.iter_mut() {
                let child_schema = properties.and_then(|p| p.get(key)).or(additional);
                if let Some(child_schema) = child_schema {
                    changed |= coerce(child_schema, child);
                }
            }
        }
        Value::Array(items) => {
            let prefix = schema.get("prefixItems").and_then(Value::as_array);
            let rest = schema.get("items").filter(|v| v.is_object());
            for (i, child) in items.iter_mut().enumerate() {
                let child_schema = prefix.and_then(|p| p.get(i)).or(rest);
                if let Some(child_schema) = child_schema {
                    changed |= coerce(child_schema, child);
                }
            }
        }
        _ => {}
    }
    changed
}

fn coerce_string(s: &str, types: &[&str]) -> Option<Value> {
    let t = s.trim();
    if types.contains(&"boolean") {
        match t {
            "true" => return Some(Value::Bool(true)),
            "false" => return Some(Value::Bool(false)),
            _ => {}
        }
    }
    if types.contains(&"integer")
        && let Ok(n) = t.parse::<i64>()
    {
        return Some(Value::from(n));
    }
    if types.contains(&"number")
        && let Ok(n) = t.parse::<f64>()
        && let Some(n) = serde_json::Number::from_f64(n)
    {
        return Some(Value::Number(n));
    }
    let wants_object = types.contains(&"object") && t.starts_with('{');
    let wants_array = types.contains(&"array") && t.starts_with('[');
    if (wants_object || wants_array)
        && let Ok(parsed) = serde_json::from_str::<Value>(t)
        && parsed.is_object() == wants_object
    {
        return Some(parsed);
    }
    if types.contains(&"null") && t == "null" {
        return Some(Value::Null);
    }
    None
}

#[cfg(test)]
mod tests;
