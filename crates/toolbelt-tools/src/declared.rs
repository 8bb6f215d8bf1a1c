//! Tools declared in JSON manifests, as VS Code's Language Model Tool API declares them
//! (`contributes.languageModelTools` / `languageModelToolSets`), each bound to what runs.
//!
//! # Brief overview
//!
//! [`load_declared`] reads the manifests (workspace `.qwen/tools/*.json`, then
//! `~/.qwen/tools/*.json`, then each entry of settings `tools.manifests`, files in sorted
//! order), checks every entry as VS Code's contribution handler does (`manifest.rs`) and
//! reads its binding (`binding.rs`): a command, an MCP tool or a built-in tool. A bad
//! entry is a warning naming the file, the entry and the rule; the rest still loads.
//! [`register_declared`] resolves `mcp`/`builtin` targets in the registry, registers each
//! tool with [`Origin::Declared`] (`tool.rs`: the two-step prepare/execute call) and adds
//! the tool sets under the registered names.
//!
//! An extension's `package.json` is read unchanged; its bindings come from the
//! `toolbelt.json` beside it, because VS Code's schema allows no extra properties in an
//! entry.
//!
//! Folder trust (`declared/untrusted.rs`): in an untrusted folder the `command` and
//! `prepare` bindings of workspace manifests do not load (they would run project code),
//! the other tools are shown but every call asks (whatever the tool they run would do),
//! and a `when` clause of theirs may not read `env.*` or `config.*`; one warning lists
//! them and says how to trust the folder. User manifests and `tools.manifests` (which an
//! untrusted workspace file cannot set) load as usual, unless the file is inside the
//! project: a relative `tools.manifests` entry in the user's settings names a folder of
//! every project, so such files are judged as workspace files. A `tools.manifests`
//! entry a (trusted) project's settings wrote names files inside that project only.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use toolbelt_config::project_file;
use toolbelt_core::ToolEnvironment;
use toolbelt_engine::registry::sanitize_tool_name;
use toolbelt_engine::{registry::Origin, registry::ToolRegistry, registry::ToolSet};

mod binding;
mod input_schema;
mod manifest;
mod output;
mod template;
mod tool;
mod untrusted;

use binding::Target;
use manifest::{ManifestInput, Scope, SetEntry, ToolEntry, parse_manifest};
use tool::{DeclaredTool, Resolved};

use crate::discovered::CommandSettings;

/// What [`load_declared`] read: the checked tools and tool sets, and the warnings.
#[derive(Debug)]
pub struct LoadedManifests {
    /// One line per problem: the file, the entry and the rule.
    pub warnings: Vec<String>,
    tools: Vec<ToolEntry>,
    /// Tool sets with their members as tool names (nested sets expanded).
    sets: Vec<(SetEntry, Vec<String>)>,
    env: Arc<ToolEnvironment>,
}

impl LoadedManifests {
    /// How many tools loaded (before their targets are resolved in a registry).
    pub fn tool_count(&self) -> usize {
        self.tools.len()
    }

    /// The names of the loaded tools, in load order.
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }

    /// The files the loaded tools' `command` and `prepare` name (a program, or an
    /// argument that names an existing file, relative to the project or to the
    /// manifest's folder): a model that rewrote one would run its own code at the next
    /// call, so the session protects them like the manifests (see
    /// `toolbelt_core::ProtectedPaths`).
    pub fn command_files(&self) -> Vec<PathBuf> {
        let cwd = crate::discovered::project_root(&self.env);
        let mut files = Vec::new();
        for tool in &self.tools {
            let binding = &tool.binding;
            let command = match &binding.target {
                Target::Command { argv } => Some(argv),
                _ => None,
            };
            for word in command.into_iter().chain(&binding.prepare).flatten() {
                for base in [&cwd, &binding.manifest_dir] {
                    let path = base.join(word);
                    if path.is_file() && !files.contains(&path) {
                        files.push(path);
                    }
                }
            }
        }
        files
    }

    /// The MCP servers the loaded tools' `mcp` bindings name: a session waits for them
    /// before registering the declared tools, which need their tools.
    pub fn mcp_servers(&self) -> Vec<String> {
        let mut servers: Vec<String> = Vec::new();
        for tool in &self.tools {
            if let Target::Mcp { server, .. } = &tool.binding.target
                && !servers.contains(server)
            {
                servers.push(server.clone());
            }
        }
        servers
    }

    /// The reference names of the loaded tool sets.
    pub fn tool_set_names(&self) -> Vec<&str> {
        self.sets.iter().map(|(s, _)| s.name.as_str()).collect()
    }
}

/// Reads and checks every manifest of the session. Never fails: problems are
/// [`LoadedManifests::warnings`].
pub fn load_declared(env: &Arc<ToolEnvironment>) -> LoadedManifests {
    load_with_home(env, env.user_home.as_deref())
}

/// A manifest file to read, where it came from.
struct Source {
    path: PathBuf,
    scope: Scope,
}

/// The manifest files to read, in order: the project's `.qwen/tools`, the user's, then
/// `tools.manifests`.
fn manifest_sources(
    env: &ToolEnvironment,
    project: Option<&Path>,
    home: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Vec<Source> {
    let mut sources = Vec::new();
    if let Some(project) = project {
        sources.extend(folder_files(&project.join(".qwen/tools"), Scope::Workspace));
    }
    if let Some(home) = home {
        sources.extend(folder_files(&home.join(".qwen/tools"), Scope::User));
    }
    for entry in &env.settings.tools.manifests {
        let path = match project {
            Some(project) => project.join(entry),
            None => PathBuf::from(entry),
        };
        if let Some(warning) = untrusted::outside_the_naming_project(env, project, entry, &path) {
            warnings.push(warning);
            continue;
        }
        if path.is_dir() {
            let package = path.join("package.json");
            if package.is_file() {
                sources.push(Source {
                    path: package,
                    scope: Scope::Configured,
                });
            } else {
                sources.extend(folder_files(&path, Scope::Configured));
            }
        } else if path.is_file() {
            sources.push(Source {
                path,
                scope: Scope::Configured,
            });
        } else {
            warnings.push(format!(
                "tools.manifests entry \"{entry}\": {} is neither a file nor a folder; nothing was loaded from it",
                path.display()
            ));
        }
    }
    sources
}

/// Trust follows where a file is, not how it was named: a user's `tools.manifests`
/// entry such as `tools` (relative, so inside every project) or a user folder inside
/// the project reads files the project controls, so they count as workspace files.
fn count_project_files_as_workspace(project: Option<&Path>, sources: &mut [Source]) {
    let Some(project) = project.and_then(|p| p.canonicalize().ok()) else {
        return;
    };
    for source in sources {
        if source.scope != Scope::Workspace
            && source
                .path
                .canonicalize()
                .is_ok_and(|p| p.starts_with(&project))
        {
            source.scope = Scope::Workspace;
        }
    }
}

/// Reads every source once; the first tool or set of a name wins.
fn read_sources(
    sources: Vec<Source>,
    project: Option<&Path>,
    warnings: &mut Vec<String>,
) -> (Vec<ToolEntry>, Vec<SetEntry>) {
    let mut read_files = HashSet::new();
    let mut tools: Vec<ToolEntry> = Vec::new();
    let mut sets: Vec<SetEntry> = Vec::new();
    for source in sources {
        // The project may be the home folder: read each file once, as the first source.
        let identity = source
            .path
            .canonicalize()
            .unwrap_or_else(|_| source.path.clone());
        if !read_files.insert(identity) {
            continue;
        }
        let parsed = match read_manifest(&source, project) {
            Ok(parsed) => parsed,
            Err(warning) => {
                warnings.push(warning);
                continue;
            }
        };
        warnings.extend(parsed.warnings);
        for tool in parsed.tools {
            if let Some(first) = tools.iter().find(|t| t.name == tool.name) {
                warnings.push(format!(
                    "{}: tool '{}' is already declared in {}; this one is skipped",
                    tool.file.display(),
                    tool.name,
                    first.file.display()
                ));
                continue;
            }
            tools.push(tool);
        }
        for set in parsed.sets {
            if let Some(first) = sets.iter().find(|s| s.name == set.name) {
                warnings.push(format!(
                    "{}: tool set '{}' is already declared in {}; this one is skipped",
                    set.file.display(),
                    set.name,
                    first.file.display()
                ));
                continue;
            }
            sets.push(set);
        }
    }
    (tools, sets)
}

pub(crate) fn load_with_home(env: &Arc<ToolEnvironment>, home: Option<&Path>) -> LoadedManifests {
    let mut warnings = Vec::new();
    let project = env.roots.primary().map(Path::to_path_buf);
    let mut sources = manifest_sources(env, project.as_deref(), home, &mut warnings);
    count_project_files_as_workspace(project.as_deref(), &mut sources);
    let (mut tools, sets) = read_sources(sources, project.as_deref(), &mut warnings);
    let sets = resolve_sets(&tools, sets, &mut warnings);
    if let Some(project) = &env.settings.untrusted_project {
        untrusted::apply_untrusted(project, &mut tools, &mut warnings);
    }
    LoadedManifests {
        warnings,
        tools,
        sets,
        env: env.clone(),
    }
}

/// The `*.json` files of a folder, sorted; a missing folder has none. A `toolbelt.json`
/// beside a `package.json` holds that extension's bindings, not a manifest of its own.
fn folder_files(dir: &Path, scope: Scope) -> Vec<Source> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
        .collect();
    paths.sort();
    let has_package = paths.iter().any(|p| p.ends_with("package.json"));
    paths
        .into_iter()
        .filter(|p| !(has_package && p.ends_with("toolbelt.json")))
        .map(|path| Source { path, scope })
        .collect()
}

/// The largest manifest read (declarations, not data).
const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;

/// A manifest's JSON. `project`: the folder a workspace manifest must stay in (see
/// [`toolbelt_config::project_file`]); `None` for the person's own files.
fn read_json(path: &Path, project: Option<&Path>) -> Result<Value, String> {
    let bytes = match project {
        Some(project) => project_file::read_in_project(path, project, MAX_MANIFEST_BYTES),
        None => project_file::read_own(path, MAX_MANIFEST_BYTES),
    }
    .map_err(|e| format!("{}: {e}; skipped", path.display()))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| format!("{}: not valid JSON ({e}); skipped", path.display()))
}

/// One file, as a toolbelt manifest or (with `contributes`) an extension's
/// `package.json` whose bindings are in the `toolbelt.json` beside it.
fn read_manifest(
    source: &Source,
    project: Option<&Path>,
) -> Result<manifest::ParsedManifest, String> {
    let project = project.filter(|_| source.scope == Scope::Workspace);
    let value = read_json(&source.path, project)?;
    let Value::Object(map) = &value else {
        return Err(format!(
            "{}: a manifest must be a JSON object; skipped",
            source.path.display()
        ));
    };
    // A `package.json` is an extension's, whatever else it holds; its tools (if any)
    // are under `contributes`.
    let is_package = source.path.file_name().is_some_and(|n| n == "package.json");
    if is_package || map.contains_key("contributes") {
        let empty = Value::Null;
        let contributes = map.get("contributes").unwrap_or(&empty);
        let bindings_file = source
            .path
            .parent()
            .unwrap_or(Path::new("."))
            .join("toolbelt.json");
        let mut early = Vec::new();
        let bindings_value = if bindings_file.is_file() {
            match read_json(&bindings_file, project) {
                Ok(v) => v,
                Err(w) => {
                    early.push(w);
                    Value::Null
                }
            }
        } else {
            Value::Null
        };
        let mut parsed = parse_manifest(ManifestInput {
            file: &source.path,
            scope: source.scope,
            tools: contributes.get("languageModelTools"),
            sets: contributes.get("languageModelToolSets"),
            bindings: bindings_value.get("bindings"),
            bindings_file: &bindings_file,
        });
        early.append(&mut parsed.warnings);
        parsed.warnings = early;
        return Ok(parsed);
    }
    let mut parsed = parse_manifest(ManifestInput {
        file: &source.path,
        scope: source.scope,
        tools: map.get("languageModelTools"),
        sets: map.get("languageModelToolSets"),
        bindings: map.get("bindings"),
        bindings_file: &source.path,
    });
    let unknown: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| {
            ![
                "languageModelTools",
                "languageModelToolSets",
                "bindings",
                "$schema",
            ]
            .contains(k)
        })
        .collect();
    if !unknown.is_empty() {
        parsed.warnings.push(format!(
            "{}: unknown top-level key(s) {} ignored (a manifest has languageModelTools, languageModelToolSets and bindings)",
            source.path.display(),
            unknown.join(", ")
        ));
    }
    Ok(parsed)
}

/// Members resolve by a tool's `toolReferenceName` (or its name) or another set's name;
/// nested sets are expanded (a cycle is cut where it closes).
fn resolve_sets(
    tools: &[ToolEntry],
    sets: Vec<SetEntry>,
    warnings: &mut Vec<String>,
) -> Vec<(SetEntry, Vec<String>)> {
    let mut by_reference: HashMap<&str, &str> = HashMap::new();
    for tool in tools {
        by_reference.insert(&tool.name, &tool.name);
    }
    // A reference name wins over a tool name, as VS Code looks tools up by it.
    for tool in tools {
        if let Some(reference) = &tool.tool_reference_name {
            by_reference.insert(reference, &tool.name);
        }
    }
    let by_set: BTreeMap<&str, &SetEntry> = sets.iter().map(|s| (s.name.as_str(), s)).collect();
    let mut resolved = Vec::new();
    for set in &sets {
        let mut members = Vec::new();
        let mut unknown = Vec::new();
        let mut visiting = vec![set.name.as_str()];
        expand(
            set,
            &by_reference,
            &by_set,
            &mut visiting,
            &mut members,
            &mut unknown,
        );
        if !unknown.is_empty() {
            warnings.push(format!(
                "{}: tool set '{}': unknown tool or tool set {}",
                set.file.display(),
                set.name,
                unknown
                    .iter()
                    .map(|u| format!("'{u}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if members.is_empty() {
            warnings.push(format!(
                "{}: tool set '{}': none of its tools is known; the set is skipped",
                set.file.display(),
                set.name
            ));
            continue;
        }
        resolved.push((set.clone(), members));
    }
    resolved
}

fn expand<'a>(
    set: &'a SetEntry,
    by_reference: &HashMap<&str, &str>,
    by_set: &BTreeMap<&str, &'a SetEntry>,
    visiting: &mut Vec<&'a str>,
    members: &mut Vec<String>,
    unknown: &mut Vec<String>,
) {
    for member in &set.members {
        if let Some(tool) = by_reference.get(member.as_str()) {
            if !members.iter().any(|m| m == tool) {
                members.push(tool.to_string());
            }
        } else if let Some(nested) = by_set.get(member.as_str()) {
            if visiting.contains(&nested.name.as_str()) {
                continue;
            }
            visiting.push(&nested.name);
            expand(nested, by_reference, by_set, visiting, members, unknown);
            visiting.pop();
        } else if visiting.len() == 1 {
            // Unknown names of nested sets are reported with those sets.
            unknown.push(member.clone());
        }
    }
}

/// Registers the loaded tools and tool sets in `registry`, resolving `mcp` and `builtin`
/// targets among the tools already there. Returns every warning: the load's, then the
/// registration's (unknown targets, renamed tools, empty sets).
pub fn register_declared(registry: &mut ToolRegistry, loaded: LoadedManifests) -> Vec<String> {
    let LoadedManifests {
        mut warnings,
        tools,
        sets,
        env,
    } = loaded;
    let commands = Arc::new(CommandSettings::from_env(&env));
    let mut registered: HashMap<String, String> = HashMap::new();
    let before = registry.warnings().len();
    for entry in tools {
        let file = entry.file.display().to_string();
        let resolved = match &entry.binding.target {
            Target::Command { argv } => Resolved::Command { argv: argv.clone() },
            Target::Mcp { server, tool } => {
                let name = sanitize_tool_name(&format!("mcp__{server}__{tool}"));
                let found = registry
                    .get(&name)
                    .filter(|r| matches!(&r.origin, Origin::Mcp { server: s } if s == server));
                let Some(target) = found else {
                    warnings.push(format!(
                        "{file}: tool '{}': its binding names MCP tool \"{server}/{tool}\", which is not registered (is the server configured and connected?); the tool is skipped",
                        entry.name
                    ));
                    continue;
                };
                Resolved::Delegate {
                    target: target.clone(),
                    fixed: Default::default(),
                }
            }
            Target::Builtin { tool, arguments } => {
                let found = registry.get(tool).filter(|r| r.origin == Origin::BuiltIn);
                let Some(target) = found else {
                    warnings.push(format!(
                        "{file}: tool '{}': its binding names built-in tool \"{tool}\", which is not registered; the tool is skipped",
                        entry.name
                    ));
                    continue;
                };
                Resolved::Delegate {
                    target: target.clone(),
                    fixed: arguments.clone(),
                }
            }
        };
        if let (Resolved::Delegate { target, .. }, Some(kind)) = (&resolved, entry.binding.kind)
            && kind != target.tool.kind()
        {
            warnings.push(format!(
                "{file}: tool '{}': \"kind\": \"{}\" is ignored; a delegating binding takes its target's kind ({})",
                entry.name,
                kind.as_str(),
                target.tool.kind().as_str()
            ));
        }
        let name = entry.name.clone();
        let tool = DeclaredTool::new(entry, resolved, env.clone(), commands.clone());
        let final_name = registry.register(Arc::new(tool), Origin::Declared);
        registered.insert(name, final_name);
    }
    for (set, members) in sets {
        let tools: Vec<String> = members
            .iter()
            .filter_map(|m| registered.get(m).cloned())
            .collect();
        registry.add_tool_set(ToolSet {
            name: set.name,
            description: set.description,
            tools,
        });
    }
    warnings.extend(
        registry
            .warnings()
            .get(before..)
            .unwrap_or_default()
            .iter()
            .cloned(),
    );
    warnings
}

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod project_tests;
#[cfg(test)]
mod run_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trust_tests;
