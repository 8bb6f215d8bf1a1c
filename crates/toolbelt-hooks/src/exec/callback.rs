//! SDK hook callbacks: hooks that live in the program driving toolbelt over stream-JSON
//! (`@qwen-code/sdk`, the Claude Agent SDK). The SDK names them in its `initialize`
//! request (`{"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["h1"], "timeout":
//! 30}]}`, see `HookEngine::add_callbacks`), and each run is a `hook_callback` control
//! request answered with the same JSON a command hook prints. The transport is the
//! stream-JSON front end's: it implements [`HookCallbacks`].

use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;

use super::{OUTPUT_CAP, show_duration};
use crate::output::Answer;

/// Calls the SDK's hook callbacks.
pub trait HookCallbacks: Send + Sync {
    /// Calls callback `callback_id` with the hook's `input` (and the call's
    /// `tool_use_id` on tool events). The answer is the hook's JSON output (`null` or
    /// `{}`: nothing to say); `Err` is a failure that does not block. `cancel` is
    /// cancelled when the event's hooks are abandoned (the call was cancelled, or the
    /// callback's time limit passed).
    fn call(
        &self,
        callback_id: &str,
        input: Value,
        tool_use_id: Option<String>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Value, toolbelt_core::EmbedderError>>;
}

/// One callback run.
pub(crate) struct Call<'a> {
    pub id: &'a str,
    pub input: Value,
    pub tool_use_id: Option<String>,
    pub timeout: Duration,
}

/// Calls the callback within its time limit.
pub(crate) async fn run(
    callbacks: &dyn HookCallbacks,
    call: Call<'_>,
    cancel: CancellationToken,
) -> Answer {
    let own = cancel.child_token();
    let answer = callbacks.call(call.id, call.input, call.tool_use_id, own.clone());
    let answer = tokio::select! {
        answer = answer => answer,
        () = tokio::time::sleep(call.timeout) => {
            own.cancel();
            return Answer::Failed(format!(
                "the SDK did not answer within {}",
                show_duration(call.timeout)
            ));
        }
        () = cancel.cancelled() => return Answer::Failed("cancelled".into()),
    };
    match answer {
        Ok(answer) if too_large(&answer) => Answer::Malformed(format!(
            "the SDK's answer is larger than {} MiB",
            OUTPUT_CAP >> 20
        )),
        Ok(Value::Null) => Answer::Empty,
        Ok(Value::Object(map)) => Answer::Json(map),
        Ok(other) => {
            let shown: String = other.to_string().chars().take(60).collect();
            Answer::Malformed(format!("the SDK answered {shown}, not a JSON object"))
        }
        Err(message) => Answer::Failed(format!("the SDK's callback failed: {message}")),
    }
}

/// Whether `answer` written as JSON is longer than a command hook's output may be
/// ([`OUTPUT_CAP`]); counted without writing it out.
fn too_large(answer: &Value) -> bool {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            if self.0 > OUTPUT_CAP {
                return Err(std::io::Error::other("over the cap"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(Count(0), answer).is_err()
}
