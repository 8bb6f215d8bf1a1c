//! Slash commands typed in the editor's prompt box: toolbelt's own, as in the terminal
//! (`toolbelt_session::kit::slash`), and the MCP servers' prompts (`/server:prompt`,
//! expanded in `prompt.rs`). A command's text answers the prompt as the agent's message;
//! no model is asked. Commands that need the terminal (`/quit`, `/loop`, `/stats`,
//! `/restore`, `/rewind`, `/diff`) say what to use in an editor instead.

use agent_client_protocol_schema::v1::{
    AvailableCommand, AvailableCommandInput, UnstructuredCommandInput,
};
use tokio_util::sync::CancellationToken;
use toolbelt_session::kit::slash::{self, SlashCommand};

use crate::live::Live;

/// The commands an editor lists: the ones toolbelt runs here, then the MCP prompts.
const HERE: [&str; 9] = [
    "help",
    "tools",
    "mcp",
    "hooks",
    "memory",
    "clear",
    "compress",
    "approval-mode",
    "model",
];

/// What `available_commands_update` lists.
pub(crate) fn available(live: &Live) -> Vec<AvailableCommand> {
    let own = slash::COMMANDS
        .iter()
        .filter(|(name, _, _)| HERE.contains(name))
        .map(|(name, args, about)| command(name, about, args));
    let prompts = live.prepared.mcp.prompts();
    let mcp = prompts
        .iter()
        .map(|p| command(&p.command(), &p.description, &p.argument_hint()));
    own.chain(mcp).collect()
}

fn command(name: &str, about: &str, hint: &str) -> AvailableCommand {
    let input = (!hint.is_empty())
        .then(|| AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(hint)));
    AvailableCommand::new(name, about).input(input)
}

/// Runs `text` when it is one of toolbelt's commands, saying its answer; `false` when it
/// is not a command (or is an MCP prompt, which becomes the prompt).
pub(crate) async fn run(live: &Live, text: &str, cancel: &CancellationToken) -> bool {
    let mcp_prompt = live.prepared.mcp.prompts().iter().any(|p| {
        text.trim_start()
            .strip_prefix('/')
            .is_some_and(|t| t.starts_with(&p.command()))
    });
    if mcp_prompt {
        return false;
    }
    if text.trim_start().starts_with("/loop") {
        live.updates
            .say("/loop needs toolbelt's own terminal (`toolbelt -i`).");
        return true;
    }
    let said = match slash::parse(text) {
        None => return false,
        Some(Err(why)) => why.to_string(),
        Some(Ok(command)) => answer(live, command, cancel).await,
    };
    live.updates.say(&said);
    true
}

async fn answer(live: &Live, command: SlashCommand, cancel: &CancellationToken) -> String {
    let p = &live.prepared;
    let env = p.agent.scheduler().env().clone();
    match command {
        SlashCommand::Help => slash::help_text(&p.mcp.prompts()),
        SlashCommand::Tools => slash::tools_text(&p.agent.registry()),
        SlashCommand::Mcp => slash::mcp_text(&p.mcp.reports()),
        SlashCommand::Hooks => slash::hooks_text(&env),
        SlashCommand::MemoryShow => slash::memory_text(live.context_files().as_slice()),
        SlashCommand::MemoryRefresh => {
            live.reload_context_files();
            format!(
                "Reloaded the context files; the next prompt's system prompt has them.\n{}",
                slash::memory_text(live.context_files().as_slice())
            )
        }
        SlashCommand::MemoryAdd { fact, project } => {
            let rules = p.agent.scheduler().rules();
            let home = env.user_home.clone();
            match slash::memory_add(rules, env, home, &fact, project).await {
                Ok(text) => {
                    live.reload_context_files();
                    text
                }
                Err(e) => format!("/memory add failed: {e}"),
            }
        }
        SlashCommand::Clear => {
            p.agent.set_history(Vec::new());
            "Conversation cleared: the next prompt starts afresh.".to_string()
        }
        SlashCommand::Compress => match p.agent.compress(cancel).await {
            Ok(c) => format!(
                "Compressed the conversation: {} messages ({} characters) became {} ({} characters).",
                c.before_messages, c.before_chars, c.after_messages, c.after_chars
            ),
            Err(e) => format!("/compress failed: {e}"),
        },
        SlashCommand::ApprovalMode(None) => {
            let mode = p.agent.scheduler().mode();
            format!("approval mode: {mode} (plan, default, auto-edit, yolo)")
        }
        SlashCommand::ApprovalMode(Some(mode)) => match live.set_mode(mode.as_str()) {
            Ok(()) => format!("approval mode: {mode}"),
            Err(e) => format!("/approval-mode failed: {}", e.message),
        },
        SlashCommand::Model(None) => {
            let current = p.model.current_name();
            toolbelt_session::kit::model_switch::ModelSwitch::new(p).list(&current)
        }
        SlashCommand::Model(Some(name)) => match live.set_model(&name) {
            Ok(()) => {
                live.options_changed();
                format!("The session now talks to {name}.")
            }
            Err(e) => format!(
                "/model {name}: {}",
                e.data.map(|d| d.to_string()).unwrap_or(e.message)
            ),
        },
        SlashCommand::Quit => "In an editor, close the thread to end the session.".to_string(),
        _ => "This command needs toolbelt's own terminal (`toolbelt -i`).".to_string(),
    }
}
