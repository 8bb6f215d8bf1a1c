//! A connection's tools: opened for the client's roots (listed by the client in the
//! handshake revisions, given with the call in 2026-07-28) and its way of being asked
//! (elicitation, rounds, nobody), with the scheduler that runs their calls; opened again
//! when the tools, the roots or the way to ask changed.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::model::{ErrorData, LoggingLevel, Root, Tool};
use rmcp::service::{Peer, RequestContext, RoleServer};
use tokio_util::sync::CancellationToken;
use toolbelt_config::ApprovalMode;
use toolbelt_core::BoxFuture;
use toolbelt_engine::{
    hooks::HookEvent, hooks::HookOutcome, hooks::HookRequest, hooks::HookRunner,
};
use toolbelt_engine::{registry::Registration, registry::ToolRegistry};
use toolbelt_engine::{
    scheduler::Approver, scheduler::NobodyToAsk, scheduler::Scheduler, scheduler::SchedulerConfig,
};

use super::approve::ElicitationApprover;
use super::rounds::RoundsApprover;
use super::turns::TurnWhileAsking;
use super::{Connection, Toolset, wire};

/// The tools of a connection and the scheduler that runs their calls.
pub(super) struct Active {
    pub(super) toolset: Arc<Toolset>,
    pub(super) scheduler: Scheduler,
    /// The tools as offered: the toolset's, with `when` clauses evaluated in the mode
    /// beside them (the toolset's, until a call changes it).
    pub(super) listed: std::sync::Mutex<(ApprovalMode, Arc<ToolRegistry>)>,
    pub(super) generation: u64,
    pub(super) opening: Opening,
}

/// What a connection's tools were opened for: they are opened again when it changes.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Opening {
    pub(super) roots: Roots,
    pub(super) asking: Asking,
}

/// Where the workspace comes from.
#[derive(Clone, PartialEq, Eq)]
pub(super) enum Roots {
    /// Listed by the client with `roots/list` (the handshake revisions), as of its
    /// `n`th `notifications/roots/list_changed`.
    Listed(u64),
    /// Given with the request (2026-07-28: the answer to an input request); `None`: the
    /// default workspace.
    Given(Option<Vec<PathBuf>>),
}

/// How a call that needs confirmation asks the client's person.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Asking {
    /// Nobody can be asked: refused with how to allow it.
    Nobody,
    /// `elicitation/create`, a request of the server's own (the handshake revisions).
    Elicitation,
    /// An input request in the answer to the call (2026-07-28); `always`: the
    /// connection outlives the call, so an "always" answer is offered and kept.
    Rounds { always: bool },
}

impl Active {
    pub(super) fn listed(&self) -> std::sync::MutexGuard<'_, (ApprovalMode, Arc<ToolRegistry>)> {
        match self.listed.lock() {
            Ok(listed) => listed,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    pub(super) fn registry(&self) -> Arc<ToolRegistry> {
        self.listed().1.clone()
    }

    /// The tools offered, as the client sees them.
    pub(super) fn offered(&self) -> Vec<Tool> {
        offered(&self.registry()).map(wire::tool).collect()
    }

    /// Evaluates the `when` clauses again if a call changed the approval mode; `true`
    /// when that changed which tools are offered.
    pub(super) fn follow_mode(&self) -> bool {
        let Some(when_context) = &self.toolset.when_context else {
            return false;
        };
        let mode = self.scheduler.mode();
        let mut listed = self.listed();
        if listed.0 == mode {
            return false;
        }
        let mut registry = (*listed.1).clone();
        registry.apply_when(&when_context(mode));
        let changed = !offered(&registry)
            .map(|r| &r.name)
            .eq(offered(&listed.1).map(|r| &r.name));
        *listed = (mode, Arc::new(registry));
        changed
    }
}

/// The tools a registry offers: registered, and not held back by a `when` clause.
pub(super) fn offered(registry: &ToolRegistry) -> impl Iterator<Item = &Registration> {
    registry.all().filter(|r| !registry.is_disabled(&r.name))
}

impl Connection {
    /// The connection's tools, opened again when the tools, the roots or the way to ask
    /// changed.
    pub(super) async fn active(
        &self,
        peer: &Peer<RoleServer>,
        opening: Opening,
    ) -> Result<Arc<Active>, ErrorData> {
        let mut slot = self.active.lock().await;
        let generation = *self.changes.borrow();
        if let Some(active) = slot.as_ref()
            && active.generation == generation
            && active.opening == opening
        {
            return Ok(active.clone());
        }
        let roots = match &opening.roots {
            Roots::Listed(_) => self.client_roots(peer).await,
            Roots::Given(dirs) => dirs.clone(),
        };
        let toolset = self
            .workspaces
            .open(roots.as_deref())
            .await
            .map_err(|e| ErrorData::internal_error(String::from(e), None))?;
        for warning in &toolset.warnings {
            self.log(peer, LoggingLevel::Warning, warning).await;
        }
        let scheduler = self.scheduler_for(&toolset, peer, opening.asking);
        // Tools opened again (a settings file or a proxied server changed) keep the
        // mode a call moved the connection to (an approved plan), unless the mode the
        // settings and flags give changed too: then that one is the person's newer word.
        if let Some(before) = slot.as_ref()
            && before.toolset.rules.mode() == toolset.rules.mode()
        {
            scheduler.set_mode(before.scheduler.mode());
        }
        let active = Arc::new(Active {
            listed: std::sync::Mutex::new((
                toolset.rules.mode(),
                Arc::new(toolset.registry.clone()),
            )),
            toolset,
            scheduler,
            generation,
            opening,
        });
        active.follow_mode();
        *slot = Some(active.clone());
        Ok(active)
    }

    /// How the tools of a client of the handshake revisions are opened.
    pub(super) fn handshake_opening(&self, peer: &Peer<RoleServer>) -> Opening {
        let asks = !self.options.stateless
            && peer
                .peer_info()
                .is_some_and(|info| info.capabilities.elicitation.is_some());
        Opening {
            roots: Roots::Listed(self.roots_epoch.load(Ordering::SeqCst)),
            asking: if asks {
                Asking::Elicitation
            } else {
                Asking::Nobody
            },
        }
    }

    /// The tools as the client was last told them; `None` before it asked.
    pub(super) async fn offered_now(&self) -> Option<Vec<Tool>> {
        let slot = self.active.lock().await;
        slot.as_ref().map(|active| active.offered())
    }

    pub(super) fn scheduler_for(
        &self,
        toolset: &Toolset,
        peer: &Peer<RoleServer>,
        asking: Asking,
    ) -> Scheduler {
        let (events, routed) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(self.progress.clone().route(routed));
        let turn = TurnWhileAsking {
            turn: self.options.file_changes.clone(),
            held: self.turns.clone(),
        };
        let approver: Option<Arc<dyn Approver>> = match asking {
            Asking::Nobody => None,
            Asking::Elicitation => Some(Arc::new(ElicitationApprover {
                peer: peer.clone(),
                remembered: self.remembered.clone(),
                turn,
            })),
            Asking::Rounds { always } => Some(Arc::new(RoundsApprover {
                routes: self.routes.clone(),
                remembered: self.remembered.clone(),
                turn,
                offer_always: always,
            })),
        };
        let why = if self.options.stateless {
            "this server runs stateless, so it cannot ask the MCP client's user".to_string()
        } else {
            "the MCP client offers no elicitation, so the server cannot ask its user".to_string()
        };
        let session = self.session.clone();
        let rules = toolset.rules.clone().wrap_hooks(|inner| {
            Arc::new(InClientSession { inner, session }) as Arc<dyn HookRunner>
        });
        let mode = rules.mode();
        let config = SchedulerConfig::new(rules)
            .approver(approver)
            .events(events)
            .nobody_to_ask(NobodyToAsk {
                why: format!("{why} (approval mode {mode})"),
                how: self.options.how_to_allow.clone(),
            });
        let scheduler = Scheduler::new(toolset.env.clone(), config);
        self.remembered.replay(&scheduler, &toolset.registry);
        scheduler
    }

    /// The client's roots as directories, when it offers them and this connection may
    /// ask; `None` means the default workspace.
    pub(super) async fn client_roots(&self, peer: &Peer<RoleServer>) -> Option<Vec<PathBuf>> {
        if self.options.stateless {
            return None;
        }
        peer.peer_info()?.capabilities.roots.as_ref()?;
        let listed = tokio::time::timeout(Duration::from_secs(10), peer.list_roots()).await;
        let roots = match listed {
            Ok(Ok(result)) => result.roots,
            Ok(Err(e)) => {
                self.log(peer, LoggingLevel::Warning, &format!("cannot list the client's roots ({e}); the workspace is the server's directory")).await;
                return None;
            }
            Err(_) => {
                self.log(peer, LoggingLevel::Warning, "the client did not list its roots within 10 s; the workspace is the server's directory").await;
                return None;
            }
        };
        self.root_dirs(peer, roots).await
    }

    /// The client's roots as directories on this machine (the others are ignored with a
    /// warning); `None` when none is left: the default workspace.
    pub(super) async fn root_dirs(
        &self,
        peer: &Peer<RoleServer>,
        roots: Vec<Root>,
    ) -> Option<Vec<PathBuf>> {
        let mut dirs = Vec::new();
        for root in roots {
            match url::Url::parse(&root.uri).ok().and_then(|u| {
                (u.scheme() == "file")
                    .then(|| u.to_file_path().ok())
                    .flatten()
            }) {
                Some(path) if path.is_dir() => dirs.push(path),
                _ => {
                    let message = format!(
                        "ignoring the root {}: not a directory on this machine (file:// URI)",
                        root.uri
                    );
                    self.log(peer, LoggingLevel::Warning, &message).await;
                }
            }
        }
        (!dirs.is_empty()).then_some(dirs)
    }
}

/// The MCP client's session as its calls' hooks see it (`session_id`): over Streamable
/// HTTP the `Mcp-Session-Id` the client sends (noted from its first request that has
/// one), otherwise (stdio, where the connection is the session) an id of the
/// connection's own. Never the workspace's: the toolset, and the hook engine in it, is
/// shared by every connection of the process.
pub(super) struct ClientSession {
    own: String,
    told: std::sync::OnceLock<String>,
}

impl Default for ClientSession {
    fn default() -> Self {
        ClientSession {
            own: uuid::Uuid::new_v4().to_string(),
            told: std::sync::OnceLock::new(),
        }
    }
}

impl ClientSession {
    /// Notes the session header of a request that came over HTTP.
    pub(super) fn note(&self, context: &RequestContext<RoleServer>) {
        if self.told.get().is_some() {
            return;
        }
        let header = context
            .extensions
            .get::<hyper::http::request::Parts>()
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|value| value.to_str().ok())
            .filter(|id| !id.is_empty());
        if let Some(id) = header {
            let _ = self.told.set(id.to_string());
        }
    }

    fn id(&self) -> String {
        self.told.get().unwrap_or(&self.own).clone()
    }
}

/// The toolset's hooks with the connection's session as every request's `session_id`.
struct InClientSession {
    inner: Arc<dyn HookRunner>,
    session: Arc<ClientSession>,
}

impl HookRunner for InClientSession {
    fn wants(&self, event: HookEvent, target: Option<&str>, aliases: &[String]) -> bool {
        self.inner.wants(event, target, aliases)
    }

    fn run(
        &self,
        mut request: HookRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, HookOutcome> {
        request.session_id.get_or_insert_with(|| self.session.id());
        self.inner.run(request, cancel)
    }
}
