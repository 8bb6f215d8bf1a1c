//! What Claude Code's flags (`claude_flags.rs`) do to a session: what maps onto
//! toolbelt becomes session and agent options (`--fork-session`,
//! `--no-session-persistence`, `--setting-sources`, `--strict-mcp-config`, `--tools`,
//! `--plugin-dir` (a plugin's skills and MCP servers), `--settings` and
//! `--managed-settings` (their permission rules)). What does not (a cost budget,
//! thinking tokens, effort, Anthropic betas, ...) is listed in `AgentOptions::ignored`:
//! said as a warning on stderr and named in the `init` message.

use toolbelt_session::{AgentOptions, IgnoredFlag, SessionOptions, SettingSources};

use crate::claude_flags::ClaudeArgs;

/// The flags accepted and not honoured, with why: `(flag, why)`.
pub const IGNORED: &[(&str, &str)] = &[
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
            toolbelt_stream_json::add_plugin(options, dir, with_mcp);
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
}
