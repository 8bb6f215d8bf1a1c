//! Parameter schemas derived from the tools' typed `Params`, so the schema the model
//! reads and the type a call is parsed into cannot disagree.
//!
//! `schemars` writes a schema for the type; [`schema_for`] then shapes it the way the
//! tools have always shown it: subschemas inline (no `$defs`), no `$schema` or
//! `title`, no `format` of integer widths, no `default` (the descriptions say the
//! defaults in words), and an optional field as its plain type (an `Option` field is
//! left out of `required`; a `null` value is not offered to the model).

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// The schema the model reads for parameters of type `T`.
pub(crate) fn schema_for<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    tidy(&mut schema);
    schema
}

/// Removes what `schemars` adds beyond the tools' schemas, in every subschema.
fn tidy(schema: &mut Value) {
    let Value::Object(obj) = schema else {
        return;
    };
    for key in ["$schema", "title", "format", "default"] {
        obj.shift_remove(key);
    }
    unwrap_nullable_any_of(obj);
    if let Some(Value::Array(types)) = obj.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            obj.insert("type".to_owned(), only);
        }
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::Object(properties)) = obj.get_mut("properties") {
        properties.values_mut().for_each(tidy);
    }
    if let Some(items) = obj.get_mut("items") {
        tidy(items);
    }
    in_usual_order(obj);
}

/// Puts the keys in the order the hand-written schemas had (`type` first, then the
/// constraints, the description, the object's parts): not needed for meaning, but the
/// text the model reads stays as it was.
fn in_usual_order(obj: &mut Map<String, Value>) {
    let rank = |key: &str, value: &Value| match key {
        "type" => 0,
        "enum" => 1,
        "minimum" => 2,
        "maximum" => 3,
        // A list of plain values shows its items first; a list of objects last.
        "items" if value.get("properties").is_none() => 4,
        "minItems" => 5,
        "maxItems" => 6,
        "description" => 7,
        "items" => 8,
        "properties" => 9,
        "required" => 10,
        "additionalProperties" => 11,
        _ => 12,
    };
    let mut entries: Vec<(String, Value)> = std::mem::take(obj).into_iter().collect();
    entries.sort_by_key(|(key, value)| rank(key, value));
    obj.extend(entries);
}

/// `{"anyOf": [S, {"type": "null"}], ...}` (an optional object or enum) becomes S with
/// the other keys beside it.
fn unwrap_nullable_any_of(obj: &mut Map<String, Value>) {
    let Some(Value::Array(choices)) = obj.get("anyOf") else {
        return;
    };
    let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
    let [a, b] = choices.as_slice() else {
        return;
    };
    let inner = match (is_null(a), is_null(b)) {
        (false, true) => a.clone(),
        (true, false) => b.clone(),
        _ => return,
    };
    let Value::Object(inner) = inner else {
        return;
    };
    let rest = std::mem::take(obj);
    *obj = inner;
    for (key, value) in rest {
        if key != "anyOf" {
            obj.insert(key, value);
        }
    }
}
