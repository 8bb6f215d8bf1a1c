//! When a session offers each tool that it does not always offer: the conditions of the
//! registration code (`session.rs`'s `builtin_registry`, `agent.rs`, `subagents.rs`,
//! `monitor.rs`, `cron.rs`, `serve.rs`, the agent's `tool_search`, the MCP servers'
//! resource tools), written once for
//! `tools list`. A test of the binary (`tools_list_names_every_tool_a_session_offers`)
//! opens a session where every condition holds and fails when it registers a tool
//! this table does not name.

/// The condition under which a session offers a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offered {
    /// Every session (unless `tools.core`, `tools.exclude` or a flag leaves it out).
    Always,
    /// Every session but `mcp serve`, whose client cannot answer a person's questions.
    NotInServe,
    /// With a web search provider configured.
    WebSearchProvider,
    /// With a skill to offer.
    Skills,
    /// With a language server configured.
    LanguageServers,
    /// In a git repository.
    GitRepository,
    /// In sessions with a model: a prompt, the terminal, stream-JSON.
    AgentSessions,
    /// In sessions with a model, and in `mcp serve` for the client's own commands.
    AgentSessionsAndServe,
    /// In the sessions with idle time to fire scheduled prompts, unless cron is off.
    ScheduledPrompts,
    /// In sessions with a model, once the declarations pass the `tools.search` budget.
    ToolsDeferred,
    /// With a connected MCP server that offers resources.
    McpResources,
}

impl Offered {
    /// The condition as `tools list` says it (its [`NOTE`] says what the words mean).
    pub(crate) fn text(self) -> &'static str {
        match self {
            Offered::Always => "always",
            Offered::NotInServe => "not in mcp serve",
            Offered::WebSearchProvider => "webSearch.provider set",
            Offered::Skills => "skills exist",
            Offered::LanguageServers => "lsp servers configured",
            Offered::GitRepository => "in a git repository",
            Offered::AgentSessions => "agent sessions",
            Offered::AgentSessionsAndServe => "agent sessions, mcp serve",
            Offered::ScheduledPrompts => "terminal, stream-JSON; cron on",
            Offered::ToolsDeferred => "agent sessions, tools deferred",
            Offered::McpResources => "an MCP server has resources",
        }
    }
}

/// What the words of [`Offered::text`] mean.
pub(crate) const NOTE: &str = "\
note: OFFERED says when a session offers a tool; tools.core, tools.exclude and --exclude-tools
  still leave it out.
  agent sessions: a prompt, the terminal and stream-JSON (not `tools call` or `mcp serve`).
  cron on: unless experimental.cron is false or QWEN_CODE_DISABLE_CRON=1 is set.
  tools deferred: once the declarations pass the tools.search budget.
  See also `toolbelt skills list`, `toolbelt lsp list` and `toolbelt agents list`.";

/// Every tool a session offers only under a condition; any other tool is offered
/// always (a declared tool also by its `when` clause).
pub(crate) const CONDITIONAL: &[(&str, Offered)] = &[
    ("ask_user_question", Offered::NotInServe),
    ("web_search", Offered::WebSearchProvider),
    ("skill", Offered::Skills),
    ("lsp", Offered::LanguageServers),
    ("enter_worktree", Offered::GitRepository),
    ("exit_worktree", Offered::GitRepository),
    ("agent", Offered::AgentSessions),
    ("send_message", Offered::AgentSessions),
    ("monitor", Offered::AgentSessions),
    ("task_stop", Offered::AgentSessionsAndServe),
    ("cron_create", Offered::ScheduledPrompts),
    ("cron_list", Offered::ScheduledPrompts),
    ("cron_delete", Offered::ScheduledPrompts),
    ("tool_search", Offered::ToolsDeferred),
    ("list_mcp_resources", Offered::McpResources),
    ("read_mcp_resource", Offered::McpResources),
];

/// The condition under which the tool `name` is offered.
pub(crate) fn condition(name: &str) -> Offered {
    CONDITIONAL
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(Offered::Always, |(_, c)| *c)
}
