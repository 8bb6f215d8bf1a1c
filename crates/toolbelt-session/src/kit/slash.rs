//! Slash commands typed in the interactive editor: parsing, and the text each command
//! shows. The UI runs what needs the session (clearing, compressing, switching the
//! approval mode); the texts are built here from the session's parts so they are
//! tested without a terminal.

use crate::error::{CommandError, MemoryError};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolbelt_agent::context_files::ContextFile;
use toolbelt_config::ApprovalMode;
use toolbelt_core::{ConfirmationOutcome, Tool, ToolEnvironment};
use toolbelt_engine::{registry::Origin, registry::ToolRegistry};
use toolbelt_engine::{
    scheduler::Approval, scheduler::ApprovalRequest, scheduler::Approver, scheduler::CallRules,
    scheduler::Scheduler, scheduler::SchedulerConfig, scheduler::ToolCallRequest,
    scheduler::TurnInfo,
};
use toolbelt_mcp::{ServerReport, ServerStatus};

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
    /// `/help`: the commands and key bindings.
    Help,
    /// `/tools`: the session's tools.
    Tools,
    /// `/mcp`: the MCP servers and their tools.
    Mcp,
    /// `/mcp auth NAME`: an OAuth login to that server (`toolbelt mcp auth`).
    McpAuth(String),
    /// `/hooks`: the hooks of the settings, as `toolbelt hooks list` shows them.
    Hooks,
    /// `/memory show` (also bare `/memory`): the context files loaded.
    MemoryShow,
    /// `/memory add [--project] <text>`: saves a fact, as `save_memory` does.
    MemoryAdd {
        /// The fact.
        fact: String,
        /// Into the project's memory file instead of the global one.
        project: bool,
    },
    /// `/memory refresh`: reads the context files again.
    MemoryRefresh,
    /// `/clear`: forgets the conversation.
    Clear,
    /// `/compress`: replaces the conversation with a summary.
    Compress,
    /// `/approval-mode [mode]`: shows or sets the approval mode.
    ApprovalMode(Option<ApprovalMode>),
    /// `/stats`: tokens, calls and time of this session.
    Stats,
    /// `/model [NAME]`: the configured models, or a switch to one
    /// ([`super::model_switch`]).
    Model(Option<String>),
    /// `/quit` (also `/exit`).
    Quit,
    /// `/restore`, `/rewind`, `/diff` (issue 34; see [`super::undo`]).
    Undo(super::undo::UndoCommand),
}

/// Every command: name, arguments, what it does (for `/help` and completion).
pub const COMMANDS: &[(&str, &str, &str)] = &[
    ("help", "", "show the commands and keys"),
    ("tools", "", "list the tools of this session"),
    (
        "mcp",
        "[auth NAME]",
        "show the MCP servers, their status and tools, or log in to one (OAuth)",
    ),
    (
        "memory",
        "show | add [--project] <text> | refresh",
        "show, add to or reload the context files (QWEN.md)",
    ),
    ("clear", "", "forget the conversation and start afresh"),
    (
        "compress",
        "",
        "replace the conversation with a summary the model writes",
    ),
    (
        "approval-mode",
        "[plan|default|auto-edit|yolo]",
        "show or set what runs without asking",
    ),
    (
        "loop",
        "[interval] <prompt> | list | clear | cancel <id>",
        "run a prompt now and again on a schedule while the session is idle",
    ),
    ("stats", "", "tokens, tool calls and time of this session"),
    (
        "model",
        "[NAME]",
        "show the configured models, or switch the session to one",
    ),
    (
        "hooks",
        "",
        "show the configured hooks, their files and whether each runs here",
    ),
    (
        "restore",
        "[ID [--force] [PATH...]]",
        "list the file checkpoints, or restore one (shows the diff, asks first)",
    ),
    (
        "rewind",
        "[TURN [--force]]",
        "list the turns, or take the files and the conversation back to before one",
    ),
    (
        "diff",
        "",
        "the working tree against git's HEAD, and what each turn changed",
    ),
    ("quit", "", "leave (also Ctrl-D on an empty line)"),
];

/// Key bindings, for `/help`.
pub const KEYS: &[(&str, &str)] = &[
    ("Enter", "send (Alt-Enter or Ctrl-J: new line)"),
    ("Up / Down", "earlier prompts of this project"),
    ("Tab", "complete @path, #tool and /command"),
    ("Shift-Tab", "cycle the approval mode"),
    ("Esc", "cancel the running request; deny a confirmation"),
    ("Ctrl-C twice", "quit"),
    ("Ctrl-D", "quit on an empty line"),
];

/// `None` when `line` is not a slash command (it does not start with `/`, or starts
/// with `//` or a path such as `/usr/bin` followed by more path); otherwise the command
/// or a message saying what is wrong, with the closest command for a misspelling.
pub fn parse(line: &str) -> Option<Result<SlashCommand, CommandError>> {
    let line = line.trim();
    let rest = line.strip_prefix('/')?;
    let (name, args) = match rest.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (rest, ""),
    };
    // A path typed as a prompt (`/etc/hosts is wrong`) is not a command.
    if name.is_empty() || name.contains('/') {
        return None;
    }
    let no_args = |cmd: SlashCommand| {
        if args.is_empty() {
            Ok(cmd)
        } else {
            Err(CommandError::Usage(format!("/{name} takes no arguments")))
        }
    };
    Some(match name.to_ascii_lowercase().as_str() {
        "help" | "?" => no_args(SlashCommand::Help),
        "tools" => no_args(SlashCommand::Tools),
        "mcp" => match args.split_whitespace().collect::<Vec<_>>()[..] {
            [] => Ok(SlashCommand::Mcp),
            ["auth", name] => Ok(SlashCommand::McpAuth(name.to_string())),
            _ => Err(CommandError::Usage(
                "usage: /mcp, or /mcp auth NAME to log in to a server".to_string(),
            )),
        },
        "hooks" => no_args(SlashCommand::Hooks),
        "clear" => no_args(SlashCommand::Clear),
        "compress" => no_args(SlashCommand::Compress),
        "stats" => no_args(SlashCommand::Stats),
        "model" => Ok(SlashCommand::Model(
            (!args.is_empty()).then(|| args.to_string()),
        )),
        "quit" | "exit" => no_args(SlashCommand::Quit),
        "memory" => parse_memory(args).map_err(CommandError::Usage),
        "restore" | "rewind" | "diff" => {
            super::undo::parse(&name.to_ascii_lowercase(), args).map(SlashCommand::Undo)
        }
        "approval-mode" => {
            if args.is_empty() {
                Ok(SlashCommand::ApprovalMode(None))
            } else {
                args.parse::<ApprovalMode>()
                    .map(|m| SlashCommand::ApprovalMode(Some(m)))
                    .map_err(CommandError::Usage)
            }
        }
        other => Err(CommandError::Unknown(unknown(other))),
    })
}

fn parse_memory(args: &str) -> Result<SlashCommand, String> {
    let (sub, rest) = match args.split_once(char::is_whitespace) {
        Some((s, r)) => (s, r.trim()),
        None => (args, ""),
    };
    match sub {
        "" | "show" if rest.is_empty() => Ok(SlashCommand::MemoryShow),
        "refresh" if rest.is_empty() => Ok(SlashCommand::MemoryRefresh),
        "add" => {
            let (project, fact) = match rest.strip_prefix("--project") {
                Some(f) if f.is_empty() || f.starts_with(char::is_whitespace) => (true, f.trim()),
                _ => (false, rest),
            };
            if fact.is_empty() {
                Err("usage: /memory add [--project] <text to remember>".to_string())
            } else {
                Ok(SlashCommand::MemoryAdd {
                    fact: fact.to_string(),
                    project,
                })
            }
        }
        _ => Err(format!(
            "usage: /memory show | add [--project] <text> | refresh (got '/memory {args}')"
        )),
    }
}

fn unknown(name: &str) -> String {
    // A command the name begins, else the nearest by edit distance (at most 2 edits).
    let by_prefix = COMMANDS
        .iter()
        .map(|(c, _, _)| *c)
        .find(|c| name.len() >= 2 && c.starts_with(name));
    let closest = by_prefix.or_else(|| {
        COMMANDS
            .iter()
            .map(|(c, _, _)| (strsim::damerau_levenshtein(name, c), *c))
            .filter(|(d, _)| *d <= 2)
            .min()
            .map(|(_, c)| c)
    });
    match closest {
        Some(c) => format!("unknown command /{name}; did you mean /{c}? (/help lists them)"),
        None => format!("unknown command /{name}; /help lists the commands"),
    }
}

/// `/help`.
pub fn help_text(prompts: &[toolbelt_mcp::McpPrompt]) -> String {
    let mut s = String::from("Commands:\n");
    for (name, args, what) in COMMANDS {
        let usage = if args.is_empty() {
            format!("/{name}")
        } else {
            format!("/{name} {args}")
        };
        s.push_str(&format!("  {usage:<54} {what}\n"));
    }
    if !prompts.is_empty() {
        s.push_str("\nMCP prompts (what the server returns is sent as your prompt):\n");
        for p in prompts {
            let usage = format!("/{} {}", p.command(), p.argument_hint());
            let what = p.description.lines().next().unwrap_or_default();
            s.push_str(&format!("  {:<54} {what}\n", usage.trim_end()));
        }
    }
    s.push_str("\nIn a prompt:\n  @path                                                  attach a file of the workspace\n  @server:uri                                            attach a resource of an MCP server\n  #tool                                                  make the model use that tool\n\nKeys:\n");
    for (key, what) in KEYS {
        s.push_str(&format!("  {key:<54} {what}\n"));
    }
    s
}

/// `/tools`: one line per tool (name, kind, whether it asks, where it comes from, the
/// first sentence of its description), built-ins first.
pub fn tools_text(registry: &ToolRegistry) -> String {
    let mut rows: Vec<(u8, String)> = registry
        .all()
        .map(|r| {
            let (rank, origin) = match &r.origin {
                Origin::BuiltIn => (0, "built-in".to_string()),
                Origin::Declared => (1, "declared".to_string()),
                Origin::Discovered => (2, "discovered".to_string()),
                Origin::Mcp { server } => (3, format!("mcp:{server}")),
                _ => (4, "other".to_string()),
            };
            let tool: &dyn Tool = &*r.tool;
            let asks = if tool.needs_confirmation() {
                "asks"
            } else {
                "    "
            };
            (
                rank,
                format!(
                    "  {:<28} {:<8} {asks} {:<14} {}",
                    r.name,
                    tool.kind().as_str(),
                    origin,
                    first_sentence(tool.description())
                ),
            )
        })
        .collect();
    rows.sort();
    let mut s = format!("{} tools:\n", rows.len());
    for (_, row) in rows {
        s.push_str(row.trim_end());
        s.push('\n');
    }
    s
}

fn first_sentence(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let end = line.find(". ").map(|i| i + 1).unwrap_or(line.len());
    let sentence = &line[..end];
    if sentence.chars().count() > 80 {
        let cut: String = sentence.chars().take(79).collect();
        format!("{cut}…")
    } else {
        sentence.to_string()
    }
}

/// `/hooks`: what `toolbelt hooks list` prints for the session's settings (read with
/// the same folder trust), so the two never disagree.
pub fn hooks_text(env: &ToolEnvironment) -> String {
    toolbelt_hooks::HookListing::from_settings(&env.settings).text()
}

/// `/mcp`: each server with its transport, status (and why it failed) and tools.
pub fn mcp_text(reports: &[ServerReport]) -> String {
    if reports.is_empty() {
        return "No MCP servers are configured (mcpServers in settings.json).\n".to_string();
    }
    let mut s = String::from("MCP servers:\n");
    for r in reports {
        let status = match &r.status {
            ServerStatus::Connected => {
                format!("connected, {}", crate::listing::mcp_counts(r))
            }
            ServerStatus::Connecting => "connecting".to_string(),
            ServerStatus::Failed(why) => format!("failed: {why}"),
            other => other.to_string(),
        };
        s.push_str(&format!(
            "  {} ({} {}): {status}\n",
            r.alias, r.transport, r.target
        ));
        for (name, _, description) in &r.tools {
            s.push_str(&format!("    {name}  {}\n", first_sentence(description)));
        }
    }
    s
}

/// `/memory show`: the context files in the order they reach the system prompt, each
/// with its size and text.
pub fn memory_text(files: &[ContextFile]) -> String {
    if files.is_empty() {
        return "No context files are loaded (QWEN.md, AGENTS.md or context.fileName).\n"
            .to_string();
    }
    let total: usize = files.iter().map(|f| f.text.len()).sum();
    let mut s = format!(
        "{} context file(s), {total} bytes, in the system prompt:\n",
        files.len()
    );
    for f in files {
        s.push_str(&format!(
            "\n--- {} ({} bytes) ---\n{}\n",
            f.path.display(),
            f.text.len(),
            f.text.trim_end()
        ));
    }
    s
}

/// `/memory add`: saves `fact` through the `save_memory` tool (same file, section and
/// atomic write) and a scheduler made from the session's `rules` like any call, so the
/// settings' and the flags' rules, the hooks and the checkpoints hold; the person typed
/// it, so their command is the approval. Returns the tool's message; the UI should then
/// reload the context files.
pub async fn memory_add(
    rules: CallRules,
    env: Arc<ToolEnvironment>,
    home: Option<PathBuf>,
    fact: &str,
    project: bool,
) -> Result<String, MemoryError> {
    let mut registry = ToolRegistry::new();
    registry.register(
        Arc::new(toolbelt_tools::SaveMemory::with_home(env.clone(), home)),
        Origin::BuiltIn,
    );
    let scope = if project { "project" } else { "global" };
    let config = SchedulerConfig::new(rules).approver(Some(Arc::new(PersonTypedIt)));
    let scheduler = Scheduler::new(env.clone(), config);
    let request = ToolCallRequest::new(
        "memory-add",
        "save_memory",
        &json!({"fact": fact, "scope": scope}),
    );
    let done = scheduler
        .run(
            &registry,
            vec![request],
            TurnInfo::default(),
            &CancellationToken::new(),
        )
        .await;
    let result = done
        .into_iter()
        .next()
        .map(|c| c.result)
        .ok_or(MemoryError::NoResult)?;
    match result.error {
        Some(e) => Err(MemoryError::Tool(e.message)),
        None => Ok(result.llm_text()),
    }
}

/// The approver of a command the person typed: the command is their answer.
struct PersonTypedIt;

impl Approver for PersonTypedIt {
    fn approve<'a>(
        &'a self,
        _request: &'a ApprovalRequest,
    ) -> toolbelt_core::BoxFuture<'a, Approval> {
        Box::pin(async { ConfirmationOutcome::ProceedOnce.into() })
    }
}

/// A resumed conversation (`--continue`, `--resume`), as the terminal shows it first:
/// its size and last exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resumed {
    /// The person's prompts in it.
    pub prompts: usize,
    /// The last one's text.
    pub last_prompt: String,
    /// The model's last answer with text.
    pub answer: Option<String>,
}

impl Resumed {
    /// "Resumed a conversation of 3 prompts; the last exchange:".
    pub fn heading(&self) -> String {
        format!(
            "Resumed a conversation of {} prompt{}; the last exchange:",
            self.prompts,
            if self.prompts == 1 { "" } else { "s" }
        )
    }
}

/// What a resumed `history` holds; `None` when it has no prompt.
pub fn resumed(history: &[toolbelt_model::Message]) -> Option<Resumed> {
    use toolbelt_model::{Message, UserPart};
    let prompts: Vec<String> = history
        .iter()
        .filter_map(|m| match m {
            Message::User(parts) => {
                let text: Vec<&str> = parts
                    .iter()
                    .filter_map(|p| match p {
                        UserPart::Text(t) => Some(t.as_str()),
                        _ => None,
                    })
                    .collect();
                Some(text.join("\n"))
            }
            _ => None,
        })
        .collect();
    let last_prompt = prompts.last()?.clone();
    let answer = history.iter().rev().find_map(|m| match m {
        Message::Assistant { text, .. } if !text.trim().is_empty() => Some(text.clone()),
        _ => None,
    });
    Some(Resumed {
        prompts: prompts.len(),
        last_prompt,
        answer,
    })
}

/// Completion for `/`: the commands whose name starts with `typed` (without the
/// slash), with their descriptions.
pub fn command_candidates(typed: &str) -> Vec<(&'static str, &'static str)> {
    COMMANDS
        .iter()
        .filter(|(name, _, _)| name.starts_with(typed))
        .map(|(name, _, what)| (*name, *what))
        .collect()
}

#[cfg(test)]
mod tests;
