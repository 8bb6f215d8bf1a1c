//! `subscriptions/listen`, the 2026-07-28 revision's way for a server to say that its
//! tools, resources or prompts changed: there is no standing stream any more, so the
//! client opens one request whose answer is the stream. A change that arrives on it is
//! passed on like an older revision's `notifications/*/list_changed`: the owner lists
//! the server's tools, resources and prompts again.

use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::service::Subscription;
use rmcp::{Peer, RoleClient};

use super::{McpConnection, service_error_text};

impl McpConnection {
    /// With a 2026-07-28 server that announces list changes, opens the stream and waits
    /// for the server to acknowledge it (so that no change after this returns is
    /// missed); the stream then runs in a task of its own and ends with the connection.
    /// A server that refuses it only loses the announcements, so that is logged, not
    /// an error.
    pub(super) async fn listen_for_changes(&self, peer: &Peer<RoleClient>) {
        let Some(filter) = change_filter(peer) else {
            return;
        };
        let alias = self.alias().to_string();
        // Bounded like a start: a server that never acknowledges must not hold a restart.
        let listening = tokio::time::timeout(self.config.startup_timeout, peer.listen(filter));
        let why = match listening.await {
            Ok(Ok(subscription)) => {
                self.pass_on_changes(subscription);
                return;
            }
            Ok(Err(e)) => service_error_text(&e),
            Err(_) => "no acknowledgement within startupTimeout".to_string(),
        };
        tracing::warn!(
            "MCP server \"{alias}\" refused subscriptions/listen: {why}; its list changes will not be seen"
        );
    }

    /// Passes on each list change that arrives on `subscription`, until it ends.
    fn pass_on_changes(&self, mut subscription: Subscription) {
        let events = self.events.clone();
        tokio::spawn(async move {
            while let Ok(Some(notification)) = subscription.next().await {
                if matches!(
                    notification,
                    ServerNotification::ToolListChangedNotification(_)
                        | ServerNotification::ResourceListChangedNotification(_)
                        | ServerNotification::PromptListChangedNotification(_)
                ) {
                    events.list_changed();
                }
            }
        });
    }
}

/// The list changes a 2026-07-28 server announces; `None` for an older revision (its
/// notifications come without asking) or a server that announces none.
fn change_filter(peer: &Peer<RoleClient>) -> Option<SubscriptionFilter> {
    let info = peer.peer_info()?;
    if info.protocol_version.has_initialize() {
        return None;
    }
    let caps = &info.capabilities;
    let mut filter = SubscriptionFilter::builder();
    let mut any = false;
    if caps.tools.as_ref().and_then(|c| c.list_changed) == Some(true) {
        filter = filter.tools_list_changed();
        any = true;
    }
    if caps.resources.as_ref().and_then(|c| c.list_changed) == Some(true) {
        filter = filter.resources_list_changed();
        any = true;
    }
    if caps.prompts.as_ref().and_then(|c| c.list_changed) == Some(true) {
        filter = filter.prompts_list_changed();
        any = true;
    }
    any.then(|| filter.build())
}
