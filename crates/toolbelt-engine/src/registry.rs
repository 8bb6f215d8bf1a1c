//! The registry: every tool of a session under its model-facing name.
//!
//! Tools come from four places ([`Origin`]): built in, discovered by a command, offered
//! by an MCP server, declared in a manifest. Architecture Invariant: a name collision
//! never drops a tool silently. A built-in keeps its name; a later tool whose name is
//! taken is registered under a qualified name (`discovered__x`, `declared__x`, or with a
//! numeric suffix) and a warning says so.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use toolbelt_config::settings::Settings;
use toolbelt_core::SchemaValidator;
use toolbelt_core::{ErrorKind, ToolError};
use toolbelt_core::{Invocation, Tool};

/// Longest tool name providers accept.
pub const MAX_NAME_LEN: usize = 64;

/// Where a registered tool comes from; decides the qualified name it gets on a collision
/// and which tools a refresh replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// Compiled into toolbelt (`toolbelt-tools`).
    BuiltIn,
    /// Listed by the project's `tools.discoveryCommand` and run through `tools.callCommand`.
    Discovered,
    /// Offered by an MCP server.
    Mcp {
        /// Alias of the server in the settings (`mcpServers.<alias>`).
        server: String,
    },
    /// Declared in a tool manifest (or given by an embedder as its own), qualified as
    /// `declared__<name>` on a collision.
    Declared,
}

impl Origin {
    fn prefix(&self) -> &str {
        match self {
            Origin::BuiltIn => "builtin",
            Origin::Discovered => "discovered",
            Origin::Mcp { .. } => "mcp",
            Origin::Declared => "declared",
        }
    }
}

/// A registered tool with its final name and its compiled schema (shared by copies of
/// the registry, so it is compiled once).
#[derive(Clone)]
pub struct Registration {
    /// The name the model calls it by (the tool's own name, or the qualified name a collision gave it).
    pub name: String,
    /// Where the tool comes from.
    pub origin: Origin,
    /// The tool itself, shared by every copy of the registry.
    pub tool: Arc<dyn Tool>,
    /// Made on the first call: registering hundreds of tools copies no schema.
    validator: Arc<std::sync::OnceLock<SchemaValidator>>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("name", &self.name)
            .field("origin", &self.origin)
            .finish()
    }
}

impl Registration {
    /// Checks `args` against the schema (with lenient coercion), then lets the tool build
    /// the call.
    pub fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let args = rename_parameters(args, self.tool.parameter_aliases());
        let validator = self
            .validator
            .get_or_init(|| SchemaValidator::new(self.tool.parameter_schema().clone()));
        let args = validator.validate(args)?;
        self.tool.build(args)
    }

    /// What the model is told about this tool, under its registered name.
    pub fn declaration(&self) -> FunctionDeclaration {
        FunctionDeclaration {
            name: self.name.clone(),
            description: self.tool.description().to_string(),
            parameters: self.tool.parameter_schema().clone(),
        }
    }
}

/// What a model is told about a tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDeclaration {
    /// The registered name.
    pub name: String,
    /// The tool's description, for the model.
    pub description: String,
    /// JSON Schema of the arguments (an object at the root).
    pub parameters: Value,
}

/// The tools of a session. Cloning is cheap (tools and compiled schemas are shared): an
/// agent swaps in a changed copy between turns while a turn keeps the one it started
/// with.
#[derive(Default, Clone)]
pub struct ToolRegistry {
    entries: Vec<Registration>,
    index: HashMap<String, usize>,
    aliases: HashMap<String, String>,
    /// Names removed by settings, with why, so a call to one is told the reason.
    removed: BTreeMap<String, String>,
    /// Registered tools whose `when` clause is false, with the clause.
    disabled: BTreeMap<String, String>,
    tool_sets: Vec<ToolSet>,
    warnings: Vec<String>,
}

/// VS Code's tool set: a name a prompt references (`#name`) for several tools at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSet {
    /// The reference name, `^[\w-]+$`.
    pub name: String,
    /// What the set is for, shown where sets are listed.
    pub description: String,
    /// Registered names of the member tools (nested sets already expanded).
    pub tools: Vec<String>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| &e.name))
            .finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `tool` and returns the name it is registered under.
    pub fn register(&mut self, tool: Arc<dyn Tool>, origin: Origin) -> String {
        let wanted = sanitize_tool_name(tool.name());
        let name = if self.index.contains_key(&wanted) || self.aliases.contains_key(&wanted) {
            let renamed = self.free_name(&wanted, &origin);
            let holder = self
                .get(&wanted)
                .map(|r| r.origin.prefix().to_string())
                .unwrap_or_default();
            self.warnings.push(format!(
                "tool '{wanted}' ({}) is registered as '{renamed}': the name is taken by a {holder} tool",
                origin.prefix()
            ));
            renamed
        } else {
            wanted
        };
        for alias in tool.aliases() {
            if !self.index.contains_key(*alias) {
                self.aliases
                    .entry(alias.to_string())
                    .or_insert_with(|| name.clone());
            }
        }
        let validator = Arc::new(std::sync::OnceLock::new());
        self.index.insert(name.clone(), self.entries.len());
        self.removed.remove(&name);
        self.entries.push(Registration {
            name: name.clone(),
            origin,
            tool,
            validator,
        });
        name
    }

    /// Compiles the argument schemas of the built-in tools on a thread of its own, for a
    /// session that goes on to call them: a schema is otherwise compiled at its tool's
    /// first call (a validator of the meta-schema first), 0.1-0.4 ms each on the call
    /// path, which a seven-call session paid seven times (issue 49). A call that comes
    /// while its schema is being compiled waits for it, never compiles it twice; one that
    /// comes first compiles it itself. Only built-in tools: the schemas of discovered,
    /// declared and MCP tools (which may be large or hostile) are still compiled only if
    /// called. Copies of this registry share what is compiled.
    pub fn compile_builtin_schemas_in_background(&self) {
        let work: Vec<_> = self
            .entries
            .iter()
            .filter(|e| e.origin == Origin::BuiltIn)
            .map(|e| (Arc::clone(&e.tool), Arc::clone(&e.validator)))
            .collect();
        if work.is_empty() {
            return;
        }
        let _ = std::thread::Builder::new()
            .name("toolbelt-schemas".into())
            .spawn(move || {
                for (tool, cell) in work {
                    let validator =
                        cell.get_or_init(|| SchemaValidator::new(tool.parameter_schema().clone()));
                    let _ = validator.compiled();
                }
            });
    }

    fn free_name(&self, wanted: &str, origin: &Origin) -> String {
        let taken = |n: &str| self.index.contains_key(n) || self.aliases.contains_key(n);
        let qualified = match origin {
            Origin::BuiltIn | Origin::Mcp { .. } => wanted.to_string(),
            _ => sanitize_tool_name(&format!("{}__{wanted}", origin.prefix())),
        };
        if !taken(&qualified) {
            return qualified;
        }
        (2..)
            .map(|n| {
                let suffix = format!("_{n}");
                let keep = MAX_NAME_LEN.saturating_sub(suffix.len());
                format!("{}{suffix}", truncate_chars(&qualified, keep))
            })
            .find(|candidate| !taken(candidate))
            .unwrap_or(qualified)
    }

    /// Removes every tool for which `keep` is false, remembering `why` for calls to it.
    pub fn retain(&mut self, mut keep: impl FnMut(&Registration) -> bool, why: &str) {
        let (kept, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut self.entries)
            .into_iter()
            .partition(|r| keep(r));
        for r in gone {
            self.disabled.remove(&r.name);
            self.removed.insert(r.name.clone(), why.to_string());
        }
        self.entries = kept;
        self.reindex();
    }

    /// Evaluates every tool's `when` clause against `context`: a tool whose clause is false
    /// is left out of [`ToolRegistry::function_declarations`] and a call to it is refused
    /// (see [`ToolRegistry::disabled`]) until the clause holds again or the tool is
    /// [enabled](ToolRegistry::enable) by a reference.
    pub fn apply_when<C: toolbelt_config::when::Context + ?Sized>(&mut self, context: &C) {
        self.disabled = self
            .entries
            .iter()
            .filter_map(|r| {
                let clause = r.tool.when_clause()?;
                (!clause.evaluate(context)).then(|| (r.name.clone(), clause.serialize()))
            })
            .collect();
    }

    /// Declares `name` although its `when` clause is false (a `#reference` asked for it).
    pub fn enable(&mut self, name: &str) {
        self.disabled.remove(name);
    }

    /// Why a call to `name` is refused although the tool is registered: its `when` clause
    /// is false.
    pub fn disabled(&self, name: &str) -> Option<ToolError> {
        let registration = self.get(name)?;
        let clause = self.disabled.get(&registration.name)?;
        Some(ToolError::new(
            ErrorKind::ExecutionDenied,
            format!(
                "Tool \"{}\" is disabled: its when clause `{clause}` is false in this session. It was not run.",
                registration.name
            ),
        ))
    }

    /// Whether `name` is registered but disabled by its `when` clause.
    pub fn is_disabled(&self, name: &str) -> bool {
        self.get(name)
            .is_some_and(|r| self.disabled.contains_key(&r.name))
    }

    /// Adds a tool set; members that are not registered are dropped, and a set left
    /// empty is not added (a warning says so).
    pub fn add_tool_set(&mut self, mut set: ToolSet) {
        set.tools.retain(|t| self.index.contains_key(t));
        if set.tools.is_empty() {
            self.warnings.push(format!(
                "tool set '{}' is skipped: none of its tools is registered",
                set.name
            ));
            return;
        }
        self.tool_sets.retain(|s| s.name != set.name);
        self.tool_sets.push(set);
    }

    /// The tool sets, in the order they were added.
    pub fn tool_sets(&self) -> &[ToolSet] {
        &self.tool_sets
    }

    /// The registered names a prompt's `#reference` stands for: the tool whose
    /// [`Tool::reference_name`] it is, else the members of the tool set of that name;
    /// empty when it names neither.
    pub fn resolve_reference(&self, reference: &str) -> Vec<String> {
        if let Some(r) = self
            .entries
            .iter()
            .find(|r| r.tool.reference_name() == Some(reference))
        {
            return vec![r.name.clone()];
        }
        self.tool_sets
            .iter()
            .find(|s| s.name == reference)
            .map(|s| s.tools.clone())
            .unwrap_or_default()
    }

    /// Removes the tools of one origin (an MCP server being refreshed, say).
    pub fn remove_origin(&mut self, origin: &Origin) {
        self.entries.retain(|r| &r.origin != origin);
        self.reindex();
    }

    fn reindex(&mut self) {
        self.index = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, r)| (r.name.clone(), i))
            .collect();
        self.aliases
            .retain(|_, target| self.index.contains_key(target));
        let index = &self.index;
        self.disabled.retain(|name, _| index.contains_key(name));
        for set in &mut self.tool_sets {
            set.tools.retain(|t| index.contains_key(t));
        }
        self.tool_sets.retain(|s| !s.tools.is_empty());
    }

    /// Applies `tools.core` (allow-list of built-ins), `tools.exclude` and whole-tool
    /// `permissions.deny` entries. Entries with a specifier (`run_shell_command(git *)`)
    /// are rules for the permission engine, not removals; in `tools.core` the specifier
    /// is ignored and the tool kept.
    pub fn apply_settings(&mut self, settings: &Settings) {
        if let Some(core) = &settings.tools.core {
            let allowed: Vec<&str> = core.iter().map(|e| rule_tool_name(e)).collect();
            let aliases = self.aliases.clone();
            self.retain(
                |r| {
                    r.origin != Origin::BuiltIn
                        || allowed
                            .iter()
                            .any(|a| *a == r.name || aliases.get(*a) == Some(&r.name))
                },
                "it is not in the tools.core allow-list of the settings",
            );
        }
        let whole_tool = |entries: &[String]| -> Vec<String> {
            entries
                .iter()
                .filter(|e| !e.contains('('))
                .map(|e| e.trim().to_string())
                .collect()
        };
        for (list, why) in [
            (
                whole_tool(&settings.tools.exclude),
                "it is excluded by tools.exclude in the settings",
            ),
            (
                whole_tool(&settings.permissions.deny),
                "it is denied by permissions.deny in the settings",
            ),
        ] {
            if list.is_empty() {
                continue;
            }
            let aliases = self.aliases.clone();
            self.retain(
                |r| {
                    !list
                        .iter()
                        .any(|e| *e == r.name || aliases.get(e) == Some(&r.name))
                },
                why,
            );
        }
    }

    /// The tool registered under `name` or under an old name of it.
    pub fn get(&self, name: &str) -> Option<&Registration> {
        let name = self.aliases.get(name).map(String::as_str).unwrap_or(name);
        self.index.get(name).map(|&i| &self.entries[i])
    }

    /// Whether `name` is a tool of this session, registered or removed by the settings
    /// (a rule naming a removed tool is not a misspelling).
    pub fn knows(&self, name: &str) -> bool {
        self.get(name).is_some() || self.removed.contains_key(name)
    }

    /// Every tool, in registration order.
    pub fn all(&self) -> impl Iterator<Item = &Registration> {
        self.entries.iter()
    }

    /// What the built-in tools say about themselves to permission rules: their rule
    /// aliases, the path operation they perform, and (`Kind::Execute`) that they run
    /// shell commands. Other origins are not believed: an
    /// MCP server must not make `Read` name its tool.
    pub fn rule_vocabulary(&self) -> crate::rules::RuleVocabulary {
        let mut vocabulary = crate::rules::RuleVocabulary::default();
        for r in self.entries.iter().filter(|r| r.origin == Origin::BuiltIn) {
            vocabulary.add(&r.name, r.tool.rule_aliases(), r.tool.path_operation());
            // A tool that runs another (`monitor` runs its command as a shell job) answers
            // to that tool's rules through `rule_target`, `tools.core` included.
            if r.tool.kind() == toolbelt_core::Kind::Execute && r.tool.rule_target().is_none() {
                vocabulary.add_command_runner(&r.name);
            }
        }
        vocabulary
    }

    /// The name of the tool that ends plan mode (see [`Tool::ends_plan_mode`]), if one
    /// is registered, for the advice plan mode gives.
    pub fn plan_mode_exit(&self) -> Option<&str> {
        self.entries
            .iter()
            .find(|r| r.tool.ends_plan_mode())
            .map(|r| r.name.as_str())
    }

    /// Number of registered tools (those disabled by their `when` clause included).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// What the model is told, in registration order: every tool but those disabled by
    /// their `when` clause.
    pub fn function_declarations(&self) -> Vec<FunctionDeclaration> {
        self.entries
            .iter()
            .filter(|r| !self.disabled.contains_key(&r.name))
            .map(Registration::declaration)
            .collect()
    }

    /// Collisions and other things worth telling the person.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Up to `n` registered names closest to `name`, most similar first.
    pub fn closest(&self, name: &str, n: usize) -> Vec<&str> {
        // Jaro-Winkler rewards a shared prefix, which is how models misspell tool names
        // (`read_fil`, `grep`); plain edit distance would favour short unrelated names.
        let mut scored: Vec<(f64, &str)> = self
            .entries
            .iter()
            .map(|r| (strsim::jaro_winkler(name, &r.name), r.name.as_str()))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        scored.into_iter().take(n).map(|(_, name)| name).collect()
    }

    /// Looks up `name` and builds a call from `args`; an unknown name is an error that
    /// names the closest tools, a removed one says why it is unavailable.
    pub fn build(
        &self,
        name: &str,
        args: Value,
    ) -> Result<(&Registration, Box<dyn Invocation>), ToolError> {
        let registration = self.get(name).ok_or_else(|| self.not_found(name))?;
        Ok((registration, registration.build(args)?))
    }

    /// The error for a call to `name` that is not registered: why, when the settings removed
    /// it (`execution_denied`); otherwise `tool_not_registered`, naming up to three close names.
    pub fn not_found(&self, name: &str) -> ToolError {
        if let Some(why) = self.removed.get(name) {
            return ToolError::new(
                ErrorKind::ExecutionDenied,
                format!("Tool \"{name}\" is not available: {why}."),
            );
        }
        if let Some(hint) = self
            .entries
            .iter()
            .filter(|r| !self.disabled.contains_key(&r.name))
            .find_map(|r| r.tool.hint_for_unknown_name(name))
        {
            return ToolError::new(ErrorKind::ToolNotRegistered, hint);
        }
        let close = self.closest(name, 3);
        let hint = if close.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = close.iter().map(|n| format!("\"{n}\"")).collect();
            format!(" Did you mean one of: {}?", names.join(", "))
        };
        ToolError::new(
            ErrorKind::ToolNotRegistered,
            format!("Tool \"{name}\" not found in the registry.{hint}"),
        )
    }
}

/// Moves values given under an old parameter name to the current name.
fn rename_parameters(mut args: Value, aliases: &[(&'static str, &'static str)]) -> Value {
    if let Some(map) = args.as_object_mut() {
        for (old, current) in aliases {
            if !map.contains_key(*current)
                && let Some(v) = map.remove(*old)
            {
                map.insert(current.to_string(), v);
            }
        }
    }
    args
}

/// The tool part of a rule or list entry: `run_shell_command(git *)` → `run_shell_command`.
pub fn rule_tool_name(entry: &str) -> &str {
    entry.split('(').next().unwrap_or(entry).trim()
}

/// A valid model-facing name: characters outside `[A-Za-z0-9_-]` become `_` (OpenAI
/// refuses a `.` in a function name), and a
/// name over 64 characters keeps its head and gets a stable hash of the whole, so two
/// long names that differ only at the end stay apart and stay the same across runs.
pub fn sanitize_tool_name(raw: &str) -> String {
    let clean: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let clean = if clean.is_empty() {
        "_".to_string()
    } else {
        clean
    };
    if clean.len() <= MAX_NAME_LEN {
        return clean;
    }
    let digest = Sha256::digest(raw.as_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!(
        "{}_{hash}",
        truncate_chars(&clean, MAX_NAME_LEN - 1 - hash.len())
    )
}

fn truncate_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests;
