//! The tools offered to the model, decided in one place: the settings' lists
//! (`tools.core`, `tools.exclude`), `--core-tools`, `--exclude-tools` and the tools
//! `--disallowedTools` names bare. The agent applies the same [`ToolOffer`] at start,
//! after the sub-agent tools join, and to every list an MCP server sends again, so a
//! refresh cannot bring back a tool the person removed. (`when` clauses are judged
//! apart, in the approval mode of the moment: see `Session::apply_when`.)

use std::sync::Arc;

use toolbelt_config::settings::Settings;
use toolbelt_engine::registry::ToolRegistry;
use toolbelt_engine::{rules::Rule, rules::RuleVocabulary};

use crate::options::{AgentOptions, Policy};

/// Which tools a session offers, as its settings and flags say.
#[derive(Clone)]
pub(crate) struct ToolOffer {
    /// The settings, with `--core-tools` in place of `tools.core` when given.
    settings: Arc<Settings>,
    /// Never offered: `--exclude-tools`, and the tools `--disallowedTools` names bare.
    excluded: Vec<String>,
}

impl ToolOffer {
    /// The offer of an agent started with `options` (`--core-tools` already resolved to
    /// tool names).
    pub(crate) fn for_agent(
        settings: &Arc<Settings>,
        options: &AgentOptions,
        vocabulary: &RuleVocabulary,
    ) -> Self {
        let mut offer = ToolOffer::for_policy(settings, &options.policy);
        if !options.core_tools.is_empty() {
            let mut own = (**settings).clone();
            own.tools.core = Some(options.core_tools.clone());
            offer.settings = Arc::new(own);
        }
        offer
            .excluded
            .extend(disallowed_names(&options.disallowed_tools, vocabulary));
        offer
    }

    /// The offer of a front end with only a policy's flags (`mcp serve`).
    pub(crate) fn for_policy(settings: &Arc<Settings>, policy: &Policy) -> Self {
        ToolOffer {
            settings: settings.clone(),
            excluded: policy
                .exclude_tools
                .iter()
                .map(|e| e.trim().to_string())
                .collect(),
        }
    }

    /// Removes from `registry` what this offer leaves out.
    pub(crate) fn apply(&self, registry: &mut ToolRegistry) {
        registry.apply_settings(&self.settings);
        if !self.excluded.is_empty() {
            registry.retain(
                |r| !self.excluded.contains(&r.name),
                "it is excluded by --exclude-tools or --disallowedTools",
            );
        }
    }
}

/// The tools `--disallowedTools` names bare (no specifier), aliases such as `Bash`
/// resolved: they are not offered at all (Claude Code's meaning); every entry is also a
/// deny rule, so a call by any name is refused.
fn disallowed_names(rules: &[String], vocabulary: &RuleVocabulary) -> Vec<String> {
    rules
        .iter()
        .filter_map(|r| Rule::parse(r, vocabulary))
        .filter(|r| r.specifier.is_none())
        .flat_map(|r| r.tools)
        .collect()
}
