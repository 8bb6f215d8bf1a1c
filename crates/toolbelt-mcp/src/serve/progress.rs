//! Live output of a running call as `notifications/progress`, for requests that carry a
//! progress token.
//!
//! The scheduler's `Output` events go to one task per scheduler, which finds the call's
//! token and sends at most one notification per [`INTERVAL`] per call: a command that
//! prints a million lines must not become a million notifications. `progress` is the
//! number of output bytes so far (it only grows, as the protocol requires; there is no
//! `total`), `message` the last line seen. Output between two notifications is counted
//! but not sent: the result carries the whole output.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use tokio::sync::mpsc;
use toolbelt_engine::scheduler::SchedulerEvent;

/// Shortest time between two notifications of one call.
pub(super) const INTERVAL: Duration = Duration::from_millis(100);

/// The longest `message`, in characters.
const MESSAGE_CHARS: usize = 200;

struct Watched {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    bytes: u64,
    last_line: String,
    last_sent: Option<Instant>,
}

/// The calls of a connection that asked for progress, by call id.
#[derive(Clone, Default)]
pub(super) struct ProgressWatch {
    calls: Arc<Mutex<HashMap<String, Watched>>>,
}

impl ProgressWatch {
    /// Starts reporting the output of `call_id` under `token`.
    pub(super) fn watch(&self, call_id: &str, peer: Peer<RoleServer>, token: ProgressToken) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.insert(
                call_id.to_string(),
                Watched {
                    peer,
                    token,
                    bytes: 0,
                    last_line: String::new(),
                    last_sent: None,
                },
            );
        }
    }

    /// Stops reporting `call_id` (its result is about to be sent).
    pub(super) fn unwatch(&self, call_id: &str) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.remove(call_id);
        }
    }

    /// Reads a scheduler's events until it is dropped.
    pub(super) async fn route(self, mut events: mpsc::UnboundedReceiver<SchedulerEvent>) {
        while let Some(event) = events.recv().await {
            let SchedulerEvent::Output { call_id, chunk } = event else {
                continue;
            };
            let Some((peer, param)) = self.note(&call_id, &chunk) else {
                continue;
            };
            // Sent in order (a notification's `progress` must grow); sending only
            // queues the message on the connection.
            let _ = peer.notify_progress(param).await;
        }
    }

    /// Counts `chunk`; the notification to send now, if one is due.
    fn note(
        &self,
        call_id: &str,
        chunk: &str,
    ) -> Option<(Peer<RoleServer>, ProgressNotificationParam)> {
        let mut calls = self.calls.lock().ok()?;
        let watched = calls.get_mut(call_id)?;
        watched.bytes += chunk.len() as u64;
        if let Some(line) = chunk.lines().rev().find(|l| !l.trim().is_empty()) {
            watched.last_line = line.chars().take(MESSAGE_CHARS).collect();
        }
        let now = Instant::now();
        if watched
            .last_sent
            .is_some_and(|at| now.duration_since(at) < INTERVAL)
        {
            return None;
        }
        watched.last_sent = Some(now);
        let param = ProgressNotificationParam::new(watched.token.clone(), watched.bytes as f64)
            .with_message(watched.last_line.clone());
        Some((watched.peer.clone(), param))
    }
}
