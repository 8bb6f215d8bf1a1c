//! What a server tells us without being asked: progress of a running call and
//! "my list of tools (or resources, or prompts) changed". One [`ServerEvents`] per
//! server, shared by its reconnections. Every kind of list change asks for the same
//! refresh: the owner lists the server's tools, resources and prompts again.
//!
//! And what a server may ask: `roots/list` is answered with the session's workspace
//! roots (`file://` URIs), so a server that scopes itself to its client's roots
//! (server-filesystem does) stays in the workspace. Elicitation (form and URL) is
//! declared always, sampling unless the server's settings say `"sampling": "deny"`;
//! both are answered in `asks`. A subscribed resource's `notifications/resources/updated`
//! is kept until the owner takes it (`take_updated`).

// `roots` is deprecated by SEP-2577 (the 2026-07-28 revision drops it); servers of the
// earlier revisions, which toolbelt speaks, still ask for it.
#![allow(deprecated)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ClientHandler;
use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationCapability, FormElicitationCapability,
    Implementation, ListRootsResult, ProgressNotificationParam, ProgressToken,
    ResourceUpdatedNotificationParam, Root, RootsCapabilities, SamplingCapability,
    UrlElicitationCapability,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use tokio::sync::mpsc::UnboundedSender;
use toolbelt_config::settings::McpSampling;
use toolbelt_core::OutputSink;
use toolbelt_core::ServerAskSlot;

use crate::config::ServerConfig;

#[derive(Clone)]
pub(crate) struct ServerEvents {
    alias: String,
    /// The workspace roots, for `roots/list`.
    roots: Arc<[PathBuf]>,
    /// Live-output sinks of running calls, by the progress token of their request.
    progress: Arc<Mutex<HashMap<ProgressToken, OutputSink>>>,
    /// Where "the tool list of `alias` changed" goes.
    changes: UnboundedSender<String>,
    /// Who answers the server's elicitation and sampling requests.
    asks: ServerAskSlot,
    /// The server's `sampling` setting.
    sampling: McpSampling,
    /// URIs the server said changed (`notifications/resources/updated`), not yet taken:
    /// only ones this client subscribed to, so a server cannot fill memory or the
    /// model's next request with URIs of its own choosing.
    updated: Arc<Mutex<Vec<String>>>,
    /// The URIs this client subscribed to (`resources/subscribe`).
    subscribed: Arc<Mutex<std::collections::HashSet<String>>>,
}

impl ServerEvents {
    pub(crate) fn new(config: &ServerConfig, changes: UnboundedSender<String>) -> Self {
        ServerEvents {
            alias: config.alias.clone(),
            roots: config.roots.as_slice().into(),
            progress: Default::default(),
            changes,
            asks: config.asks.clone(),
            sampling: config.sampling,
            updated: Default::default(),
            subscribed: Default::default(),
        }
    }

    /// Notes that `uri` is being subscribed to: its updates are kept from now on.
    pub(crate) fn subscribing(&self, uri: &str) {
        (self
            .subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner))
        .insert(uri.to_string());
    }

    /// Keeps `uri` for [`ServerEvents::take_updated`] when it was subscribed to.
    fn keep_update(&self, uri: String) {
        let subscribed = (self
            .subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner))
        .contains(&uri);
        if !subscribed {
            tracing::debug!(
                "MCP server \"{}\": an update of a resource not subscribed to, ignored",
                self.alias
            );
            return;
        }
        let mut updated = self.updated.lock().unwrap_or_else(PoisonError::into_inner);
        if !updated.contains(&uri) {
            updated.push(uri);
        }
    }

    /// Forgets `uri` (its subscription failed).
    pub(crate) fn unsubscribed(&self, uri: &str) {
        (self
            .subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner))
        .remove(uri);
    }

    /// The URIs updated since the last call, once each.
    pub(crate) fn take_updated(&self) -> Vec<String> {
        std::mem::take(&mut *self.updated.lock().unwrap_or_else(PoisonError::into_inner))
    }

    pub(crate) fn watch_progress(&self, token: ProgressToken, sink: OutputSink) {
        if sink.is_listening() {
            self.routes().insert(token, sink);
        }
    }

    pub(crate) fn unwatch_progress(&self, token: &ProgressToken) {
        self.routes().remove(token);
    }

    /// One of the server's lists changed (announced on a `subscriptions/listen` stream).
    pub(crate) fn list_changed(&self) {
        let _ = self.changes.send(self.alias.clone());
    }

    fn routes(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, OutputSink>> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ClientHandler for ServerEvents {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let sink = self.routes().get(&params.progress_token).cloned();
        if let Some(sink) = sink {
            sink.emit(&progress_line(&params));
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // The receiver lives as long as the session; a closed channel only means nobody
        // refreshes any more.
        let _ = self.changes.send(self.alias.clone());
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.keep_update(params.uri);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changes.send(self.alias.clone());
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changes.send(self.alias.clone());
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(root_list(&self.roots)))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(crate::asks::elicit(&self.alias, &self.asks, request, &context.ct).await)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        crate::asks::sample(&self.alias, self.sampling, &self.asks, params, &context.ct).await
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        // Declared whoever answers: a headless run declines (and says so in its log),
        // which a server handles, where an undeclared capability hides its tools.
        capabilities.elicitation = Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::new().with_schema_validation(true))
                .with_url(UrlElicitationCapability::new()),
        );
        if self.sampling != McpSampling::Deny {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        // The roots are the session's: they do not change while it runs.
        let mut roots = RootsCapabilities::default();
        roots.list_changed = Some(false);
        capabilities.roots = Some(roots);
        ClientConfig::new(
            capabilities,
            Implementation::new("toolbelt", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// Each root as a `file://` URI named by its folder; a path no URI can hold (not
/// absolute) is left out.
fn root_list(roots: &[PathBuf]) -> Vec<Root> {
    roots
        .iter()
        .filter_map(|path| {
            let uri = url::Url::from_file_path(path).ok()?;
            let mut root = Root::new(uri.to_string());
            root.name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            Some(root)
        })
        .collect()
}

/// `[3/5] copying files` or `[40%]`: one line per progress notification.
fn progress_line(p: &ProgressNotificationParam) -> String {
    let amount = match p.total {
        Some(total) => format!("[{}/{}]", p.progress, total),
        None => format!("[{}]", p.progress),
    };
    match &p.message {
        Some(message) => format!("{amount} {message}\n"),
        None => format!("{amount}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's updates of resources this client did not subscribe to are dropped, so
    /// it cannot fill memory or the model's next request with URIs of its choosing.
    #[test]
    fn only_updates_of_subscribed_resources_are_kept() {
        let config = ServerConfig::from_settings(
            "s",
            &toolbelt_config::settings::McpServerSettings {
                command: Some("true".into()),
                ..Default::default()
            },
            std::path::Path::new("/"),
        )
        .unwrap();
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let events = ServerEvents::new(&config, tx);
        events.subscribing("demo://a");
        for uri in ["demo://a", "demo://injected", "demo://a", "demo://b"] {
            events.keep_update(uri.to_string());
        }
        assert_eq!(events.take_updated(), ["demo://a"]);
        events.unsubscribed("demo://a");
        events.keep_update("demo://a".to_string());
        assert!(events.take_updated().is_empty());
    }
}
