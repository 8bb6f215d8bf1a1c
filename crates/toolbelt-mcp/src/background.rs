//! Starting a session's servers without waiting for them: each starts in a task of its
//! own, and one whose start fails (it exits, or says nothing within `startupTimeout`)
//! is started again after 1 s, 2 s, 4 s, 8 s and 16 s ([`START_ATTEMPTS`] starts in
//! all, [`backoff`]); then it is left failed, and only a call to it starts it again
//! (as after a crash, `connection`).
//!
//! A start under way is the connection's `Link::Restarting`, so a caller that needs
//! the server meanwhile (a prompt command, `read_mcp_resource`) waits for that start
//! instead of starting a second copy; between two starts the link is `Link::Backoff`
//! and such a caller is told why at once. A server that is up is announced on the
//! `joined` list; the session adds its tools before its next model request.
//!
//! Nothing outlives the servers: [`crate::McpServers::close`] (and dropping them)
//! cancels the tasks, and a start under way finds its link closed and stops.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use crate::connection::McpConnection;
use crate::status::ServerStatus;

/// How many times a session starts a server before it gives up.
pub const START_ATTEMPTS: u32 = 6;

/// The wait before the first new start; it doubles for each next one.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

/// The longest wait between two starts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The wait after the `failed`-th failed start: 1 s, 2 s, 4 s, ... at most 30 s.
pub(crate) fn backoff(failed: u32) -> Duration {
    let factor = 1u32 << failed.saturating_sub(1).min(16);
    FIRST_BACKOFF.saturating_mul(factor).min(MAX_BACKOFF)
}

/// Servers that came up since the owner last looked, in the order they did.
pub(crate) type Joined = Arc<Mutex<Vec<String>>>;

/// Starts `connection` (once `go` is cancelled, when given) until it is up, closed,
/// or [`START_ATTEMPTS`] starts failed; announces it on `joined` when it is up.
pub(crate) async fn start_with_retries(
    connection: Arc<McpConnection>,
    joined: Joined,
    stop: CancellationToken,
    go: Option<CancellationToken>,
) {
    if let Some(go) = go {
        tokio::select! {
            () = go.cancelled() => {}
            () = stop.cancelled() => return,
        }
    }
    for attempt in 1..=START_ATTEMPTS {
        let outcome = tokio::select! {
            outcome = connection.start_shared(&joined) => outcome,
            () = stop.cancelled() => return,
        };
        let why = match outcome {
            Ok(()) => return,
            Err(Stop::Closed) => return,
            Err(Stop::Failed(why)) => why,
        };
        // Starting it again cannot help: it waits for `toolbelt mcp auth`.
        if matches!(connection.status(), ServerStatus::NeedsLogin(_)) {
            return;
        }
        if attempt == START_ATTEMPTS {
            connection.give_up(&format!(
                "{why}; gave up after {START_ATTEMPTS} starts (a call to one of its tools starts it again)"
            ));
            return;
        }
        let wait = backoff(attempt);
        connection.wait_for_retry(ServerStatus::Retrying {
            why,
            attempt: attempt + 1,
            attempts: START_ATTEMPTS,
            at: Instant::now() + wait,
        });
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = stop.cancelled() => return,
        }
    }
}

/// Why a start did not bring the server up.
pub(crate) enum Stop {
    /// The connection was closed: stop trying.
    Closed,
    /// This start failed, for this reason.
    Failed(String),
}

impl McpConnection {
    /// One start (with its handshake and first listing), made visible to callers that
    /// need the server meanwhile (see the module's documentation).
    pub(crate) async fn start_shared(self: &Arc<Self>, joined: &Joined) -> Result<(), Stop> {
        use crate::connection::Link;
        // Whether this start lists the tools itself (`connect` does), or joins a
        // call's restart (which does not) and must list them after.
        let mut listed = false;
        let start = {
            let mut link = self.link();
            match &*link {
                Link::Closed => return Err(Stop::Closed),
                Link::Restarting(restart) => restart.clone(),
                Link::Up(client) if !client.is_closed() => {
                    let peer = client.peer().clone();
                    async move { Ok(peer) }.boxed().shared()
                }
                Link::Up(_) | Link::Down | Link::Backoff(_) => {
                    listed = true;
                    let (this, joined) = (Arc::clone(self), joined.clone());
                    let task = tokio::spawn(async move {
                        this.connect_announcing(Some(&joined)).await?;
                        this.live_peer()
                    });
                    let start = async move {
                        task.await
                            .unwrap_or_else(|e| Err(format!("the start stopped: {e}")))
                    }
                    .boxed()
                    .shared();
                    *link = Link::Restarting(start.clone());
                    start
                }
            }
        };
        let outcome = match start.await {
            Ok(peer) if !listed => {
                let listing = self.list_and_store(&peer);
                let listed = tokio::time::timeout(self.config().startup_timeout, listing).await;
                match listed {
                    Ok(Ok(())) => {
                        joined
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(self.alias().to_string());
                        Ok(())
                    }
                    Ok(Err(why)) => Err(why),
                    Err(_) => Err("tools/list got no answer in time (startupTimeout)".into()),
                }
            }
            Ok(_) => Ok(()),
            Err(why) => Err(why),
        };
        let mut link = self.link();
        match (&*link, outcome) {
            (Link::Closed, _) => Err(Stop::Closed),
            (_, Ok(())) => Ok(()),
            (_, Err(why)) => {
                if matches!(*link, Link::Restarting(_)) {
                    *link = Link::Down;
                }
                Err(Stop::Failed(why))
            }
        }
    }

    /// Between two starts: calls are told `status` at once (see `Link::Backoff`).
    fn wait_for_retry(&self, status: ServerStatus) {
        use crate::connection::Link;
        let mut link = self.link();
        if matches!(*link, Link::Down | Link::Restarting(_)) {
            *link = Link::Backoff(format!("it failed to start; {status}"));
        }
        drop(link);
        self.set_status(status);
    }

    /// No more starts: failed with `why`; a call may start it again.
    fn give_up(&self, why: &str) {
        use crate::connection::Link;
        let mut link = self.link();
        if matches!(*link, Link::Backoff(_) | Link::Restarting(_)) {
            *link = Link::Down;
        }
        drop(link);
        self.set_status(ServerStatus::Failed(why.to_string()));
    }

    /// Waits until the start under way ended (up, or failed), at most its
    /// `startupTimeout` and a second: a caller that needs this server waits for it, and
    /// for no other.
    pub(crate) async fn wait_started(&self) {
        let mut status = self.watch_status();
        let bound = self.config().startup_timeout + Duration::from_secs(1);
        let _ = tokio::time::timeout(
            bound,
            status.wait_for(|s| !matches!(s, ServerStatus::Connecting)),
        )
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_from_one_second_up_to_thirty() {
        let waits: Vec<u64> = (1..=7).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
    }
}
