//! `subscriptions/listen` (2026-07-28): the revision's way to hear that the tools
//! changed, since a server sends nothing outside a request. A subscription stays open
//! as a request; while it does, the connection's tools are opened again whenever they
//! may have changed ([`Workspaces::changes`](super::Workspaces::changes): a settings
//! file, a manifest, a skill, a proxied server) or a call changed which `when` clauses
//! hold (an approved plan), and `notifications/tools/list_changed` goes out on the
//! subscription when what is offered differs from what it last saw. The handshake
//! revisions get the same notification on their connection (`Connection::watch_changes`).

use std::sync::Arc;

use rmcp::model::{ErrorData, LoggingLevel, Tool};
use rmcp::service::SubscriptionContext;

use super::Connection;

/// Follows the subscription until the client ends it.
pub(super) async fn tools_changed(
    connection: &Arc<Connection>,
    context: SubscriptionContext,
) -> Result<(), ErrorData> {
    if context.accepted().tools_list_changed != Some(true) {
        context.cancelled().await;
        return Ok(());
    }
    let mut changes = connection.changes.clone();
    let mut calls = connection.list_ticks.subscribe();
    let mut seen = offered(connection, &context).await;
    loop {
        tokio::select! {
            () = context.cancelled() => return Ok(()),
            changed = changes.changed() => if changed.is_err() { return Ok(()) },
            changed = calls.changed() => if changed.is_err() { return Ok(()) },
        }
        let now = offered(connection, &context).await;
        if now != seen {
            seen = now;
            if context.sink().notify_tool_list_changed().await.is_err() {
                return Ok(());
            }
        }
    }
}

/// The tools the subscription's client is offered now (`None`: they cannot be opened,
/// which is said as a warning).
async fn offered(connection: &Connection, context: &SubscriptionContext) -> Option<Vec<Tool>> {
    let request = context.request_context();
    let opening = connection.listing_opening(request).await;
    match connection.active(&request.peer, opening).await {
        Ok(active) => Some(active.offered()),
        Err(e) => {
            let message = format!("cannot open the tools again: {}", e.message);
            connection
                .log(&request.peer, LoggingLevel::Warning, &message)
                .await;
            None
        }
    }
}
