//! Merging settings layers with Qwen Code's per-key strategies.

use serde_json::{Map, Value};

/// Keys whose arrays are the union of all layers (no duplicates).
const UNION: &[&str] = &[
    "permissions.allow",
    "permissions.ask",
    "permissions.deny",
    "tools.exclude",
];
/// Keys whose arrays are concatenated, lower layers first.
const CONCAT: &[&str] = &["context.includeDirectories", "mcp.allowed", "mcp.excluded"];
/// Keys whose objects merge one level deep: each entry is taken whole from the highest
/// layer that has it.
const SHALLOW: &[&str] = &["mcpServers", "env", "lsp.servers"];

/// Merges layers given lowest first.
pub fn merge_layers(layers: Vec<Value>) -> Value {
    let mut merged = Value::Object(Map::new());
    for layer in layers {
        merge_into(&mut merged, layer, "");
    }
    merged
}

fn merge_into(base: &mut Value, over: Value, path: &str) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                let child_path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match base.get_mut(&key) {
                    Some(existing) if SHALLOW.contains(&child_path.as_str()) => {
                        if let (Value::Object(e), Value::Object(o)) = (&mut *existing, &value) {
                            for (k, v) in o {
                                e.insert(k.clone(), v.clone());
                            }
                        } else {
                            *existing = value;
                        }
                    }
                    Some(Value::Array(existing)) if UNION.contains(&child_path.as_str()) => {
                        if let Value::Array(items) = value {
                            for item in items {
                                if !existing.contains(&item) {
                                    existing.push(item);
                                }
                            }
                        }
                    }
                    Some(Value::Array(existing)) if CONCAT.contains(&child_path.as_str()) => {
                        if let Value::Array(items) = value {
                            existing.extend(items);
                        }
                    }
                    Some(existing @ Value::Object(_)) if value.is_object() => {
                        merge_into(existing, value, &child_path);
                    }
                    _ => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, over) => *base = over,
    }
}
