//! `/model` in the interactive agent: the models the settings configure
//! (`modelProviders`), and a switch to another one for the rest of the session. The new
//! model is chosen as `--model NAME` would have chosen it at start (its `modelProviders`
//! entry decides the provider, the URL and the key; a name no entry lists stays with the
//! session's provider and server), and the next request goes to it; a request under way
//! finishes on the old one. A name that cannot be used changes nothing and says why.

use std::path::PathBuf;
use std::sync::Arc;

use toolbelt_config::settings::Settings;

use crate::AgentOptions;
use crate::agent::Prepared;
use crate::model_slot::ModelSlot;

/// What `/model` needs of the session.
pub struct ModelSwitch {
    options: AgentOptions,
    settings: Arc<Settings>,
    cwd: PathBuf,
    slot: Arc<ModelSlot>,
}

impl ModelSwitch {
    /// The switch of a prepared session.
    pub fn new(p: &Prepared) -> Self {
        Self::of(
            p.options.clone(),
            Arc::clone(&p.settings),
            p.cwd.clone(),
            Arc::clone(&p.model),
        )
    }

    /// The switch of a session made of these parts.
    pub fn of(
        options: AgentOptions,
        settings: Arc<Settings>,
        cwd: PathBuf,
        slot: Arc<ModelSlot>,
    ) -> Self {
        ModelSwitch {
            options,
            settings,
            cwd,
            slot,
        }
    }

    /// The configured models by provider, `current` marked.
    pub fn list(&self, current: &str) -> String {
        let mut text = format!("Model: {current}\n");
        if self.settings.model_providers.is_empty() {
            text.push_str(
                "No models are configured (settings' modelProviders); /model NAME switches to any \
                 model of the session's server.",
            );
            return text;
        }
        text.push_str("Configured (/model NAME switches):\n");
        for (provider, entries) in &self.settings.model_providers {
            for entry in entries {
                let mark = if entry.id == current { "*" } else { " " };
                let name = entry
                    .name
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default();
                text.push_str(&format!(" {mark} {provider}: {}{name}\n", entry.id));
            }
        }
        text
    }

    /// Switches the session to `name`: the text to show, or why it cannot.
    pub fn switch(&mut self, name: &str) -> Result<String, crate::SwitchError> {
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(crate::SwitchError::BadName(name.to_string()));
        }
        let mut options = self.options.clone();
        options.model = Some(name.to_string());
        let (model, choice) = crate::build_model(&options, &self.settings, &self.cwd)?;
        self.slot.replace(model);
        self.options = options;
        Ok(match choice {
            Some(c) => format!(
                "The session now talks to {name} (provider {}, {}).",
                c.provider, c.base_url
            ),
            None => format!("The session now talks to {name}."),
        })
    }
}

#[cfg(test)]
mod tests;
