//! [`HookEngine`]: the session's [`HookRunner`].
//!
//! For one event it takes the matching groups in configuration order, runs their hooks
//! side by side (a `sequential` group's hooks one after another, each seeing the
//! previous one's `updatedInput` as `tool_input`), and combines the answers
//! (`combine.rs`). The same command or URL matched twice for one event (a person who
//! copied their Claude Code hooks into `~/.qwen/settings.json`) runs once, as Claude
//! Code does.
//!
//! The engine is built per session ([`SessionInfo`]: id, transcript, folder); a resumed
//! session gives its id and transcript with [`HookEngine::set_session`], and an SDK adds
//! its callback hooks with [`HookEngine::add_callbacks`] while the session runs.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;
use toolbelt_engine::{
    hooks::HookDecision, hooks::HookEvent, hooks::HookOutcome, hooks::HookRequest,
    hooks::HookRunner,
};
use toolbelt_netguard::HostResolver;

use crate::combine::{Ran, Unit, combine};
use crate::config::{ConfigErrors, Executor, Hook, HookConfig, HookGroup, HookOrigin};
use crate::exec::Executors;
use crate::exec::callback::HookCallbacks;
use crate::exec::http::HttpSender;
use crate::input::{SessionInfo, hook_input};
use crate::output::reply;

/// The hooks of a session, ready to run. Cheap to clone (shared).
#[derive(Clone)]
pub struct HookEngine {
    inner: Arc<Inner>,
}

struct Inner {
    groups: RwLock<Arc<Vec<HookGroup>>>,
    session: RwLock<SessionInfo>,
    executors: Executors,
}

impl std::fmt::Debug for HookEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookEngine")
            .field("groups", &self.inner.groups().len())
            .finish_non_exhaustive()
    }
}

impl HookEngine {
    /// The engine of `config` for the session `session`. `allowed_http_hook_urls` is
    /// `security.allowedHttpHookUrls`.
    pub fn new(
        config: HookConfig,
        session: SessionInfo,
        allowed_http_hook_urls: Option<Vec<String>>,
    ) -> HookEngine {
        HookEngine::with_resolver(config, session, allowed_http_hook_urls, None)
    }

    /// As [`HookEngine::new`], with http hooks' host names resolved by `resolver` (the
    /// system's when `None`); the private-address guard judges whatever it answers.
    pub fn with_resolver(
        config: HookConfig,
        session: SessionInfo,
        allowed_http_hook_urls: Option<Vec<String>>,
        resolver: Option<Arc<dyn HostResolver>>,
    ) -> HookEngine {
        let executors = Executors {
            project_dir: session.cwd.clone(),
            http: HttpSender::new(allowed_http_hook_urls, resolver),
            callbacks: RwLock::new(None),
        };
        HookEngine {
            inner: Arc::new(Inner {
                groups: RwLock::new(Arc::new(config.groups)),
                session: RwLock::new(session),
                executors,
            }),
        }
    }

    /// The session's id and transcript from now on (a resumed or newly saved session).
    pub fn set_session(&self, session_id: &str, transcript_path: Option<PathBuf>) {
        let mut session = write(&self.inner.session);
        session.session_id = session_id.to_string();
        session.transcript_path = transcript_path;
    }

    /// The session as hooks see it.
    pub fn session(&self) -> SessionInfo {
        read(&self.inner.session).clone()
    }

    /// Adds an SDK's callback hooks: `hooks` is its `initialize` request's `hooks`, in
    /// Claude's shape (`{"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["h1"],
    /// "timeout": 30}]}`) or Qwen's (`[{"event": "PreToolUse", "callback_id": "h1"}]`),
    /// answered by `callbacks`. They run after the settings' hooks of the same event.
    /// A bad entry is an error and nothing is added; the answer is the warnings for
    /// entries of events toolbelt does not raise (skipped).
    pub fn add_callbacks(
        &self,
        hooks: &Value,
        callbacks: Arc<dyn HookCallbacks>,
    ) -> Result<Vec<String>, ConfigErrors> {
        let hooks = crate::config::sdk::object_shape(hooks).map_err(ConfigErrors)?;
        let parsed = crate::config::parse_hooks(&hooks, &Arc::new(HookOrigin::Sdk), true);
        if !parsed.errors.is_empty() {
            return Err(ConfigErrors(parsed.errors));
        }
        *write(&self.inner.executors.callbacks) = Some(callbacks);
        let mut groups = write(&self.inner.groups);
        let mut all = groups.as_ref().clone();
        all.extend(parsed.groups);
        *groups = Arc::new(all);
        Ok(parsed.skipped.iter().map(|s| s.warning()).collect())
    }

    /// Whether no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.inner.groups().is_empty()
    }
}

impl HookRunner for HookEngine {
    fn wants(&self, event: HookEvent, target: Option<&str>, aliases: &[String]) -> bool {
        self.inner
            .groups()
            .iter()
            .any(|g| g.event == event && applies(g, target, aliases))
    }

    fn run(
        &self,
        request: HookRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, HookOutcome> {
        let inner = self.inner.clone();
        Box::pin(async move { inner.run(request, cancel).await })
    }
}

/// Whether a group's matcher lets it run for `target`. UserPromptSubmit and Stop have
/// no matcher (one there is ignored); an event with matchers but no target runs only
/// the groups that match everything.
fn applies(group: &HookGroup, target: Option<&str>, aliases: &[String]) -> bool {
    if matches!(group.event, HookEvent::UserPromptSubmit | HookEvent::Stop) {
        return true;
    }
    match target {
        Some(target) => group.matcher.matches(target, aliases),
        None => group.matcher.matches_all(),
    }
}

impl Inner {
    fn groups(&self) -> Arc<Vec<HookGroup>> {
        read(&self.groups).clone()
    }

    async fn run(&self, request: HookRequest, cancel: CancellationToken) -> HookOutcome {
        let groups = self.groups();
        let target = request.target.as_deref();
        let plans = plan(&groups, &request, target);
        if plans.is_empty() {
            return HookOutcome::default();
        }
        let session = read(&self.session).clone();
        let input = hook_input(&request, &session);
        let event = request.event;
        let units = plans
            .into_iter()
            .map(|chain| self.run_chain(event, chain, input.clone(), cancel.clone()));
        combine(futures::future::join_all(units).await)
    }

    /// Runs a chain of hooks in order (one hook, or a sequential group). A later hook
    /// sees the earlier one's `updatedInput` as `tool_input`; a refusal ends the chain.
    async fn run_chain(
        &self,
        event: HookEvent,
        chain: Vec<&Hook>,
        mut input: Map<String, Value>,
        cancel: CancellationToken,
    ) -> Unit {
        let mut unit = Vec::new();
        for hook in chain {
            let answer = self
                .executors
                .run(hook, event, &Value::Object(input.clone()), cancel.clone())
                .await;
            let reply = reply(event, &hook.label, answer);
            if let Some(updated) = &reply.updated_input
                && input.contains_key("tool_input")
            {
                input.insert("tool_input".into(), updated.clone());
            }
            let refused = reply.decision == Some(HookDecision::Deny);
            unit.push(Ran {
                label: hook.label.clone(),
                reply,
            });
            if refused || cancel.is_cancelled() {
                break;
            }
        }
        unit
    }
}

/// The chains to run for `request`, in configuration order: each hook of a parallel
/// group alone (the same command or URL once), a sequential group's hooks together.
fn plan<'a>(
    groups: &'a [HookGroup],
    request: &HookRequest,
    target: Option<&str>,
) -> Vec<Vec<&'a Hook>> {
    let mut plans: Vec<Vec<&Hook>> = Vec::new();
    let mut seen: Vec<&Executor> = Vec::new();
    let matching = groups
        .iter()
        .filter(|g| g.event == request.event && applies(g, target, &request.aliases));
    for group in matching {
        if group.sequential {
            plans.push(group.hooks.iter().collect());
            continue;
        }
        for hook in &group.hooks {
            if !seen.contains(&&hook.executor) {
                seen.push(&hook.executor);
                plans.push(vec![hook]);
            }
        }
    }
    plans
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
