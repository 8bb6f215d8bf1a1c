//! Tool search for large tool sets: above a budget, the tools that are not built in are
//! *deferred* (left out of the declarations) and the model finds them with `tool_search`.
//!
//! # Brief overview
//!
//! [`plan_declarations`] decides, for one model request, which tools are declared: the
//! built-in (core) tools always; when the registry is over budget
//! ([`needs_deferral`], `tools.search` in the settings), the other tools only once
//! `tool_search` has found them ("loaded") or the caller forces them (a `#reference` in
//! the prompt), plus `tool_search` itself. Architecture Invariant: a request never
//! carries more than [`MAX_TOOLS_PER_REQUEST`] tools; past it the least recently loaded
//! tools are left out first, never `tool_search`.
//!
//! [`ToolSearch`] is the agent's side: it registers [`ToolSearchTool`] (as a built-in,
//! so the scheduler runs it like any other call, without asking and in plan mode) into
//! the registry the agent uses, rebuilds the [`ToolIndex`] when the registry changes,
//! and hands the loaded names to [`plan_declarations`].
//!
//! A deferred tool stays registered, so a call the model makes to it by name without
//! searching first (it may know the name from an earlier session or the prompt) runs
//! like any other call. Refusing it would only cost a round trip: the model would search
//! for the name it already has. Such a call does not declare the tool.

mod index;

use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use serde_json::{Value, json};
use toolbelt_config::settings::types::ToolSearchSettings;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ExecContext, Invocation, Kind, Tool, ToolError, ToolResult,
};
use toolbelt_engine::registry::FunctionDeclaration;
use toolbelt_engine::{registry::Origin, registry::Registration, registry::ToolRegistry};

pub use index::ToolIndex;
pub(crate) use index::{IndexedTool, QueryError, is_deferrable};

/// The name `tool_search` is registered under (unless a tool took it first).
pub(crate) const TOOL_SEARCH_NAME: &str = "tool_search";
/// Most tools in one model request, whatever the settings (providers reject more).
pub const MAX_TOOLS_PER_REQUEST: usize = 128;
/// `tools.search.maxTools` when unset.
pub(crate) const DEFAULT_MAX_TOOLS: u32 = 60;
/// `tools.search.maxSchemaBytes` when unset.
pub(crate) const DEFAULT_MAX_SCHEMA_BYTES: u64 = 40 * 1024;
/// `max_results` when the model gives none, and its upper bound.
pub(crate) const DEFAULT_MAX_RESULTS: usize = 5;
pub(crate) const MAX_RESULTS: usize = 20;

/// What one model request declares.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct DeclarationPlan {
    /// In registration order.
    pub declarations: Vec<FunctionDeclaration>,
    /// Whether tools are deferred behind `tool_search` in this request.
    pub deferring: bool,
    /// Deferrable tools not declared in this request.
    pub deferred: usize,
    /// Core tools left out because they alone pass [`MAX_TOOLS_PER_REQUEST`]: worth a
    /// warning, the person's set-up is unusual.
    pub core_cut: Vec<String>,
    /// Loaded or forced tools left out to stay under [`MAX_TOOLS_PER_REQUEST`] (the least
    /// recently loaded first); `tool_search` finds them again.
    pub loaded_cut: Vec<String>,
}

/// The tools the model could be told about: registered, not disabled by their `when`
/// clause, not `tool_search` itself.
fn candidates<'a>(registry: &'a ToolRegistry, search_tool: Option<&str>) -> Vec<&'a Registration> {
    registry
        .all()
        .filter(|r| !registry.is_disabled(&r.name) && Some(r.name.as_str()) != search_tool)
        .collect()
}

/// Bytes a declaration costs in a request: name, description and schema as JSON.
pub(crate) fn declaration_bytes(r: &Registration) -> u64 {
    let schema = serde_json::to_string(r.tool.parameter_schema()).map_or(0, |s| s.len());
    (r.name.len() + r.tool.description().len() + schema) as u64
}

/// Whether the settings and the registry's size call for deferring (see
/// `ToolSearchSettings`): never with `enabled: false`, always with `enabled: true`, else
/// only above `maxTools` tools or `maxSchemaBytes` bytes. Nothing is deferred when every
/// tool is built in.
pub(crate) fn needs_deferral(
    registry: &ToolRegistry,
    settings: &ToolSearchSettings,
    search_tool: Option<&str>,
) -> bool {
    over_budget(&candidates(registry, search_tool), settings)
}

fn over_budget(tools: &[&Registration], settings: &ToolSearchSettings) -> bool {
    if !tools.iter().any(|r| is_deferrable(r)) {
        return false;
    }
    match settings.enabled {
        Some(enabled) => enabled,
        None => {
            let max_tools = settings.max_tools.unwrap_or(DEFAULT_MAX_TOOLS) as usize;
            let max_bytes = settings
                .max_schema_bytes
                .unwrap_or(DEFAULT_MAX_SCHEMA_BYTES);
            tools.len() > max_tools
                || tools.iter().map(|r| declaration_bytes(r)).sum::<u64>() > max_bytes
        }
    }
}

/// The declarations of one model request.
///
/// `search_tool` is the registered name of `tool_search` (`None` when it is not
/// registered: then nothing is deferred, as the model could not find it). `loaded` holds
/// the names `tool_search` found, least recently found first; `forced` the names that
/// must be declared even when deferred (`#reference`s of the prompt). Unknown names in
/// either are ignored. At most [`MAX_TOOLS_PER_REQUEST`] declarations: core tools first,
/// then `tool_search`, then forced tools, then loaded ones from the most recent.
pub(crate) fn plan_declarations(
    registry: &ToolRegistry,
    settings: &ToolSearchSettings,
    search_tool: Option<&str>,
    loaded: &[String],
    forced: &[String],
) -> DeclarationPlan {
    let tools = candidates(registry, search_tool);
    let deferring = search_tool.is_some() && over_budget(&tools, settings);
    let mut plan = DeclarationPlan {
        deferring,
        ..Default::default()
    };
    let (core, deferrable): (Vec<&Registration>, Vec<&Registration>) = if deferring {
        tools.iter().partition(|r| !is_deferrable(r))
    } else {
        // Without deferral every tool is "core"; only the cap applies.
        (tools.clone(), Vec::new())
    };
    let reserved = usize::from(deferring);
    let core_room = MAX_TOOLS_PER_REQUEST - reserved;
    // Built-ins before the others when even the core does not fit.
    let mut core = core;
    core.sort_by_key(|r| is_deferrable(r));
    if core.len() > core_room {
        plan.core_cut = core[core_room..].iter().map(|r| r.name.clone()).collect();
        core.truncate(core_room);
    }
    let mut declared: std::collections::HashSet<&str> =
        core.iter().map(|r| r.name.as_str()).collect();
    if deferring {
        let mut room = core_room - core.len();
        let wanted = forced.iter().chain(loaded.iter().rev());
        for name in wanted {
            let Some(r) = registry.get(name) else {
                continue;
            };
            if declared.contains(r.name.as_str()) || !deferrable.iter().any(|d| d.name == r.name) {
                continue;
            }
            if room == 0 {
                if !plan.loaded_cut.contains(&r.name) {
                    plan.loaded_cut.push(r.name.clone());
                }
                continue;
            }
            declared.insert(r.name.as_str());
            room -= 1;
        }
        plan.deferred = deferrable
            .iter()
            .filter(|r| !declared.contains(r.name.as_str()))
            .count();
        if let Some(name) = search_tool {
            declared.insert(name);
        }
    }
    plan.declarations = registry
        .all()
        .filter(|r| declared.contains(r.name.as_str()))
        .map(Registration::declaration)
        .collect();
    plan
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// What `tool_search` and the agent share: the index of the deferrable tools and the
/// names found so far.
#[derive(Debug, Default)]
pub(crate) struct SearchState {
    index: RwLock<Arc<ToolIndex>>,
    /// Least recently found first; a name found again moves to the end.
    loaded: Mutex<Vec<String>>,
}

impl SearchState {
    pub(crate) fn index(&self) -> Arc<ToolIndex> {
        match self.index.read() {
            Ok(i) => i.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn set_index(&self, index: ToolIndex) {
        let index = Arc::new(index);
        match self.index.write() {
            Ok(mut i) => *i = index,
            Err(poisoned) => *poisoned.into_inner() = index,
        }
    }

    /// The names found so far, least recently found first.
    pub(crate) fn loaded(&self) -> Vec<String> {
        lock(&self.loaded).clone()
    }

    pub(crate) fn load<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        let mut loaded = lock(&self.loaded);
        for name in names {
            loaded.retain(|n| n != name);
            loaded.push(name.to_string());
        }
    }
}

/// The agent's tool search: registers `tool_search` when deferral is needed, keeps the
/// index in step with the registry and plans each request's declarations.
pub(crate) struct ToolSearch {
    settings: ToolSearchSettings,
    state: Arc<SearchState>,
    tool: Arc<ToolSearchTool>,
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    /// The registry the index was built from.
    registry: Option<Arc<ToolRegistry>>,
    /// The name `tool_search` has in it.
    search_name: Option<String>,
}

impl ToolSearch {
    pub(crate) fn new(settings: ToolSearchSettings) -> Self {
        let state = Arc::new(SearchState::default());
        ToolSearch {
            settings,
            tool: Arc::new(ToolSearchTool::new(state.clone())),
            state,
            seen: Mutex::new(Seen::default()),
        }
    }

    #[cfg(test)]
    pub(crate) fn state(&self) -> &Arc<SearchState> {
        &self.state
    }

    /// The declarations for the next request with `registry`. When deferral is needed
    /// and `registry` lacks `tool_search`, it is registered into a copy, which is
    /// returned: the caller must use that copy from now on (the scheduler runs calls to
    /// `tool_search` from it). The index is rebuilt only when `registry` is not the one
    /// seen last.
    pub(crate) fn declarations(
        &self,
        registry: &Arc<ToolRegistry>,
        forced: &[String],
    ) -> (Option<Arc<ToolRegistry>>, DeclarationPlan) {
        let mut seen = lock(&self.seen);
        let mut replaced = None;
        let unchanged = seen
            .registry
            .as_ref()
            .is_some_and(|r| Arc::ptr_eq(r, registry));
        if !unchanged {
            let ours = Arc::as_ptr(&self.tool) as *const ();
            let mut search_name = registry
                .all()
                .find(|r| Arc::as_ptr(&r.tool) as *const () == ours)
                .map(|r| r.name.clone());
            let mut current = registry.clone();
            if search_name.is_none() && needs_deferral(registry, &self.settings, None) {
                let mut next = (**registry).clone();
                search_name = Some(next.register(self.tool.clone(), Origin::BuiltIn));
                current = Arc::new(next);
                replaced = Some(current.clone());
            }
            self.state.set_index(ToolIndex::from_registry(&current));
            seen.registry = Some(current);
            seen.search_name = search_name;
        }
        let Some(current) = seen.registry.as_ref() else {
            return (replaced, DeclarationPlan::default());
        };
        let plan = plan_declarations(
            current,
            &self.settings,
            seen.search_name.as_deref(),
            &self.state.loaded(),
            forced,
        );
        (replaced, plan)
    }
}

const DESCRIPTION: &str = "Finds tools that are available but not declared yet (tools of MCP servers and of the project, when there are too many to declare at once) and makes them callable. Use it when none of the declared tools fits the task, before concluding that a capability is missing. Search with a few keywords for the action and the object (\"create issue\", \"send slack message\", \"query database\") or with a tool's exact name. Matches tool names, descriptions and parameter names; returns at most max_results tools (1 to 20, default 5), best match first, each with its description and parameters. The tools found are declared from the next request on and stay declared; search again with other words if none fits.";

/// `tool_search {query, max_results}`.
pub(crate) struct ToolSearchTool {
    state: Arc<SearchState>,
    schema: Value,
}

impl ToolSearchTool {
    pub(crate) fn new(state: Arc<SearchState>) -> Self {
        ToolSearchTool {
            state,
            schema: json!({
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "Keywords for what the tool should do, or a tool's exact name, e.g. \"create github issue\" or \"mcp__github__create_issue\"."
                    },
                    "max_results": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_RESULTS,
                        "default": DEFAULT_MAX_RESULTS,
                        "description": "Most tools to return, 1 to 20 (default 5)."
                    }
                },
                "required": ["query"]
            }),
        }
    }
}

impl Tool for ToolSearchTool {
    fn name(&self) -> &str {
        TOOL_SEARCH_NAME
    }
    fn display_name(&self) -> &str {
        "ToolSearch"
    }
    fn description(&self) -> &str {
        DESCRIPTION
    }
    fn kind(&self) -> Kind {
        Kind::Search
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let query = args
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_string();
        if query.is_empty() {
            return Err(ToolError::invalid_params(QueryError::Empty.to_string()));
        }
        let max_results = args
            .get("max_results")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_MAX_RESULTS, |n| {
                n.clamp(1, MAX_RESULTS as u64) as usize
            });
        Ok(Box::new(ToolSearchCall {
            query,
            max_results,
            state: self.state.clone(),
        }))
    }
}

struct ToolSearchCall {
    query: String,
    max_results: usize,
    state: Arc<SearchState>,
}

impl Invocation for ToolSearchCall {
    fn describe(&self) -> String {
        format!("Search tools for \"{}\"", self.query)
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }
    fn execute(self: Box<Self>, _ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let index = self.state.index();
            match index.search(&self.query, self.max_results) {
                Err(e) => ToolResult::error(ToolError::invalid_params(e.to_string())),
                Ok(found) => {
                    self.state.load(found.iter().map(|t| t.name.as_str()));
                    ToolResult::text(render(&self.query, &found, &index))
                }
            }
        })
    }
}

/// What the model reads.
fn render(query: &str, found: &[&IndexedTool], index: &ToolIndex) -> String {
    let shown = index::cut_chars(query, 200);
    if found.is_empty() {
        let sources: Vec<String> = index
            .sources()
            .into_iter()
            .take(10)
            .map(|(s, n)| format!("{s} ({n})"))
            .collect();
        let from = if sources.is_empty() {
            "There are no deferred tools in this session.".to_string()
        } else {
            format!("The deferred tools come from: {}.", sources.join(", "))
        };
        return format!(
            "No tool matched \"{shown}\". Try other words: the service (github, slack, jira), the action (create, list, search, update, delete) or the object (issue, file, message), or a tool's exact name. {from}"
        );
    }
    let mut out = format!(
        "Found {} tool{} for \"{shown}\". They can be called from now on (declared from your next request):\n",
        found.len(),
        if found.len() == 1 { "" } else { "s" }
    );
    for t in found {
        out.push_str(&format!("- {}: {}", t.name, t.summary));
        if t.parameters.is_empty() {
            out.push_str(" Parameters: none.");
        } else {
            out.push_str(&format!(" Parameters: {}.", t.parameters.join(", ")));
        }
        out.push('\n');
    }
    out.truncate(out.trim_end().len());
    out
}

#[cfg(test)]
pub(crate) mod tests;
