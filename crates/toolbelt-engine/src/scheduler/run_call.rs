//! Running one approved call: wait for a slot in the parallel batch, start, race the
//! cancellation token, and turn what comes back into a result.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use super::SchedulerEvent;
use crate::checkpoint::{CheckpointCall, Checkpoints, unsaved_note};
use toolbelt_core::{
    Consent, ExecContext, Invocation, Kind, OutputSink, PermissionSubject, ToolEnvironment,
};
use toolbelt_core::{ErrorKind, Part, ToolError, ToolResult};

/// How long a cancelled call may take to hand back its partial result before it is
/// dropped. Tools honour cancellation promptly; this only bounds one that does not.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

pub(super) struct JobInfo {
    pub call_id: String,
    pub tool: String,
    pub description: String,
    pub consent: Consent,
    /// The session's checkpoints, the call's kind and whether the tool writes files
    /// although its kind is read-only (see [`crate::checkpoint`]).
    pub checkpoint: Option<(Arc<dyn Checkpoints>, Kind, ToolFactsForCheckpoint)>,
}

/// Runs one invocation: waits for a slot, starts, races cancellation.
pub(super) async fn execute(
    invocation: Box<dyn Invocation>,
    info: JobInfo,
    env: Arc<ToolEnvironment>,
    events: Option<mpsc::UnboundedSender<SchedulerEvent>>,
    permits: Option<Arc<Semaphore>>,
    cancel: CancellationToken,
) -> (ToolResult, Duration) {
    let _permit = match permits {
        Some(p) => tokio::select! {
            permit = p.acquire_owned() => permit.ok(),
            _ = cancel.cancelled() => return (ToolResult::error(cancelled_error()), Duration::ZERO),
        },
        None => None,
    };
    if cancel.is_cancelled() {
        return (ToolResult::error(cancelled_error()), Duration::ZERO);
    }
    if let Some(tx) = &events {
        let _ = tx.send(SchedulerEvent::Started {
            call_id: info.call_id.clone(),
            tool: info.tool.clone(),
            description: info.description.clone(),
        });
    }
    let output = match events {
        Some(tx) => {
            let call_id = info.call_id.clone();
            OutputSink::new(move |chunk| {
                let _ = tx.send(SchedulerEvent::Output {
                    call_id: call_id.clone(),
                    chunk: chunk.to_string(),
                });
            })
        }
        None => OutputSink::none(),
    };
    let ctx = ExecContext {
        cancel: cancel.clone(),
        output,
        env,
        call_id: info.call_id.clone(),
        consent: info.consent,
    };
    // Issue 34: the workspace is recorded before the call and after it; a checkpoint
    // that fails is said in the result, and the call runs all the same.
    let checkpoint = info.checkpoint.map(|(c, kind, facts)| {
        let call = checkpoint_call(&info.call_id, &info.tool, (kind, facts), &*invocation);
        (c, call)
    });
    let unsaved = match &checkpoint {
        Some((c, call)) => c.before_call(call).await.err(),
        None => None,
    };
    let started = Instant::now();
    let mut running = invocation.execute(ctx);
    let result = tokio::select! {
        result = &mut running => result,
        _ = cancel.cancelled() => {
            tokio::select! {
                result = &mut running => result,
                _ = tokio::time::sleep(CANCEL_GRACE) => ToolResult::error(ToolError::new(
                    ErrorKind::Cancelled,
                    format!("[Operation Cancelled] {} did not stop in time and was abandoned.", info.tool),
                )),
            }
        }
    };
    let mut result =
        if cancel.is_cancelled() && result.error.is_none() && result.llm_content.is_empty() {
            ToolResult::error(cancelled_error())
        } else {
            result
        };
    let elapsed = started.elapsed();
    if let Some((c, call)) = &checkpoint {
        c.after_call(call).await;
    }
    if let Some(why) = unsaved {
        result
            .llm_content
            .push(Part::text(unsaved_note(&why.to_string())));
    }
    (result, elapsed)
}

/// What the checkpoints are told about one call.
fn checkpoint_call(
    call_id: &str,
    tool: &str,
    (kind, facts): (Kind, ToolFactsForCheckpoint),
    invocation: &dyn Invocation,
) -> CheckpointCall {
    let paths = match invocation.permission_subject() {
        PermissionSubject::Paths(paths) => paths,
        _ => Vec::new(),
    };
    CheckpointCall {
        call_id: call_id.to_string(),
        tool: tool.to_string(),
        kind,
        changes_files: !kind.is_read_only() || facts.writes_files,
        only_paths: facts.edits_named_files && !paths.is_empty(),
        paths,
    }
}

/// What of a tool's facts the checkpoints use.
#[derive(Debug, Clone, Copy)]
pub(super) struct ToolFactsForCheckpoint {
    /// [`toolbelt_core::ToolFacts::writes_files`].
    pub(super) writes_files: bool,
    /// [`toolbelt_core::ToolFacts::edits_named_files`].
    pub(super) edits_named_files: bool,
}

pub(super) fn cancelled_error() -> ToolError {
    ToolError::new(
        ErrorKind::Cancelled,
        "[Operation Cancelled] The user cancelled the tool call before it ran.",
    )
}

/// Text parts of a result, for models that read text only: inline data becomes a short
/// note naming what was left out.
pub fn text_for_model(result: &ToolResult) -> String {
    let mut out = Vec::new();
    for part in &result.llm_content {
        match part {
            Part::Text { text } => out.push(text.clone()),
            Part::InlineData {
                mime_type, data, ..
            } => out.push(format!(
                "[{mime_type} content, {} bytes, not shown: this model does not take inline media]",
                data.len()
            )),
            _ => out.push("[content of a kind this model does not take, not shown]".to_string()),
        }
    }
    out.join("\n")
}
