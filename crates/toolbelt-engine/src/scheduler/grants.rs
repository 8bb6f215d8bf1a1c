//! Tools a call allows for the rest of the turn: a skill's `allowed-tools`.
//!
//! A skill may say that while it is in use some calls need no question
//! (`allowed-tools: run_shell_command(git *)`). When the scheduler approves a call whose
//! invocation carries a [`TurnGrant`] (only built-in tools are believed: the `skill`
//! tool), the grant's entries become allow rules, in the same syntax as
//! `--allowed-tools`, until [`super::Scheduler::end_turn`].
//!
//! A turn is one user turn of the agent: from the prompt until the model answers
//! without tool calls (or the run stops: turn limit, cancellation, a model fault). The
//! agent ends it at both ends of every run, so a grant never reaches the next prompt,
//! and a resumed session starts with none (a grant is not in the transcript).
//!
//! What a grant cannot do, by construction: it is one more allow list, judged after the
//! session's deny and ask rules (deny > ask > allow), so a deny rule still refuses and an
//! ask rule still asks; plan mode refuses what is not read-only before allow rules are
//! looked at; and the path policy of the workspace roots was fixed when the session was
//! assembled, so a grant never widens where tools may read or write. Schedulers whose
//! owner has no turns (`toolbelt mcp serve`, `tools call`) leave grants off
//! ([`super::SchedulerConfig::turn_grants`]).

use std::sync::{Arc, Mutex};

use toolbelt_core::TurnGrant;

use super::approval::Permissions;
use crate::rules::RuleList;

/// The grants of the current turn.
#[derive(Debug, Default)]
pub(super) struct TurnGrants {
    enabled: bool,
    /// The session's rules with the granted allow rules added; `None`: no grant.
    granted: Mutex<Option<Granted>>,
}

#[derive(Debug)]
struct Granted {
    permissions: Arc<Permissions>,
    sources: Vec<String>,
}

impl TurnGrants {
    pub(super) fn new(enabled: bool) -> Self {
        TurnGrants {
            enabled,
            granted: Mutex::new(None),
        }
    }

    /// Adds `grant` to the turn's rules (on top of `base`, the session's rules).
    /// Returns `false` when grants are off for this scheduler.
    pub(super) fn add(&self, base: &Permissions, grant: &TurnGrant) -> bool {
        if !self.enabled {
            return false;
        }
        let Ok(mut granted) = self.granted.lock() else {
            return false;
        };
        let mut permissions = match granted.as_ref() {
            Some(g) => (*g.permissions).clone(),
            None => base.clone(),
        };
        for rule in &grant.rules {
            permissions.add(RuleList::Allow, rule);
        }
        let mut sources = granted.take().map(|g| g.sources).unwrap_or_default();
        if !sources.contains(&grant.source) {
            sources.push(grant.source.clone());
        }
        tracing::info!(
            "{} allows for the rest of this turn: {}",
            grant.source,
            grant.rules.join(", ")
        );
        *granted = Some(Granted {
            permissions: Arc::new(permissions),
            sources,
        });
        true
    }

    /// The rules in force: the session's with this turn's grants, if any.
    pub(super) fn current(&self) -> Option<Arc<Permissions>> {
        self.granted
            .lock()
            .ok()
            .and_then(|g| g.as_ref().map(|g| g.permissions.clone()))
    }

    /// Who granted something this turn.
    pub(super) fn sources(&self) -> Vec<String> {
        self.granted
            .lock()
            .ok()
            .and_then(|g| g.as_ref().map(|g| g.sources.clone()))
            .unwrap_or_default()
    }

    pub(super) fn clear(&self) {
        if let Ok(mut g) = self.granted.lock() {
            *g = None;
        }
    }
}
