//! `toolbelt tools lint`: every registered tool against the naming and description
//! guidelines of VS Code's Language Model Tool API and the limits model providers put on
//! function declarations.
//!
//! Errors are what a provider rejects or a model cannot use (a name outside
//! `[A-Za-z0-9_-]{1,64}`, two tools with one name, no description, a schema that does
//! not compile, is not an object or requires a property it does not define). Warnings are
//! the guidelines: `verb_noun` names, a description long enough to say what the tool
//! does, when to use it and its limits (and short enough not to crowd the context),
//! every parameter described, and no keyword that OpenAI's strict mode refuses.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::registry::{Origin, ToolRegistry};
use toolbelt_core::SchemaValidator;

/// The most characters a provider accepts in a function name.
pub const MAX_NAME_LEN: usize = 64;
/// Shorter than this, a description cannot say what, when and within which limits.
pub const MIN_DESCRIPTION_CHARS: usize = 40;
/// Longer than this, a description costs more context than it is worth.
pub const MAX_DESCRIPTION_CHARS: usize = 4096;

/// JSON Schema keywords that OpenAI's strict mode (structured outputs) does not accept.
pub const STRICT_MODE_UNSUPPORTED: &[&str] = &[
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "unevaluatedProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "unevaluatedItems",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
];

/// How bad a [`Finding`] is. Ordered: errors sort before warnings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// A provider would reject the declaration or a model could not use it; `tools lint` fails.
    Error,
    /// Against a guideline; the tool still works.
    Warning,
}

/// One thing a tool's declaration gets wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Registered name of the tool.
    pub tool: String,
    /// Error or warning.
    pub severity: Severity,
    /// A short stable name of the rule, such as `name-charset`.
    pub rule: &'static str,
    /// What is wrong and how to fix it, for a person.
    pub message: String,
}

/// Lints every tool of the registry, errors first, then by tool.
pub fn lint_registry(registry: &ToolRegistry) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut seen: HashMap<String, &str> = HashMap::new();
    for r in registry.all() {
        let decl = r.declaration();
        findings.extend(lint_declaration(
            &decl.name,
            &decl.description,
            &decl.parameters,
            // Only a built-in is believed: a declared `edit` is still asked for `verb_noun`.
            r.origin == Origin::BuiltIn && r.tool.keeps_legacy_name(),
        ));
        if let Some(first) = seen.insert(decl.name.to_ascii_lowercase(), r.name.as_str()) {
            let (severity, what) = if first == r.name {
                (Severity::Error, "the same name as")
            } else {
                (Severity::Warning, "a name that differs only in case from")
            };
            findings.push(Finding {
                tool: r.name.clone(),
                severity,
                rule: "name-unique",
                message: format!("has {what} \"{first}\"; a model cannot tell them apart"),
            });
        }
    }
    findings.sort_by(|a, b| (a.severity, &a.tool).cmp(&(b.severity, &b.tool)));
    findings
}

/// Lints one function declaration. `legacy_name`: the name is kept as Qwen Code spells
/// it (see [`Tool::keeps_legacy_name`](toolbelt_core::Tool::keeps_legacy_name)), so it
/// need not be `verb_noun`.
pub fn lint_declaration(
    name: &str,
    description: &str,
    schema: &Value,
    legacy_name: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut add = |severity, rule, message: String| {
        out.push(Finding {
            tool: name.to_string(),
            severity,
            rule,
            message,
        })
    };
    lint_name(name, legacy_name, &mut add);
    lint_description(description, &mut add);
    lint_schema(schema, &mut add);
    out
}

/// What [`lint_declaration`]'s steps report through: severity, rule, message.
type Add<'a> = dyn FnMut(Severity, &'static str, String) + 'a;

fn lint_name(name: &str, legacy_name: bool, add: &mut Add<'_>) {
    if name.is_empty()
        || name.chars().count() > MAX_NAME_LEN
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        add(
            Severity::Error,
            "name-charset",
            format!(
                "the name must be 1 to {MAX_NAME_LEN} characters of A-Z, a-z, 0-9, '_' and '-' (it has {})",
                name.chars().count()
            ),
        );
    }
    if !legacy_name && !is_verb_noun(name) {
        add(
            Severity::Warning,
            "name-verb-noun",
            "name the tool {verb}_{noun} in lower case, such as get_weather or read_file"
                .to_string(),
        );
    }
}

fn lint_description(description: &str, add: &mut Add<'_>) {
    let chars = description.trim().chars().count();
    if chars == 0 {
        add(
            Severity::Error,
            "description-missing",
            "the description is empty: a model picks tools by their descriptions".to_string(),
        );
    } else if chars < MIN_DESCRIPTION_CHARS {
        add(
            Severity::Warning,
            "description-length",
            format!(
                "the description has {chars} characters; say what the tool does, when to use it (and when not), and its limits"
            ),
        );
    } else if chars > MAX_DESCRIPTION_CHARS {
        add(
            Severity::Warning,
            "description-length",
            format!(
                "the description has {chars} characters (more than {MAX_DESCRIPTION_CHARS}); every request carries it"
            ),
        );
    }
}

fn lint_schema(schema: &Value, add: &mut Add<'_>) {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        add(
            Severity::Error,
            "schema-object",
            "the parameter schema must be an object schema (\"type\": \"object\")".to_string(),
        );
    }
    if let Err(why) = SchemaValidator::new(schema.clone()).compiled() {
        add(
            Severity::Error,
            "schema-compiles",
            format!("the parameter schema does not compile: {why}"),
        );
    }
    let mut walk = SchemaWalk::default();
    walk.schema(schema, "");
    for (pointer, missing) in walk.required_undefined {
        add(
            Severity::Error,
            "schema-required",
            format!("{pointer}: \"{missing}\" is required but not among the properties"),
        );
    }
    for pointer in walk.undescribed {
        add(
            Severity::Warning,
            "parameter-description",
            format!("{pointer} has no description: say what it is and how it changes the call"),
        );
    }
    for (pointer, keyword) in walk.strict_unsupported {
        add(
            Severity::Warning,
            "strict-mode",
            format!("{pointer} uses \"{keyword}\", which OpenAI's strict mode does not accept"),
        );
    }
}

/// `verb_noun`: lower case, at least two words joined by `_` (after an `mcp__server__`
/// prefix, which names where the tool comes from).
fn is_verb_noun(name: &str) -> bool {
    let own = name
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__").map(|(_, tool)| tool))
        .unwrap_or(name);
    let words: Vec<&str> = own.split('_').collect();
    words.len() >= 2
        && words.iter().all(|w| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

/// What a walk through a schema finds, each with its JSON pointer.
#[derive(Default)]
struct SchemaWalk {
    required_undefined: Vec<(String, String)>,
    undescribed: Vec<String>,
    strict_unsupported: Vec<(String, String)>,
}

impl SchemaWalk {
    fn schema(&mut self, schema: &Value, pointer: &str) {
        let Some(obj) = schema.as_object() else {
            return;
        };
        for keyword in STRICT_MODE_UNSUPPORTED {
            if obj.contains_key(*keyword) {
                self.strict_unsupported
                    .push((display(pointer), (*keyword).to_string()));
            }
        }
        let properties = obj.get("properties").and_then(Value::as_object);
        if let Some(required) = obj.get("required").and_then(Value::as_array) {
            for name in required.iter().filter_map(Value::as_str) {
                if !properties.is_some_and(|p| p.contains_key(name)) {
                    self.required_undefined
                        .push((display(pointer), name.to_string()));
                }
            }
        }
        if let Some(properties) = properties {
            for (name, sub) in properties {
                let at = format!("{pointer}/properties/{}", escape(name));
                let described = sub
                    .get("description")
                    .and_then(Value::as_str)
                    .is_some_and(|d| !d.trim().is_empty());
                if !described && sub.get("$ref").is_none() {
                    self.undescribed
                        .push(format!("parameter \"{name}\" ({at})"));
                }
                self.schema(sub, &at);
            }
        }
        if let Some(items) = obj.get("items") {
            self.schema(items, &format!("{pointer}/items"));
        }
        for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
            if let Some(list) = obj.get(key).and_then(Value::as_array) {
                for (i, sub) in list.iter().enumerate() {
                    self.schema(sub, &format!("{pointer}/{key}/{i}"));
                }
            }
        }
        for key in ["$defs", "definitions"] {
            if let Some(defs) = obj.get(key).and_then(Value::as_object) {
                for (name, sub) in defs {
                    self.schema(sub, &format!("{pointer}/{key}/{}", escape(name)));
                }
            }
        }
    }
}

fn display(pointer: &str) -> String {
    if pointer.is_empty() {
        "the schema".to_string()
    } else {
        pointer.to_string()
    }
}

/// A JSON pointer segment (RFC 6901).
fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests;
