//! Claude Code's flags that its Agent SDK passes (read from the SDK's `sdk.mjs`, which
//! builds them from `query()`'s options) and that toolbelt has no word of its own for:
//! every one is accepted, so no option an application sets makes the query fail. The
//! others are aliases of toolbelt's own flags (`--permission-mode`, `--allowedTools`,
//! `--max-turns`, `--add-dir`, `--resume`, `--continue`, `--session-id`).
//!
//! What maps onto toolbelt is done ([`ClaudeArgs::session`], [`ClaudeArgs::agent`]):
//! `--fork-session`, `--no-session-persistence`, `--setting-sources`,
//! `--strict-mcp-config`, `--tools`, `--plugin-dir` (a plugin's skills and MCP servers),
//! `--settings` and `--managed-settings` (their permission rules). What does not (a cost
//! budget, thinking tokens, effort, Anthropic betas, ...) is listed in
//! `AgentOptions::ignored`: said as a warning on stderr and named in the `init` message.

use std::path::{Path, PathBuf};

use clap::Args;
use toolbelt_session::{AgentOptions, IgnoredFlag, SessionOptions, SettingSources};

/// The largest plugin `.mcp.json` read.
const MAX_PLUGIN_MCP_BYTES: u64 = 1 << 20;

/// Claude Code's flags without a toolbelt word of their own (hidden from `--help`
/// except `--disallowedTools`, `--fork-session` and `--no-session-persistence`, which
/// a person uses too; docs/sdk-and-stream-json.md names every one).
#[derive(Debug, Clone, Default, Args)]
pub struct ClaudeArgs {
    /// Tools (or rules such as `Bash(rm *)`) that never run: a deny rule each, and a tool
    /// named bare is not offered at all (comma-separated or repeated).
    #[arg(long = "disallowedTools", value_delimiter = ',', value_name = "TOOLS")]
    pub disallowed_tools: Vec<String>,
    /// Claude Code's permission prompt tool; `stdio` (the SDK's `canUseTool`) is how
    /// toolbelt asks a stream-JSON client. Another (an MCP tool) is not supported.
    #[arg(long, hide = true, value_name = "TOOL")]
    pub permission_prompt_tool: Option<String>,
    /// Accepted (Claude Code's SDK always passes it).
    #[arg(long, hide = true)]
    pub verbose: bool,
    /// Accepted: toolbelt reads `initialize` before anything else anyway.
    #[arg(long, hide = true)]
    pub await_initialize: bool,
    /// Accepted: `--permission-mode bypassPermissions` needs no second flag here.
    #[arg(long, hide = true)]
    pub allow_dangerously_skip_permissions: bool,
    /// With --resume/--continue: continue under a new session ID (or --session-id's),
    /// leaving the resumed session as it was.
    #[arg(long)]
    pub fork_session: bool,
    /// Save nothing of this run (it cannot be resumed).
    #[arg(long)]
    pub no_session_persistence: bool,
    /// Which of the person's settings files are read: `user` (`~/.qwen/settings.json`),
    /// `project` (`.qwen/settings.json`); `local` names no file of toolbelt's. Empty:
    /// neither. The system file always is.
    #[arg(long, hide = true, value_name = "SOURCES")]
    pub setting_sources: Option<String>,
    /// Only the MCP servers of `--mcp-config` (and the SDK's), not the settings'.
    #[arg(long, hide = true)]
    pub strict_mcp_config: bool,
    /// The built-in tools offered, in Claude's names or toolbelt's (comma-separated);
    /// `default`: all of them; empty: none.
    #[arg(long, hide = true, value_name = "TOOLS")]
    pub tools: Option<String>,
    /// A Claude Code plugin: its `skills/` and its `.mcp.json` servers join the session.
    #[arg(long, hide = true, value_name = "DIR")]
    pub plugin_dir: Vec<PathBuf>,
    /// A Claude Code plugin whose MCP servers stay out (its skills join).
    #[arg(long, hide = true, value_name = "DIR")]
    pub plugin_dir_no_mcp: Vec<PathBuf>,
    /// Claude Code settings (JSON, or a file): their permission rules apply.
    #[arg(long, hide = true, value_name = "FILE|JSON")]
    pub settings: Option<String>,
    /// Claude Code managed settings (JSON): their permission rules apply.
    #[arg(long, hide = true, value_name = "JSON")]
    pub managed_settings: Option<String>,
    /// The managed settings come in `initialize` (`managedSettings`).
    #[arg(long, hide = true)]
    pub managed_settings_in_initialize: bool,
    /// Fields that come in `initialize` rather than as flags (`settings`,
    /// `disallowedTools`); toolbelt reads them there whenever they come.
    #[arg(long, hide = true, value_name = "FIELDS")]
    pub initialize_fields: Option<String>,
    /// Hook events in the output: toolbelt runs no hooks, so there are none.
    #[arg(long, hide = true)]
    pub include_hook_events: bool,
    /// Accepted and ignored, as the flags after it: toolbelt cannot honour them (each
    /// says why in a warning and in the `init` message).
    #[arg(long, hide = true, value_name = "MODE")]
    pub thinking: Option<String>,
    #[arg(long, hide = true, value_name = "N")]
    #[allow(missing_docs)]
    pub max_thinking_tokens: Option<String>,
    #[arg(long, hide = true, value_name = "DISPLAY")]
    #[allow(missing_docs)]
    pub thinking_display: Option<String>,
    #[arg(long, hide = true, value_name = "LEVEL")]
    #[allow(missing_docs)]
    pub effort: Option<String>,
    #[arg(long, hide = true, value_name = "USD")]
    #[allow(missing_docs)]
    pub max_budget_usd: Option<String>,
    #[arg(long, hide = true, value_name = "TOKENS")]
    #[allow(missing_docs)]
    pub task_budget: Option<String>,
    #[arg(long, hide = true, value_name = "NAME")]
    #[allow(missing_docs)]
    pub agent: Option<String>,
    #[arg(long, hide = true, value_name = "BETAS")]
    #[allow(missing_docs)]
    pub betas: Option<String>,
    #[arg(long, hide = true, value_name = "SCHEMA")]
    #[allow(missing_docs)]
    pub json_schema: Option<String>,
    #[arg(long, hide = true, value_name = "MODEL")]
    #[allow(missing_docs)]
    pub fallback_model: Option<String>,
    #[arg(long, hide = true, value_name = "FILTER", num_args = 0..=1, default_missing_value = "")]
    #[allow(missing_docs)]
    pub debug: Option<String>,
    #[arg(long, hide = true, value_name = "FILE")]
    #[allow(missing_docs)]
    pub debug_file: Option<String>,
    #[arg(long, hide = true)]
    #[allow(missing_docs)]
    pub debug_to_stderr: bool,
    #[arg(long, hide = true, value_name = "MODE")]
    #[allow(missing_docs)]
    pub permission_prompts: Option<String>,
    #[arg(long, hide = true, value_name = "CHANNEL")]
    #[allow(missing_docs)]
    pub channels: Vec<String>,
    #[arg(long, hide = true)]
    #[allow(missing_docs)]
    pub session_mirror: bool,
    #[arg(long, hide = true, value_name = "DIR")]
    #[allow(missing_docs)]
    pub project_config_root: Option<String>,
    #[arg(long, hide = true, value_name = "MESSAGE")]
    #[allow(missing_docs)]
    pub resume_session_at: Option<String>,
    #[arg(long, hide = true, value_name = "VALUE")]
    #[allow(missing_docs)]
    pub resume_drops_turn: Option<String>,
    #[arg(long, hide = true, value_name = "NAME")]
    #[allow(missing_docs)]
    pub workload: Option<String>,
}

/// The flags accepted and not honoured, with why: `(flag, why)`.
pub(crate) const IGNORED: &[(&str, &str)] = &[
    (
        "--thinking",
        "the OpenAI-compatible API toolbelt speaks has no thinking budget",
    ),
    (
        "--max-thinking-tokens",
        "the OpenAI-compatible API toolbelt speaks has no thinking budget",
    ),
    (
        "--thinking-display",
        "the OpenAI-compatible API toolbelt speaks has no thinking budget",
    ),
    (
        "--effort",
        "toolbelt does not set the model's reasoning effort",
    ),
    (
        "--max-budget-usd",
        "toolbelt does not track cost (--max-turns limits a run)",
    ),
    ("--task-budget", "toolbelt does not track token budgets"),
    (
        "--agent",
        "the main agent is toolbelt's own (sub-agents are offered through the agent tool)",
    ),
    ("--betas", "they are Anthropic API betas"),
    (
        "--json-schema",
        "toolbelt does not hold the final answer to a schema",
    ),
    ("--fallback-model", "toolbelt retries the same model"),
    ("--debug", "toolbelt logs with TOOLBELT_LOG"),
    ("--debug-file", "toolbelt logs with TOOLBELT_LOG"),
    ("--debug-to-stderr", "toolbelt logs with TOOLBELT_LOG"),
    (
        "--permission-prompts",
        "toolbelt asks through the SDK's canUseTool",
    ),
    (
        "--permission-prompt-tool",
        "toolbelt asks through the SDK's canUseTool (stdio) only",
    ),
    ("--channels", "toolbelt has no channels"),
    (
        "--session-mirror",
        "transcripts are saved under toolbelt's home, not mirrored",
    ),
    (
        "--project-config-root",
        "the project's settings are read from the session's directory",
    ),
    (
        "--resume-session-at",
        "a resumed session continues from its end",
    ),
    (
        "--resume-drops-turn",
        "a resumed session continues from its end",
    ),
    ("--workload", "it only labels the run"),
    (
        "--plugin-dir",
        "a plugin's agents, commands and hooks are not loaded (its skills and MCP servers are)",
    ),
];

impl ClaudeArgs {
    /// What these flags change in how the session opens: the settings files read, the
    /// MCP servers, plugins' skills and servers.
    pub fn session(&self, options: &mut SessionOptions) {
        if let Some(sources) = &self.setting_sources {
            let names = list(sources);
            options.setting_sources = Some(SettingSources {
                user: names.iter().any(|n| n == "user"),
                project: names.iter().any(|n| n == "project"),
            });
        }
        options.mcp.strict |= self.strict_mcp_config;
        let plugins = (self.plugin_dir.iter().map(|d| (d, true)))
            .chain(self.plugin_dir_no_mcp.iter().map(|d| (d, false)));
        for (dir, with_mcp) in plugins {
            add_plugin(options, dir, with_mcp);
        }
    }

    /// What these flags change in the agent; the flags it cannot honour are added to
    /// [`AgentOptions::ignored`].
    pub fn agent(&self, options: &mut AgentOptions) {
        options
            .disallowed_tools
            .extend(self.disallowed_tools.iter().cloned());
        options.fork_session |= self.fork_session;
        options.persist_session &= !self.no_session_persistence;
        if let Some(tools) = self.tools.as_deref().filter(|t| t.trim() != "default") {
            let names = list(tools);
            // An empty list offers no built-in tool: a name that is no tool's does that.
            options.core_tools = if names.is_empty() {
                vec![String::new()]
            } else {
                names
            };
        }
        options
            .claude_settings
            .extend(self.settings.iter().chain(&self.managed_settings).cloned());
        for flag in self.ignored_flags() {
            if let Some((flag, why)) = IGNORED.iter().find(|(f, _)| *f == flag) {
                options.ignored.push(IgnoredFlag {
                    flag: (*flag).to_string(),
                    why: (*why).to_string(),
                });
            }
        }
    }

    /// The flags given that [`IGNORED`] names.
    fn ignored_flags(&self) -> Vec<&'static str> {
        let given = [
            ("--thinking", self.thinking.is_some()),
            ("--max-thinking-tokens", self.max_thinking_tokens.is_some()),
            ("--thinking-display", self.thinking_display.is_some()),
            ("--effort", self.effort.is_some()),
            ("--max-budget-usd", self.max_budget_usd.is_some()),
            ("--task-budget", self.task_budget.is_some()),
            ("--agent", self.agent.is_some()),
            ("--betas", self.betas.is_some()),
            ("--json-schema", self.json_schema.is_some()),
            ("--fallback-model", self.fallback_model.is_some()),
            ("--debug", self.debug.is_some()),
            ("--debug-file", self.debug_file.is_some()),
            ("--debug-to-stderr", self.debug_to_stderr),
            ("--permission-prompts", self.permission_prompts.is_some()),
            (
                "--permission-prompt-tool",
                self.permission_prompt_tool
                    .as_deref()
                    .is_some_and(|t| t != "stdio"),
            ),
            ("--channels", !self.channels.is_empty()),
            ("--session-mirror", self.session_mirror),
            ("--project-config-root", self.project_config_root.is_some()),
            ("--resume-session-at", self.resume_session_at.is_some()),
            ("--resume-drops-turn", self.resume_drops_turn.is_some()),
            ("--workload", self.workload.is_some()),
            (
                "--plugin-dir",
                (self.plugin_dir.iter().chain(&self.plugin_dir_no_mcp)).any(|dir| {
                    ["agents", "commands", "hooks"]
                        .iter()
                        .any(|d| dir.join(d).exists())
                }),
            ),
        ];
        given
            .into_iter()
            .filter_map(|(flag, on)| on.then_some(flag))
            .collect()
    }
}

/// A comma-separated list, without empty entries.
fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A Claude Code plugin at `dir`: its `skills/` folder, and (`with_mcp`) the servers of
/// its `.mcp.json` (`${CLAUDE_PLUGIN_ROOT}` in them is the plugin's directory).
pub(crate) fn add_plugin(options: &mut SessionOptions, dir: &Path, with_mcp: bool) {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    options.plugin_skills.push(dir.join("skills"));
    if !with_mcp {
        return;
    }
    let file = dir.join(".mcp.json");
    match read_bounded(&file) {
        Ok(Some(text)) => {
            let root = serde_json::to_string(&dir.to_string_lossy()).unwrap_or_default();
            let root = root.trim_matches('"');
            let text = text.replace("${CLAUDE_PLUGIN_ROOT}", root);
            options.mcp.mcp_config.push(text);
        }
        Ok(None) => {}
        Err(e) => options.warn.say(&format!(
            "plugin {}: cannot read .mcp.json: {e}",
            dir.display()
        )),
    }
}

/// The file's text, `None` when there is none; an error past the size limit.
fn read_bounded(file: &Path) -> std::io::Result<Option<String>> {
    use std::io::Read;
    let opened = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut text = String::new();
    opened
        .take(MAX_PLUGIN_MCP_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_PLUGIN_MCP_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {MAX_PLUGIN_MCP_BYTES} bytes"
        )));
    }
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        claude: ClaudeArgs,
    }

    fn parse(args: &[&str]) -> ClaudeArgs {
        let mut all = vec!["toolbelt"];
        all.extend_from_slice(args);
        Cli::try_parse_from(all).unwrap().claude
    }

    #[test]
    fn every_flag_the_sdk_builds_parses_and_the_unhonoured_are_named() {
        let args = parse(&[
            "--thinking=adaptive",
            "--max-thinking-tokens=2048",
            "--thinking-display=summarized",
            "--effort=high",
            "--max-budget-usd=0.5",
            "--task-budget=1000",
            "--agent=reviewer",
            "--betas=context-1m",
            "--json-schema={\"type\":\"object\"}",
            "--fallback-model=other",
            "--debug",
            "--debug-file=/tmp/x.log",
            "--debug-to-stderr",
            "--permission-prompts=auto",
            "--permission-prompt-tool=mcp__x__approve",
            "--channels=a",
            "--channels=b",
            "--session-mirror",
            "--project-config-root=/p",
            "--resume-session-at=abc",
            "--resume-drops-turn=true",
            "--workload=batch",
            "--include-hook-events",
            "--initialize-fields=settings,disallowedTools",
            "--managed-settings-in-initialize",
            "--setting-sources=",
            "--tools=",
            "--strict-mcp-config",
            "--fork-session",
            "--no-session-persistence",
        ]);
        let mut agent = AgentOptions::default();
        args.agent(&mut agent);
        let ignored: Vec<&str> = agent.ignored.iter().map(|i| i.flag.as_str()).collect();
        let expected: Vec<&str> = IGNORED
            .iter()
            .map(|(f, _)| *f)
            .filter(|f| *f != "--plugin-dir")
            .collect();
        assert_eq!(ignored, expected);
        assert!(agent.fork_session && !agent.persist_session);
        assert_eq!(
            agent.core_tools,
            [""],
            "an empty --tools offers no built-in"
        );
        let mut session = SessionOptions::default();
        args.session(&mut session);
        assert_eq!(
            session.setting_sources,
            Some(SettingSources {
                user: false,
                project: false
            })
        );
        assert!(session.mcp.strict);
    }

    #[test]
    fn tools_settings_and_sources_map_onto_the_options() {
        let args = parse(&[
            "--tools=Read,Bash",
            "--setting-sources=user,local",
            "--settings={\"permissions\":{\"deny\":[\"Bash\"]}}",
            "--disallowedTools=WebFetch",
            "--permission-prompt-tool=stdio",
        ]);
        let mut agent = AgentOptions::default();
        args.agent(&mut agent);
        assert_eq!(agent.core_tools, ["Read", "Bash"]);
        assert_eq!(agent.claude_settings.len(), 1);
        assert_eq!(agent.disallowed_tools, ["WebFetch"]);
        assert!(agent.ignored.is_empty(), "{:?}", agent.ignored);
        let mut session = SessionOptions::default();
        args.session(&mut session);
        assert_eq!(
            session.setting_sources,
            Some(SettingSources {
                user: true,
                project: false
            })
        );
        let mut agent = AgentOptions::default();
        parse(&["--tools=default"]).agent(&mut agent);
        assert!(agent.core_tools.is_empty(), "default offers every built-in");
    }

    #[test]
    fn a_plugin_brings_its_skills_and_its_mcp_servers_with_its_root() {
        let dir = tempfile::tempdir().unwrap();
        let plugin = dir.path().join("plug");
        std::fs::create_dir_all(plugin.join("skills")).unwrap();
        std::fs::write(
            plugin.join(".mcp.json"),
            r#"{"mcpServers": {"db": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/db"}}}"#,
        )
        .unwrap();
        let root = plugin.canonicalize().unwrap();
        let mut session = SessionOptions::default();
        add_plugin(&mut session, &plugin, true);
        assert_eq!(session.plugin_skills, [root.join("skills")]);
        let config: serde_json::Value = serde_json::from_str(&session.mcp.mcp_config[0]).unwrap();
        assert_eq!(
            config["mcpServers"]["db"]["command"],
            format!("{}/bin/db", root.display())
        );
        let mut session = SessionOptions::default();
        add_plugin(&mut session, &plugin, false);
        assert!(session.mcp.mcp_config.is_empty());
    }
}
