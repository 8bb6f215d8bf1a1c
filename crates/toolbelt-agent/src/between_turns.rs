//! Events that reach the model between turns from sources other than background agents:
//! a `monitor`'s output lines, scheduled prompts (issue 33).
//!
//! A source hands its waiting events over as one message ([`TurnEvents::take`]) just
//! before a model request, after every tool call of the last answer has its tool
//! message, so the conversation stays well formed. While a source is running
//! ([`TurnEvents::running`]), a loop whose model has answered waits for its next events
//! instead of ending: a headless run ends when its prompt is answered and nothing is
//! left to watch.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;

use crate::Agent;

/// A source of events for the model (see the module's documentation).
pub trait TurnEvents: Send + Sync {
    /// The events waiting, as one message; each is given once.
    fn take(&self) -> Option<String>;
    /// Whether events wait to be taken. The default, never, is for notes that ride
    /// along with the next request and are no reason for one.
    fn waiting(&self) -> bool {
        false
    }
    /// Whether more events may come (a monitor runs): the loop waits for them. Never,
    /// by default.
    fn running(&self) -> bool {
        false
    }
    /// Resolves when something may have changed since `take` or `running` was asked.
    /// Spurious wake-ups are fine; a missed one is not, so a source subscribes before
    /// it answers [`TurnEvents::running`] (see [`TurnEvents::watch`]). Never, by
    /// default.
    fn watch(&self) -> BoxFuture<'static, ()> {
        Box::pin(std::future::pending())
    }
}

impl Agent {
    /// Takes the events of `source` before each model request, and keeps the loop going
    /// while it runs (see the module's documentation).
    pub fn with_events(mut self, source: Arc<dyn TurnEvents>) -> Self {
        self.events.push(source);
        self
    }

    /// The messages of every source, in the order the sources were added.
    pub(crate) fn take_events(&self) -> Vec<String> {
        self.events.iter().filter_map(|s| s.take()).collect()
    }

    /// Whether a run whose model has answered waits for the events still to come (the
    /// default; headless and stream-json sessions). The interactive agent turns it off:
    /// the person gets the prompt back, and the events start a turn when it is idle.
    pub fn set_wait_for_events(&self, wait: bool) {
        self.events_wait
            .store(wait, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether a source runs or has events waiting, and the run should wait for them.
    pub(crate) fn events_pending(&self) -> bool {
        self.events_wait.load(std::sync::atomic::Ordering::Relaxed)
            && self.events.iter().any(|s| s.running() || s.waiting())
    }

    /// Waits until a source has events waiting, a background agent's notice may wait, a
    /// message came in, or `cancel`. `Some(true)`: a next turn has something to read;
    /// `Some(false)`: no source runs any more and none has events; `None`: cancelled.
    pub(crate) async fn wait_for_events(&self, cancel: &CancellationToken) -> Option<bool> {
        loop {
            // Subscribed before checking, so an event between the check and the wait
            // wakes us.
            let watches: Vec<_> = self.events.iter().map(|s| s.watch()).collect();
            if self.events.iter().any(|s| s.waiting()) {
                return Some(true);
            }
            if !self.events_pending() {
                return Some(false);
            }
            let notice = async {
                match &self.background {
                    Some(tasks) if tasks.pending() => tasks.wait_for_notice(cancel).await,
                    _ => std::future::pending().await,
                }
            };
            let message = async {
                match &self.inbox {
                    Some(inbox) => inbox.wait().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = first_of(watches) => {}
                () = notice => return (!cancel.is_cancelled()).then_some(true),
                () = message => return Some(true),
                () = cancel.cancelled() => return None,
            }
        }
    }
}

/// Resolves when the first of `futures` does.
async fn first_of(futures: Vec<BoxFuture<'static, ()>>) {
    if futures.is_empty() {
        return std::future::pending().await;
    }
    let mut set = tokio::task::JoinSet::new();
    for f in futures {
        set.spawn(f);
    }
    let _ = set.join_next().await;
}
