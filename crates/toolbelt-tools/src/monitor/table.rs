//! The monitors of one session and the events waiting for the model.
//!
//! Each monitor is a background shell job (the shell's [`JobTable`] holds and ends its
//! processes); this table holds what the model has not read yet: the lines that passed
//! the monitor's [`TokenBucket`], how many were dropped, and how each monitor ended.
//! Memory is bounded whatever the command prints: a line is cut at [`MAX_LINE_CHARS`],
//! a monitor holds at most [`MAX_QUEUED`] unread lines (more are dropped and counted),
//! and at most [`MAX_MONITORS`] run at once.
//!
//! The table holds the job table weakly: the session's end drops the job table, which
//! ends every job, a monitor's included.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use tokio::sync::watch;

use super::bucket::TokenBucket;
use crate::shell::background::JobTable;

/// Monitors that may run at once (Qwen Code's limit).
pub(super) const MAX_MONITORS: usize = 16;
/// Unread lines one monitor may hold; later ones are dropped and counted.
pub(super) const MAX_QUEUED: usize = 100;
/// Characters of a line an event keeps.
pub(super) const MAX_LINE_CHARS: usize = 2000;

/// What the model is told about a monitor.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Line(String),
    /// Lines dropped (over the rate or the queue) since the last event.
    Dropped(u64),
    Ended(String),
}

struct Running {
    command: String,
    bucket: TokenBucket,
    /// Dropped since the last line that went through.
    dropped: u64,
    /// Lines waiting in the queue.
    queued: usize,
    lines: u64,
    dropped_total: u64,
}

#[derive(Default)]
struct State {
    running: BTreeMap<String, Running>,
    /// Slots taken by monitors being started.
    starting: usize,
    /// Events for the model, in the order they happened: (monitor id, event).
    queue: VecDeque<(String, Event)>,
}

/// The monitors of one session.
pub struct MonitorTable {
    jobs: Weak<JobTable>,
    state: Mutex<State>,
    /// Bumped on every change, so waiters re-check.
    version: watch::Sender<u64>,
}

/// A monitor slot taken by [`MonitorTable::reserve`]; given back when dropped unless
/// the monitor started.
pub struct Slot {
    table: Arc<MonitorTable>,
    used: bool,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if !self.used {
            self.table.lock().starting -= 1;
        }
    }
}

impl MonitorTable {
    /// The monitors whose jobs `jobs` holds.
    pub fn new(jobs: &Arc<JobTable>) -> Arc<Self> {
        Arc::new(MonitorTable {
            jobs: Arc::downgrade(jobs),
            state: Mutex::default(),
            version: watch::channel(0).0,
        })
    }

    pub(super) fn jobs(&self) -> Option<Arc<JobTable>> {
        self.jobs.upgrade()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn changed(&self) {
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// A slot for one more monitor; `None` when `MAX_MONITORS` (16) run or start.
    pub fn reserve(self: &Arc<Self>) -> Option<Slot> {
        let mut state = self.lock();
        if state.running.len() + state.starting >= MAX_MONITORS {
            return None;
        }
        state.starting += 1;
        Some(Slot {
            table: self.clone(),
            used: false,
        })
    }

    /// Records that the monitor `id` (its job's id) runs `command`, in `slot`.
    pub fn started(&self, mut slot: Slot, id: &str, command: &str, now: Instant) {
        slot.used = true;
        let mut state = self.lock();
        state.starting -= 1;
        state.running.insert(
            id.to_string(),
            Running {
                command: command.to_string(),
                bucket: TokenBucket::new(now),
                dropped: 0,
                queued: 0,
                lines: 0,
                dropped_total: 0,
            },
        );
        drop(state);
        self.changed();
    }

    /// A line of monitor `id`'s output at `now`: queued for the model if the bucket
    /// and the queue have room, else counted as dropped. Returns the lines seen so far.
    pub fn line(&self, id: &str, text: &str, now: Instant) -> u64 {
        let mut state = self.lock();
        let State { running, queue, .. } = &mut *state;
        let Some(monitor) = running.get_mut(id) else {
            return 0;
        };
        monitor.lines += 1;
        let lines = monitor.lines;
        if monitor.queued >= MAX_QUEUED || !monitor.bucket.take(now) {
            monitor.dropped += 1;
            monitor.dropped_total += 1;
            return lines;
        }
        if monitor.dropped > 0 {
            queue.push_back((id.to_string(), Event::Dropped(monitor.dropped)));
            monitor.dropped = 0;
        }
        monitor.queued += 1;
        queue.push_back((id.to_string(), Event::Line(cut(text))));
        drop(state);
        self.changed();
        lines
    }

    /// Records that monitor `id` ended, `why` (a phrase: "exited with code 0").
    pub fn ended(&self, id: &str, why: &str) {
        let mut state = self.lock();
        let Some(monitor) = state.running.remove(id) else {
            return;
        };
        if monitor.dropped > 0 {
            state
                .queue
                .push_back((id.to_string(), Event::Dropped(monitor.dropped)));
        }
        let delivered = monitor.lines - monitor.dropped_total;
        let summary = format!(
            "ended: {why} (`{}`; {} lines, {delivered} delivered, {} dropped by the rate limit)",
            monitor.command, monitor.lines, monitor.dropped_total
        );
        state
            .queue
            .push_back((id.to_string(), Event::Ended(summary)));
        drop(state);
        self.changed();
    }

    /// Ids and commands of the monitors that run.
    pub fn running(&self) -> Vec<(String, String)> {
        self.lock()
            .running
            .iter()
            .map(|(id, m)| (id.clone(), m.command.clone()))
            .collect()
    }

    /// Whether events (or drop counts) wait for the model.
    pub fn waiting(&self) -> bool {
        let state = self.lock();
        !state.queue.is_empty() || state.running.values().any(|m| m.dropped > 0)
    }

    /// Whether a monitor runs or an event waits.
    pub fn pending(&self) -> bool {
        let state = self.lock();
        !state.running.is_empty() || !state.queue.is_empty()
    }

    /// The events waiting, as one message for the model (`None` when none waits); each
    /// is given once. Drop counts not yet said are said now.
    pub fn take(&self) -> Option<String> {
        let mut state = self.lock();
        let State { running, queue, .. } = &mut *state;
        for (id, monitor) in running.iter_mut() {
            monitor.queued = 0;
            if monitor.dropped > 0 {
                queue.push_back((id.clone(), Event::Dropped(monitor.dropped)));
                monitor.dropped = 0;
            }
        }
        if queue.is_empty() {
            return None;
        }
        let lines: Vec<String> = queue.drain(..).map(|(id, e)| render(&id, &e)).collect();
        drop(state);
        Some(format!(
            "<monitor-events>\nEvents from the monitors you started, one a line as `[id] text` (each output line of a monitor is an event; task_stop with the id ends one):\n{}\n</monitor-events>",
            escape_closing(&lines.join("\n"))
        ))
    }

    /// Waits until something changes (an event, a monitor's start or end).
    pub async fn changed_since(&self, mut seen: watch::Receiver<u64>) {
        let _ = seen.changed().await;
    }

    /// A receiver of changes, for [`MonitorTable::changed_since`].
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Ends every running monitor (the run is over); returns their ids and commands.
    pub async fn stop_all(&self) -> Vec<(String, String)> {
        let running = self.running();
        if let Some(jobs) = self.jobs() {
            for (id, _) in &running {
                jobs.stop(id).await;
            }
        }
        for (id, _) in &running {
            self.ended(id, "ended with the run");
        }
        running
    }
}

fn render(id: &str, event: &Event) -> String {
    match event {
        Event::Line(text) => format!("[{id}] {text}"),
        Event::Dropped(n) => format!(
            "[{id}] ({n} line{} dropped: at most 5 events at once, then 1 a second)",
            if *n == 1 { "" } else { "s" }
        ),
        Event::Ended(summary) => format!("[{id}] {summary}"),
    }
}

/// `text` without control characters, cut at [`MAX_LINE_CHARS`].
fn cut(text: &str) -> String {
    let mut out: String = text
        .chars()
        .filter(|c| !c.is_control() || *c == '\t')
        .take(MAX_LINE_CHARS + 1)
        .collect();
    if out.chars().count() > MAX_LINE_CHARS {
        out = out.chars().take(MAX_LINE_CHARS).collect();
        out.push_str(" [line cut]");
    }
    out
}

/// `text` with every `</monitor-events>` (any case) written as `<\/monitor-events>`, so
/// a command's output cannot end the block early.
fn escape_closing(text: &str) -> String {
    const CLOSING: &str = "</monitor-events>";
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (at, _) in lower.match_indices(CLOSING) {
        out.push_str(&text[last..at]);
        out.push_str("<\\/");
        out.push_str(&text[at + 2..at + CLOSING.len()]);
        last = at + CLOSING.len();
    }
    out.push_str(&text[last..]);
    out
}
