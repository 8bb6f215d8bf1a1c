//! Reading one manifest: VS Code's tool and tool-set entries, checked as VS Code's
//! contribution handler checks them, and the bindings that say what runs.
//!
//! Every problem is a warning that names the file, the entry and the rule; the bad entry
//! is skipped and the rest of the file still loads. Nothing here panics on any JSON
//! (a property test feeds it random values).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use toolbelt_config::when;
use toolbelt_core::describe_type;

use super::binding::{Binding, parse_binding};
use super::input_schema::check_schema;

/// Where a manifest was found: workspace manifests lose their commands in an untrusted
/// folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// `<project>/.qwen/tools/`.
    Workspace,
    /// `~/.qwen/tools/`.
    User,
    /// An entry of settings `tools.manifests`.
    Configured,
}

/// One tool entry that passed every check, with its binding.
#[derive(Debug, Clone)]
pub(crate) struct ToolEntry {
    pub name: String,
    pub display_name: String,
    pub model_description: String,
    /// `toolReferenceName`, whether or not the tool can be referenced in a prompt (tool
    /// sets resolve their members by it).
    pub tool_reference_name: Option<String>,
    pub can_be_referenced: bool,
    pub schema: Value,
    pub when: Option<when::Expr>,
    pub binding: Binding,
    pub file: PathBuf,
    pub scope: Scope,
}

/// One tool-set entry that passed its own checks; members are resolved later, across
/// every manifest.
#[derive(Debug, Clone)]
pub(crate) struct SetEntry {
    /// The reference name (`referenceName` when given, else `name`).
    pub name: String,
    pub description: String,
    pub members: Vec<String>,
    pub file: PathBuf,
}

#[derive(Debug, Default)]
pub(crate) struct ParsedManifest {
    pub tools: Vec<ToolEntry>,
    pub sets: Vec<SetEntry>,
    pub warnings: Vec<String>,
}

/// The properties VS Code's schema allows in a tool entry (`additionalProperties: false`).
const TOOL_PROPERTIES: &[&str] = &[
    "name",
    "displayName",
    "modelDescription",
    "userDescription",
    "toolReferenceName",
    "legacyToolReferenceFullNames",
    "canBeReferencedInPrompt",
    "icon",
    "tags",
    "inputSchema",
    "when",
];

const SET_PROPERTIES: &[&str] = &[
    "name",
    "referenceName",
    "legacyFullNames",
    "description",
    "icon",
    "tools",
];

const RESERVED_PREFIXES: &[&str] = &["copilot_", "vscode_"];

/// `^[\w-]+$` with JavaScript's `\w` (ASCII letters, digits, `_`).
pub(crate) fn is_word_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn reserved_prefix(s: &str) -> Option<&'static str> {
    RESERVED_PREFIXES.iter().copied().find(|p| s.starts_with(p))
}

/// Reads the entries of one manifest. `tools` and `sets` are the two arrays (VS Code's
/// `contributes.languageModelTools` / `languageModelToolSets`, or the same keys at the
/// top of a toolbelt manifest); `bindings` maps tool names to bindings, read from
/// `bindings_file` (the manifest itself or the `toolbelt.json` beside a `package.json`).
pub(crate) struct ManifestInput<'a> {
    pub file: &'a Path,
    pub scope: Scope,
    pub tools: Option<&'a Value>,
    pub sets: Option<&'a Value>,
    pub bindings: Option<&'a Value>,
    pub bindings_file: &'a Path,
}

pub(crate) fn parse_manifest(input: ManifestInput<'_>) -> ParsedManifest {
    let mut out = ParsedManifest::default();
    let empty = Map::new();
    let bindings = match input.bindings {
        None => &empty,
        Some(Value::Object(map)) => map,
        Some(other) => {
            out.warnings.push(format!(
                "{}: \"bindings\" must be an object of tool name to binding, not {}; no tool of this file has a binding",
                input.bindings_file.display(),
                describe_type(other)
            ));
            &empty
        }
    };
    let mut reader = Reader {
        file: input.file.display().to_string(),
        dir: input
            .file
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
        input: &input,
        bindings,
        seen_names: Vec::new(),
        out,
    };
    reader.read_tools();
    reader.warn_unused_bindings();
    reader.read_sets();
    reader.out
}

/// One manifest being read: its entries go to `out`, with a warning for each one
/// skipped.
struct Reader<'a> {
    input: &'a ManifestInput<'a>,
    /// The manifest's path, for warnings.
    file: String,
    /// The manifest's directory, against which relative programs resolve.
    dir: PathBuf,
    bindings: &'a Map<String, Value>,
    seen_names: Vec<String>,
    out: ParsedManifest,
}

impl Reader<'_> {
    fn read_tools(&mut self) {
        let file = &self.file;
        match self.input.tools {
            None | Some(Value::Null) => {}
            Some(Value::Array(entries)) => {
                for (i, entry) in entries.iter().enumerate() {
                    self.read_tool(entry, &entry_label(entry, "languageModelTools", i));
                }
            }
            Some(other) => self.out.warnings.push(format!(
                "{file}: languageModelTools must be an array, not {}; no tool of this file loads",
                describe_type(other)
            )),
        }
    }

    /// One entry of `languageModelTools`, `at` its label in warnings.
    fn read_tool(&mut self, entry: &Value, at: &str) {
        let (file, input) = (&self.file, self.input);
        let checked = match check_tool(entry) {
            Err(rule) => {
                let warning = format!("{file}: tool {at}: {rule}; the tool is skipped");
                return self.out.warnings.push(warning);
            }
            Ok(checked) => checked,
        };
        for warning in &checked.warnings {
            self.out
                .warnings
                .push(format!("{file}: tool {at}: {warning}"));
        }
        if self.seen_names.contains(&checked.name) {
            return self.out.warnings.push(format!(
                "{file}: tool {at}: the name is declared twice in this file; the second one is skipped"
            ));
        }
        let Some(raw) = self.bindings.get(&checked.name) else {
            return self.out.warnings.push(format!(
                "{file}: tool {at}: no binding: add one to {} (\"bindings\": {{\"{}\": {{\"command\": [...]}}}}); the tool is skipped",
                binding_hint(input.bindings_file, input.file),
                checked.name
            ));
        };
        match parse_binding(raw, &self.dir) {
            Err(rule) => self.out.warnings.push(format!(
                "{}: binding of tool {at}: {rule}; the tool is skipped",
                input.bindings_file.display()
            )),
            Ok(binding) => {
                self.seen_names.push(checked.name.clone());
                self.out.tools.push(ToolEntry {
                    name: checked.name,
                    display_name: checked.display_name,
                    model_description: checked.model_description,
                    tool_reference_name: checked.tool_reference_name,
                    can_be_referenced: checked.can_be_referenced,
                    schema: checked.schema,
                    when: checked.when,
                    binding,
                    file: input.file.to_path_buf(),
                    scope: input.scope,
                });
            }
        }
    }

    /// A binding of a tool the manifest does not declare is a warning.
    fn warn_unused_bindings(&mut self) {
        let (file, input) = (&self.file, self.input);
        for name in self.bindings.keys() {
            let declared = input
                .tools
                .and_then(Value::as_array)
                .is_some_and(|t| t.iter().any(|e| e.get("name") == Some(&json!(name))));
            if !declared {
                self.out.warnings.push(format!(
                    "{}: binding \"{name}\": no tool of that name is declared in {file}; it is ignored",
                    input.bindings_file.display()
                ));
            }
        }
    }

    fn read_sets(&mut self) {
        let (file, input) = (&self.file, self.input);
        match input.sets {
            None | Some(Value::Null) => {}
            Some(Value::Array(entries)) => {
                for (i, entry) in entries.iter().enumerate() {
                    let at = entry_label(entry, "languageModelToolSets", i);
                    match check_set(entry) {
                        Err(rule) => self
                            .out
                            .warnings
                            .push(format!("{file}: tool set {at}: {rule}; the set is skipped")),
                        Ok((name, description, members)) => self.out.sets.push(SetEntry {
                            name,
                            description,
                            members,
                            file: input.file.to_path_buf(),
                        }),
                    }
                }
            }
            Some(other) => self.out.warnings.push(format!(
                "{file}: languageModelToolSets must be an array, not {}; no tool set of this file loads",
                describe_type(other)
            )),
        }
    }
}

fn binding_hint(bindings_file: &Path, file: &Path) -> String {
    if bindings_file == file {
        "\"bindings\" in this file".to_string()
    } else {
        "toolbelt.json beside it".to_string()
    }
}

/// `'name'` when the entry has a string name, else its position.
fn entry_label(entry: &Value, array: &str, i: usize) -> String {
    match entry.get("name").and_then(Value::as_str) {
        Some(name) => format!("'{}' ({array}[{i}])", printable(name, 80)),
        None => format!("{array}[{i}]"),
    }
}

/// A name from a file, fit for one line of a warning.
pub(crate) fn printable(text: &str, max: usize) -> String {
    text.chars()
        .take(max)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

struct CheckedTool {
    name: String,
    display_name: String,
    model_description: String,
    tool_reference_name: Option<String>,
    can_be_referenced: bool,
    schema: Value,
    when: Option<when::Expr>,
    warnings: Vec<String>,
}

/// An optional string property; another type is the rule broken.
pub(super) fn string_field(map: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "\"{key}\" must be a string, not {}",
            describe_type(other)
        )),
    }
}

/// VS Code's checks of one `languageModelTools` entry. `Err` is the rule broken.
fn check_tool(entry: &Value) -> Result<CheckedTool, String> {
    let Some(map) = entry.as_object() else {
        return Err(format!(
            "an entry must be an object, not {}",
            describe_type(entry)
        ));
    };
    check_properties(map)?;
    let (name, display_name, model_description) = check_names(map)?;
    let (tool_reference_name, can_be_referenced) = check_reference(map)?;
    let mut warnings = Vec::new();
    check_tags(map, &mut warnings)?;
    string_field(map, "userDescription")?;
    check_icon(map)?;
    let schema = match map.get("inputSchema") {
        None => json!({"type": "object", "properties": {}}),
        Some(schema) => check_schema(schema)?,
    };
    let when = when_field(map, &mut warnings)?;
    Ok(CheckedTool {
        name,
        display_name,
        model_description,
        tool_reference_name,
        can_be_referenced,
        schema,
        when,
        warnings,
    })
}

/// No property outside VS Code's schema.
fn check_properties(map: &Map<String, Value>) -> Result<(), String> {
    let unknown: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| !TOOL_PROPERTIES.contains(k))
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "unknown propert{} {} (VS Code's schema allows no other properties; put toolbelt's settings in the binding)",
            if unknown.len() == 1 { "y" } else { "ies" },
            unknown
                .iter()
                .map(|k| format!("\"{}\"", printable(k, 60)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(())
}

/// `name`, `displayName` and `modelDescription`, all three required.
fn check_names(map: &Map<String, Value>) -> Result<(String, String, String), String> {
    let name = string_field(map, "name")?;
    let display_name = string_field(map, "displayName")?;
    let model_description = string_field(map, "modelDescription")?;
    let (Some(name), Some(display_name), Some(model_description)) = (
        name.filter(|s| !s.is_empty()),
        display_name.filter(|s| !s.is_empty()),
        model_description.filter(|s| !s.is_empty()),
    ) else {
        return Err(
            "cannot register a tool without name, modelDescription, and displayName".to_string(),
        );
    };
    if !is_word_name(&name) {
        return Err("invalid id: the name must match ^[\\w-]+$".to_string());
    }
    if let Some(prefix) = reserved_prefix(&name) {
        return Err(format!(
            "the name prefix \"{prefix}\" is reserved (VS Code allows it only with a proposed API)"
        ));
    }
    Ok((name, display_name, model_description))
}

/// `toolReferenceName` and `canBeReferencedInPrompt`.
fn check_reference(map: &Map<String, Value>) -> Result<(Option<String>, bool), String> {
    let tool_reference_name = string_field(map, "toolReferenceName")?;
    if let Some(reference) = &tool_reference_name
        && !is_word_name(reference)
    {
        return Err("toolReferenceName must match ^[\\w-]+$ (no whitespace)".to_string());
    }
    let can_be_referenced = match map.get("canBeReferencedInPrompt") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(format!(
                "\"canBeReferencedInPrompt\" must be a boolean, not {}",
                describe_type(other)
            ));
        }
    };
    if can_be_referenced && tool_reference_name.is_none() {
        return Err(
            "toolReferenceName is required when canBeReferencedInPrompt is true".to_string(),
        );
    }
    if map.contains_key("legacyToolReferenceFullNames") {
        return Err(
            "legacyToolReferenceFullNames needs VS Code's proposed API chatParticipantPrivate, which manifests cannot enable"
                .to_string(),
        );
    }
    Ok((tool_reference_name, can_be_referenced))
}

/// `tags`: strings; a reserved prefix is a warning.
fn check_tags(map: &Map<String, Value>, warnings: &mut Vec<String>) -> Result<(), String> {
    match map.get("tags") {
        None => {}
        Some(Value::Array(tags)) => {
            for tag in tags {
                match tag {
                    Value::String(t) => {
                        if let Some(prefix) = reserved_prefix(t) {
                            warnings.push(format!(
                                "tag \"{}\" uses the reserved prefix \"{prefix}\" (the tool still loads)",
                                printable(t, 60)
                            ));
                        }
                    }
                    other => {
                        return Err(format!(
                            "\"tags\" must hold strings, not {}",
                            describe_type(other)
                        ));
                    }
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "\"tags\" must be an array of strings, not {}",
                describe_type(other)
            ));
        }
    }
    Ok(())
}

/// `icon`: a path or a light and a dark one.
fn check_icon(map: &Map<String, Value>) -> Result<(), String> {
    match map.get("icon") {
        None | Some(Value::String(_)) => {}
        Some(Value::Object(icon))
            if icon.get("light").is_some_and(Value::is_string)
                && icon.get("dark").is_some_and(Value::is_string) => {}
        Some(_) => {
            return Err(
                "\"icon\" must be a string or {\"light\": string, \"dark\": string}".to_string(),
            );
        }
    }
    Ok(())
}

/// The `when` clause; one that does not parse is a warning.
fn when_field(
    map: &Map<String, Value>,
    warnings: &mut Vec<String>,
) -> Result<Option<when::Expr>, String> {
    Ok(match string_field(map, "when")? {
        None => None,
        Some(text) if text.is_empty() => None,
        Some(text) => match when::parse(&text) {
            Ok(expr) => Some(expr),
            Err(e) => {
                // VS Code's `ContextKeyExpr.deserialize` gives `undefined` for a clause
                // it cannot parse, which registers the tool with no condition.
                warnings.push(format!(
                    "the when clause does not parse ({e} at offset {}); as in VS Code the tool loads with no condition",
                    e.offset
                ));
                None
            }
        },
    })
}

/// VS Code's checks of one `languageModelToolSets` entry: `(reference name, description,
/// members)`.
fn check_set(entry: &Value) -> Result<(String, String, Vec<String>), String> {
    let Some(map) = entry.as_object() else {
        return Err(format!(
            "an entry must be an object, not {}",
            describe_type(entry)
        ));
    };
    if let Some(key) = map.keys().find(|k| !SET_PROPERTIES.contains(&k.as_str())) {
        return Err(format!(
            "unknown property \"{}\" (VS Code's schema allows no other properties)",
            printable(key, 60)
        ));
    }
    let name = string_field(map, "name")?;
    let description = string_field(map, "description")?;
    let (Some(name), Some(description)) = (name, description) else {
        return Err("a tool set needs name, description and tools".to_string());
    };
    let members = match map.get("tools") {
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or("\"tools\" must hold tool names (strings)")?,
        Some(Value::Array(_)) => {
            return Err("\"tools\" must name at least one tool (minItems 1)".to_string());
        }
        _ => return Err("a tool set needs name, description and tools".to_string()),
    };
    if name.trim().is_empty() || !is_word_name(&name) {
        return Err("the name must match ^[\\w-]+$".to_string());
    }
    let reference = match string_field(map, "referenceName")? {
        Some(r) if is_word_name(&r) => r,
        Some(_) => return Err("referenceName must match ^[\\w-]+$".to_string()),
        None => name,
    };
    match map.get("legacyFullNames") {
        None => {}
        Some(Value::Array(items)) if items.iter().all(|i| i.as_str().is_some_and(is_word_name)) => {
        }
        Some(_) => {
            return Err("legacyFullNames must be an array of names matching ^[\\w-]+$".to_string());
        }
    }
    if let Some(icon) = map.get("icon")
        && !icon.is_string()
    {
        return Err("\"icon\" must be a string such as \"$(zap)\"".to_string());
    }
    Ok((reference, description, members))
}
