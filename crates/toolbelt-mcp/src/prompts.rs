//! A server's prompts as commands a person types: `/<server>:<prompt> name=value ...`.
//!
//! The command is parsed against the prompt's arguments as the server listed them, so a
//! missing required argument or an unknown one is named before anything is sent. A
//! prompt with a single argument also takes the whole rest of the line as its value
//! (`/srv:summarize some text`). The messages `prompts/get` returns become one text the
//! session sends as the person's prompt: text as it is, embedded text resources
//! inlined, anything else named (see `content::map_block`).

use crate::error::McpError;
use std::sync::Arc;

use rmcp::model::Role;
use serde_json::{Map, Value};
use toolbelt_core::Part;

use crate::McpServers;
use crate::catalog::McpPrompt;
use crate::connection::McpConnection;

impl McpServers {
    /// Every prompt of every connected server, in configuration order.
    pub fn prompts(&self) -> Vec<McpPrompt> {
        self.connections()
            .iter()
            .flat_map(|c| c.prompts())
            .collect()
    }

    /// `server:uri` of every listed resource, for completing `@server:uri`.
    pub fn resource_references(&self) -> Vec<String> {
        (self.connections().iter())
            .flat_map(|c| {
                let alias = c.alias().to_string();
                c.resource_uris()
                    .into_iter()
                    .map(move |uri| format!("{alias}:{uri}"))
            })
            .collect()
    }

    /// Waits until every server `prompt` needs ([`servers_named`]) ended its start under
    /// way (each at most its `startupTimeout`), so a reference to a server still starting
    /// is read from it rather than refused: what the person named is what they want.
    pub async fn wait_for_prompt(&self, prompt: &str) {
        let named = servers_named(prompt, &self.aliases());
        if !named.is_empty() {
            self.wait_started(&named).await;
        }
    }

    /// Whether `line` is `/<server>:<prompt> ...` for a prompt of one of these servers,
    /// or for a server still starting (whose prompts are not known yet).
    pub fn is_prompt_command(&self, line: &str) -> bool {
        self.find_prompt(line).is_some() || self.starting_server_of(line).is_some()
    }

    /// Runs the prompt command `line`: `None` when it names no prompt of these
    /// servers; otherwise the text to send as the prompt, or why not (a missing or
    /// unknown argument, a failed `prompts/get`). A server still starting is waited
    /// for (at most its `startupTimeout`): its prompt is what the person asked for.
    pub async fn run_prompt_command(&self, line: &str) -> Option<Result<String, McpError>> {
        if let Some(starting) = self.starting_server_of(line) {
            starting.wait_started().await;
        }
        let (connection, prompt, rest) = self.find_prompt(line)?;
        let arguments = match prompt_arguments(&prompt, rest) {
            Ok(arguments) => arguments,
            Err(why) => return Some(Err(McpError::PromptArguments(why))),
        };
        Some(
            connection
                .get_prompt(&prompt.name, arguments)
                .await
                .map(|result| messages_text(&prompt.name, result.messages))
                .map_err(McpError::Prompt),
        )
    }

    /// The server `line` names as `/<server>:...` when it is still starting.
    fn starting_server_of(&self, line: &str) -> Option<Arc<McpConnection>> {
        let rest = line.trim_start().strip_prefix('/')?;
        let (server, _) = rest.split_once(':')?;
        (self.connections().iter())
            .find(|c| c.alias() == server && c.status() == crate::ServerStatus::Connecting)
            .cloned()
    }

    pub(crate) fn find_prompt<'l>(
        &self,
        line: &'l str,
    ) -> Option<(Arc<McpConnection>, McpPrompt, &'l str)> {
        let rest = line.trim_start().strip_prefix('/')?;
        let (command, args) = match rest.split_once(char::is_whitespace) {
            Some((command, args)) => (command, args.trim()),
            None => (rest.trim_end(), ""),
        };
        let (server, name) = command.split_once(':')?;
        let connection = self.connections().iter().find(|c| c.alias() == server)?;
        let prompt = connection.prompts().into_iter().find(|p| p.name == name)?;
        Some((connection.clone(), prompt, args))
    }
}

/// `name=value` words (shell quoting), or the whole text for a prompt of one argument.
fn prompt_arguments(prompt: &McpPrompt, text: &str) -> Result<Map<String, Value>, String> {
    let command = format!("/{}", prompt.command());
    let words = shlex::split(text)
        .ok_or_else(|| format!("{command}: the arguments have an unclosed quote"))?;
    let mut arguments = Map::new();
    let single = match prompt.arguments.as_slice() {
        [only] if !words.is_empty() && words.iter().all(|w| !w.contains('=')) => Some(only),
        _ => None,
    };
    if let Some(only) = single {
        arguments.insert(only.name.clone(), Value::String(text.trim().to_string()));
    } else {
        for word in words {
            let Some((name, value)) = word.split_once('=') else {
                return Err(format!(
                    "{command}: arguments are name=value, got \"{word}\" ({})",
                    usage(prompt)
                ));
            };
            if !prompt.arguments.iter().any(|a| a.name == name) {
                return Err(format!(
                    "{command} has no argument \"{name}\" ({})",
                    usage(prompt)
                ));
            }
            arguments.insert(name.to_string(), Value::String(value.to_string()));
        }
    }
    let missing: Vec<&str> = prompt
        .arguments
        .iter()
        .filter(|a| a.required && !arguments.contains_key(&a.name))
        .map(|a| a.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{command} needs the argument{} {} ({})",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            usage(prompt)
        ));
    }
    Ok(arguments)
}

/// `usage: /srv:p city=... [state=...]`.
fn usage(prompt: &McpPrompt) -> String {
    format!("usage: /{} {}", prompt.command(), prompt.argument_hint())
        .trim_end()
        .to_string()
}

/// The messages of a prompt as one text: the person's words as they are, the
/// assistant's marked as such.
fn messages_text(name: &str, messages: Vec<rmcp::model::PromptMessage>) -> String {
    let mut texts = Vec::new();
    for message in messages {
        let mut parts = Vec::new();
        let mut display = Vec::new();
        crate::content::map_block(name, message.content, &mut parts, &mut display);
        let text: Vec<&str> = parts.iter().filter_map(Part::as_text).collect();
        let text = text.join("\n");
        match message.role {
            Role::Assistant => texts.push(format!("Assistant: {text}")),
            _ => texts.push(text),
        }
    }
    texts.join("\n\n")
}

/// The servers among `aliases` that `prompt` needs before it is sent: `/<server>:<prompt>`
/// at its start (the prompt's text comes from the server) and `@<server>:<uri>` anywhere
/// (the resource is attached).
pub fn servers_named(prompt: &str, aliases: &[String]) -> Vec<String> {
    let line = prompt.trim_start();
    (aliases.iter())
        .filter(|alias| {
            line.starts_with(&format!("/{alias}:")) || prompt.contains(&format!("@{alias}:"))
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::McpPromptArgument;

    fn prompt(args: &[(&str, bool)]) -> McpPrompt {
        McpPrompt {
            server: "srv".into(),
            name: "p".into(),
            description: String::new(),
            arguments: args
                .iter()
                .map(|(name, required)| McpPromptArgument {
                    name: name.to_string(),
                    description: String::new(),
                    required: *required,
                })
                .collect(),
        }
    }

    #[test]
    fn arguments_are_named_values_checked_against_the_prompt() {
        let p = prompt(&[("city", true), ("state", false)]);
        let args = prompt_arguments(&p, "city=\"New York\" state=NY").unwrap();
        assert_eq!(args["city"], "New York");
        assert_eq!(args["state"], "NY");
        assert_eq!(
            prompt_arguments(&p, "state=NY").unwrap_err(),
            "/srv:p needs the argument city (usage: /srv:p city=... [state=...])"
        );
        assert!(
            prompt_arguments(&p, "town=x")
                .unwrap_err()
                .contains("no argument \"town\"")
        );
        let one = prompt(&[("text", true)]);
        assert_eq!(
            prompt_arguments(&one, "two words").unwrap()["text"],
            "two words"
        );
    }
}
