//! MCP prompts and resources in a stream-JSON session: the prompts are the session's
//! slash commands (`supported_commands`, `system`/`init`'s `slash_commands`), a user
//! message `/<server>:<prompt> name=value` is replaced by what `prompts/get` returns, and
//! `@server:uri` in a user message attaches that resource (see `at_paths`).

use serde_json::{Value, json};
use toolbelt_agent::{RunOutcome, at_paths};
use toolbelt_mcp::McpServers;
use toolbelt_model::UserPart;
use toolbelt_session::Prepared;

/// The commands as Claude's SDK describes them (`name`, `description`, `argumentHint`).
pub(crate) fn commands(mcp: &McpServers) -> Vec<Value> {
    mcp.prompts()
        .iter()
        .map(|p| {
            json!({
                "name": p.command(),
                "description": p.description,
                "argumentHint": p.argument_hint(),
            })
        })
        .collect()
}

/// The message's text parts after the prompt command and `@server:uri` references;
/// `Err` is the outcome to report when a prompt command failed (nothing reached the model).
pub(crate) async fn expand(
    prepared: &Prepared,
    parts: Vec<UserPart>,
) -> Result<Vec<UserPart>, RunOutcome> {
    let servers = prepared.mcp.aliases();
    let agent = &prepared.agent;
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        let UserPart::Text(text) = part else {
            out.push(part);
            continue;
        };
        let text = match prepared.mcp.run_prompt_command(&text).await {
            None => text,
            Some(Ok(expanded)) => expanded,
            Some(Err(why)) => return Err(RunOutcome::prompt_not_made(why.to_string())),
        };
        // `@<server>:<uri>` of a server still starting: read once it is up.
        prepared.mcp.wait_for_prompt(&text).await;
        agent.sync_tools().await;
        let mut inlined =
            at_paths::inline_resources(&text, &agent.registry(), agent.scheduler(), &servers).await;
        for warning in std::mem::take(&mut inlined.warnings) {
            tracing::warn!("{warning}");
        }
        out.extend(inlined.parts(agent.takes_images()));
    }
    Ok(out)
}
