//! What a scheduler is made from: the session's [`CallRules`] (rules, mode, hooks,
//! checkpoints), which only the session assembles, and what differs between front ends
//! (who is asked, where events go). There is no default: a scheduler without the
//! session's hooks or checkpoints is a choice written at the place that makes it.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::{ApprovalMode, Approver, DEFAULT_MAX_PARALLEL, Permissions, SchedulerEvent};
use crate::checkpoint::Checkpoints;
use crate::hooks::HookRunner;

/// The one description of how a session's calls are judged and kept: its permission
/// rules (settings, flags, Claude settings), its approval mode, its hooks and its file
/// checkpoints. Every scheduler of a session starts from the session's `CallRules`, so
/// no front end can forget one of them; derived schedulers (a sub-agent's, an MCP
/// connection's) change a part with the `with_*` methods.
#[derive(Clone)]
pub struct CallRules {
    pub(super) permissions: Permissions,
    pub(super) mode: ApprovalMode,
    pub(super) hooks: Option<Arc<dyn HookRunner>>,
    pub(super) checkpoints: Option<Arc<dyn Checkpoints>>,
}

impl CallRules {
    /// Rules from their four parts, each named: `None` hooks or checkpoints is a session
    /// that has none. A session makes these once (`toolbelt_session`); a library user
    /// without a session writes its choice here.
    pub fn new(
        permissions: Permissions,
        mode: ApprovalMode,
        hooks: Option<Arc<dyn HookRunner>>,
        checkpoints: Option<Arc<dyn Checkpoints>>,
    ) -> Self {
        CallRules {
            permissions,
            mode,
            hooks,
            checkpoints,
        }
    }

    /// The permission rules.
    pub fn permissions(&self) -> &Permissions {
        &self.permissions
    }

    /// The approval mode a scheduler made from these starts in.
    pub fn mode(&self) -> ApprovalMode {
        self.mode
    }

    /// The hooks; `None`: the session has none.
    pub fn hooks(&self) -> Option<&Arc<dyn HookRunner>> {
        self.hooks.as_ref()
    }

    /// The file checkpoints; `None`: none are taken.
    pub fn checkpoints(&self) -> Option<&Arc<dyn Checkpoints>> {
        self.checkpoints.as_ref()
    }

    /// The same rules in approval mode `mode`.
    #[must_use]
    pub fn with_mode(mut self, mode: ApprovalMode) -> Self {
        self.mode = mode;
        self
    }

    /// The same session with `permissions` (a sub-agent in a worktree: the rules over
    /// the worktree's copies of the places they name).
    #[must_use]
    pub fn with_permissions(mut self, permissions: Permissions) -> Self {
        self.permissions = permissions;
        self
    }

    /// The hooks wrapped by `wrap` (naming a sub-agent or a client connection).
    #[must_use]
    pub fn wrap_hooks(
        mut self,
        wrap: impl FnOnce(Arc<dyn HookRunner>) -> Arc<dyn HookRunner>,
    ) -> Self {
        self.hooks = self.hooks.map(wrap);
        self
    }

    /// The checkpoints wrapped by `wrap` (a sub-agent checkpoints calls, not turns).
    #[must_use]
    pub fn wrap_checkpoints(
        mut self,
        wrap: impl FnOnce(Arc<dyn Checkpoints>) -> Arc<dyn Checkpoints>,
    ) -> Self {
        self.checkpoints = self.checkpoints.map(wrap);
        self
    }
}

/// How one scheduler behaves: the session's [`CallRules`] and what its front end adds.
/// Made with [`SchedulerConfig::new`] and the builder methods; nobody is asked, no
/// events are sent and turn grants are off until a method says otherwise.
pub struct SchedulerConfig {
    pub(super) rules: CallRules,
    pub(super) approver: Option<Arc<dyn Approver>>,
    pub(super) max_parallel: usize,
    pub(super) events: Option<mpsc::UnboundedSender<SchedulerEvent>>,
    pub(super) nobody_to_ask: Option<NobodyToAsk>,
    pub(super) turn_grants: bool,
}

impl SchedulerConfig {
    /// A scheduler under `rules`, asking nobody (headless), reporting nowhere.
    pub fn new(rules: CallRules) -> Self {
        SchedulerConfig {
            rules,
            approver: None,
            max_parallel: DEFAULT_MAX_PARALLEL,
            events: None,
            nobody_to_ask: None,
            turn_grants: false,
        }
    }

    /// Who is asked when a call needs approval; `None`: nobody can be.
    #[must_use]
    pub fn approver(mut self, approver: Option<Arc<dyn Approver>>) -> Self {
        self.approver = approver;
        self
    }

    /// Where the scheduler's events go.
    #[must_use]
    pub fn events(mut self, events: mpsc::UnboundedSender<SchedulerEvent>) -> Self {
        self.events = Some(events);
        self
    }

    /// Why nobody can be asked and how the person allows a call, for the refusal of a
    /// call that needs approval when there is no approver; without it, the headless
    /// command line's words (`--yolo`, `--allowed-tools`).
    #[must_use]
    pub fn nobody_to_ask(mut self, words: NobodyToAsk) -> Self {
        self.nobody_to_ask = Some(words);
        self
    }

    /// Whether a call's [`toolbelt_core::TurnGrant`] (a skill's `allowed-tools`) allows calls
    /// until [`super::Scheduler::end_turn`]. Only an owner that ends turns should turn it
    /// on: the agent does; `toolbelt mcp serve` and `tools call` have no turns.
    #[must_use]
    pub fn turn_grants(mut self, on: bool) -> Self {
        self.turn_grants = on;
        self
    }

    /// Cap on read-only calls running at once (default [`DEFAULT_MAX_PARALLEL`]; 0 is 1).
    #[must_use]
    pub fn max_parallel(mut self, n: usize) -> Self {
        self.max_parallel = n;
        self
    }

    /// The rules it is made from.
    pub fn rules(&self) -> &CallRules {
        &self.rules
    }

    /// Whether turn grants are on.
    pub fn grants_turns(&self) -> bool {
        self.turn_grants
    }
}

/// The words of a refusal when nobody can be asked (see
/// [`SchedulerConfig::nobody_to_ask`]): a server's client, not a command line, may be
/// the one that cannot ask, and the advice must name what that person can change.
#[derive(Debug, Clone)]
pub struct NobodyToAsk {
    /// Why no one can be asked, as a clause: "this session runs without anyone to ask".
    pub why: String,
    /// How to allow the call, as a sentence; `{tool}` is replaced with the tool's name.
    pub how: String,
}
