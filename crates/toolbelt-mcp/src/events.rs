//! What a server tells us without being asked: progress of a running call and
//! "my list of tools (or resources, or prompts) changed". One [`ServerEvents`] per
//! server, shared by its reconnections. Every kind of list change asks for the same
//! refresh: the owner lists the server's tools, resources and prompts again.
//!
//! And what a server may ask: `roots/list` is answered with the session's workspace
//! roots (`file://` URIs), so a server that scopes itself to its client's roots
//! (server-filesystem does) stays in the workspace. Sampling and elicitation are not
//! offered: the client declares neither, so a server does not ask.

// `roots` is deprecated by SEP-2577 (the 2026-07-28 revision drops it); servers of the
// earlier revisions, which toolbelt speaks, still ask for it.
#![allow(deprecated)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ClientHandler;
use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ListRootsResult, ProgressNotificationParam,
    ProgressToken, Root, RootsCapabilities,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use tokio::sync::mpsc::UnboundedSender;
use toolbelt_core::OutputSink;

#[derive(Clone)]
pub(crate) struct ServerEvents {
    alias: String,
    /// The workspace roots, for `roots/list`.
    roots: Arc<[PathBuf]>,
    /// Live-output sinks of running calls, by the progress token of their request.
    progress: Arc<Mutex<HashMap<ProgressToken, OutputSink>>>,
    /// Where "the tool list of `alias` changed" goes.
    changes: UnboundedSender<String>,
}

impl ServerEvents {
    pub(crate) fn new(alias: &str, roots: &[PathBuf], changes: UnboundedSender<String>) -> Self {
        ServerEvents {
            alias: alias.to_string(),
            roots: roots.into(),
            progress: Default::default(),
            changes,
        }
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

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
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
