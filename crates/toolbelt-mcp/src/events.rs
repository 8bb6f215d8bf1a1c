//! What a server tells us without being asked: progress of a running call and
//! "my list of tools (or resources, or prompts) changed". One [`ServerEvents`] per
//! server, shared by its reconnections. Every kind of list change asks for the same
//! refresh: the owner lists the server's tools, resources and prompts again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{NotificationContext, RoleClient};
use tokio::sync::mpsc::UnboundedSender;
use toolbelt_core::OutputSink;

#[derive(Clone)]
pub(crate) struct ServerEvents {
    alias: String,
    /// Live-output sinks of running calls, by the progress token of their request.
    progress: Arc<Mutex<HashMap<ProgressToken, OutputSink>>>,
    /// Where "the tool list of `alias` changed" goes.
    changes: UnboundedSender<String>,
}

impl ServerEvents {
    pub(crate) fn new(alias: &str, changes: UnboundedSender<String>) -> Self {
        ServerEvents {
            alias: alias.to_string(),
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

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolbelt", env!("CARGO_PKG_VERSION")),
        )
    }
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
