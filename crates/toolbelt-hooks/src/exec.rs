//! Running one hook: a command ([`command`]), an HTTP POST ([`http`]) or an SDK
//! callback ([`callback`]). Each gives an [`Answer`]; what it means for the event is
//! `output.rs`'s business.

pub(crate) mod callback;
pub(crate) mod command;
pub(crate) mod http;

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::{Executor, Hook};
use crate::output::Answer;

/// Output of one stream (or one HTTP body) read at most; past it the hook is ended and
/// its answer is unreadable.
pub(crate) const OUTPUT_CAP: usize = 1 << 20;

/// What the executors share for a session.
pub(crate) struct Executors {
    /// Where commands run, and what `QWEN_PROJECT_DIR` and its siblings name.
    pub project_dir: PathBuf,
    pub http: http::HttpSender,
    pub callbacks: RwLock<Option<Arc<dyn callback::HookCallbacks>>>,
}

impl Executors {
    /// Runs `hook` with `input` (the JSON it receives).
    pub(crate) async fn run(
        &self,
        hook: &Hook,
        input: &Value,
        cancel: CancellationToken,
    ) -> Answer {
        let body = match serde_json::to_vec(input) {
            Ok(body) => body,
            Err(e) => return Answer::Failed(format!("its input could not be written: {e}")),
        };
        match &hook.executor {
            Executor::Command(command) => {
                command::run(command, body, &self.project_dir, cancel).await
            }
            Executor::Http(http) => self.http.send(http, body, cancel).await,
            Executor::Callback { id, timeout } => {
                let callbacks = self
                    .callbacks
                    .read()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .clone();
                let Some(callbacks) = callbacks else {
                    return Answer::Failed("no SDK is connected to answer it".into());
                };
                let tool_use_id = input
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let call = callback::Call {
                    id,
                    input: input.clone(),
                    tool_use_id,
                    timeout: *timeout,
                };
                callback::run(callbacks.as_ref(), call, cancel).await
            }
        }
    }
}

/// `45 s`, `1.5 s`, `250 ms`: a time limit in a message.
pub(crate) fn show_duration(d: std::time::Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}
