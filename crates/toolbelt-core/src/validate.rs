//! Checking the arguments of a call against its tool's JSON Schema.
//!
//! The engine is the `jsonschema` crate: draft-07 when a schema names no `$schema` (Qwen
//! Code's default), otherwise the draft it names (2020-12 included). Models are sloppy in a
//! few known ways, so a failed check is retried once after schema-guided coercion:
//! `"true"`/`"false"` where only a boolean fits, `"5"` where only a number fits, and
//! stringified JSON where only an object or array fits. A value whose schema also accepts
//! a string is never coerced. Messages name the JSON path and what was expected, e.g.
//! `absolute_path: 5 is not of type "string"`, and quote at most [`MAX_QUOTED_CHARS`]
//! characters of a value (a 140,000-character argument does not come back whole).
//!
//! Integers: JSON has one number type, so `1.0` is the integer 1 to JSON Schema (draft 6
//! on) but not to `serde`, which would refuse it as a float. Where the schema admits an
//! integer and no other number, an integral value written as a float (`1.0`, `1e3`, or
//! the string `"1.0"`) becomes that integer, consistently for every integer parameter of
//! every tool; `1.5` fails the schema with `1.5 is not of type "integer"`. Built-in
//! tools bound their integers with `maximum` (at most [`MAX_SAFE_INTEGER`], the largest
//! integer every JSON reader agrees on), so no tool's arithmetic sees 2^64-1.

use std::sync::OnceLock;

use jsonschema::{Draft, Validator};
use serde_json::{Map, Value};

use crate::ToolError;

/// The largest integer every JSON implementation represents exactly (2^53-1, the
/// `Number.MAX_SAFE_INTEGER` of JavaScript). Built-in tools use it as the `maximum` of
/// integer parameters that have no smaller natural bound.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Characters of one validation message kept (the engine quotes the whole value).
pub const MAX_QUOTED_CHARS: usize = 300;

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
    /// A validator for `schema`; nothing is compiled until the first use.
    pub fn new(schema: Value) -> Self {
        SchemaValidator {
            schema,
            compiled: OnceLock::new(),
        }
    }

    /// The schema as given.
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
            let mut args = args;
            integers_from_floats(&self.schema, &mut args);
            return Ok(args);
        }
        let mut coerced = args.clone();
        if coerce(&self.schema, &mut coerced) && validator.is_valid(&coerced) {
            integers_from_floats(&self.schema, &mut coerced);
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
            let message = cut_message(&e.to_string());
            if path.is_empty() {
                message
            } else {
                format!("{path}: {message}")
            }
        })
        .collect();
    lines.dedup();
    if lines.is_empty() {
        lines.push("the arguments do not match the parameter schema".to_string());
    }
    lines.join("; ")
}

/// One engine message, at most [`MAX_QUOTED_CHARS`] characters: its head and its tail,
/// which says what was wrong (`... is longer than 4096 characters`).
fn cut_message(message: &str) -> String {
    let count = message.chars().count();
    if count <= MAX_QUOTED_CHARS {
        return message.to_string();
    }
    let keep = MAX_QUOTED_CHARS / 2;
    let head: String = message.chars().take(keep).collect();
    let tail: String = message.chars().skip(count - keep).collect();
    format!(
        "{head} [... {} characters cut ...] {tail}",
        count - 2 * keep
    )
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

/// Whether a schema admits integers but no other numbers.
fn wants_integer(schema: &Value) -> bool {
    let types = admitted_types(schema);
    types.contains(&"integer") && !types.contains(&"number")
}

/// An integral float (`1.0`, `1e3`) as the integer it is, when it fits in 64 bits.
fn integral(n: f64) -> Option<Value> {
    if n.fract() != 0.0 || !n.is_finite() {
        return None;
    }
    // 2^63 and 2^64 are exact in f64; the comparisons keep the casts exact.
    if (0.0..18_446_744_073_709_551_616.0).contains(&n) {
        Some(Value::from(n as u64))
    } else if (-9_223_372_036_854_775_808.0..0.0).contains(&n) {
        Some(Value::from(n as i64))
    } else {
        None
    }
}

/// Rewrites integral floats to integers wherever the schema wants an integer, after the
/// arguments passed validation (which already accepts `1.0` as an integer).
fn integers_from_floats(schema: &Value, value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() && wants_integer(schema) => {
            if let Some(int) = n.as_f64().and_then(integral) {
                *value = int;
            }
        }
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|v| v.is_object());
            for (key, child) in map.iter_mut() {
                if let Some(child_schema) = properties.and_then(|p| p.get(key)).or(additional) {
                    integers_from_floats(child_schema, child);
                }
            }
        }
        Value::Array(items) => {
            let prefix = schema.get("prefixItems").and_then(Value::as_array);
            let rest = schema.get("items").filter(|v| v.is_object());
            for (i, child) in items.iter_mut().enumerate() {
                if let Some(child_schema) = prefix.and_then(|p| p.get(i)).or(rest) {
                    integers_from_floats(child_schema, child);
                }
            }
        }
        _ => {}
    }
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
    if types.contains(&"integer") {
        if let Ok(n) = t.parse::<u64>() {
            return Some(Value::from(n));
        }
        if let Ok(n) = t.parse::<i64>() {
            return Some(Value::from(n));
        }
        // "1.0" like 1.0; "1.5" stays a string and fails the schema.
        if !types.contains(&"number")
            && let Some(n) = t.parse::<f64>().ok().and_then(integral)
        {
            return Some(n);
        }
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
