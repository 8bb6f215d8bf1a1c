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
use toolbelt_engine::hooks::HookEvent;

use crate::config::{Executor, Hook};
use crate::output::{Answer, decides};

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
        event: HookEvent,
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
            Executor::Callback {
                id,
                timeout,
                block_on_failure,
            } => {
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
                let answer = callback::run(callbacks.as_ref(), call, cancel).await;
                match answer {
                    // `onFailure: "block"`: where hooks decide, a failure refuses (on
                    // Stop it would make the agent go on, so there it stays a failure,
                    // as Claude's SDK documents).
                    Answer::Failed(why) if *block_on_failure && decides(event) => {
                        Answer::Blocked(format!(
                            "hook {} failed ({why}) and is set to block on failure",
                            hook.label
                        ))
                    }
                    answer => answer,
                }
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
