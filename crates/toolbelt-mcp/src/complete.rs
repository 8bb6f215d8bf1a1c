//! Completing a prompt command's arguments as the person types
//! `/server:prompt name=va`: the names of the arguments not given yet, and for
//! `name=value` the values the server offers (`completion/complete`, when it declares
//! completions), with the arguments typed so far as context (a server may narrow one
//! argument's values by another's).

use std::collections::HashMap;

use crate::McpServers;

/// How many values of one completion are offered at most.
const MOST_VALUES: usize = 20;

impl McpServers {
    /// Completions of the last word of `typed` (the text before the cursor) when it is
    /// an argument of a prompt command: whole words, `name=value` or `name=`. Empty when
    /// `typed` is no prompt command with arguments begun, and when the server's
    /// completion fails (a warning).
    pub async fn complete_prompt_argument(&self, typed: &str) -> Vec<String> {
        let Some((connection, prompt, _)) = self.find_prompt(typed) else {
            return Vec::new();
        };
        let Some((_, args)) = typed.trim_start().split_once(char::is_whitespace) else {
            return Vec::new();
        };
        let mut words: Vec<&str> = args.split_whitespace().collect();
        let current = if args.is_empty() || args.ends_with(char::is_whitespace) {
            ""
        } else {
            words.pop().unwrap_or("")
        };
        let given: HashMap<String, String> = (words.iter())
            .filter_map(|w| w.split_once('='))
            .map(|(n, v)| (n.to_string(), v.trim_matches('"').to_string()))
            .collect();
        let Some((name, value)) = current.split_once('=') else {
            return (prompt.arguments.iter())
                .filter(|a| !given.contains_key(&a.name) && a.name.starts_with(current))
                .map(|a| format!("{}=", a.name))
                .collect();
        };
        if !prompt.arguments.iter().any(|a| a.name == name) {
            return Vec::new();
        }
        let value = value.trim_start_matches('"');
        match connection
            .complete_prompt_argument(&prompt.name, name, value, given)
            .await
        {
            Ok(values) => (values.into_iter().take(MOST_VALUES))
                .map(|v| match v.contains(char::is_whitespace) {
                    true => format!("{name}=\"{v}\""),
                    false => format!("{name}={v}"),
                })
                .collect(),
            Err(why) => {
                tracing::warn!("{why}");
                Vec::new()
            }
        }
    }
}
