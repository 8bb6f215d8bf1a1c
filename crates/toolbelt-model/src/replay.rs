//! Replay and record: the model as a script.
//!
//! A script is JSONL, one model turn per line:
//!
//! ```text
//! {"text": "Listing first.", "tool_calls": [{"id": "c1", "name": "list_directory", "arguments": {"path": "${WORKSPACE}"}}]}
//! {"text": "Done: the workspace has 3 files."}
//! ```
//!
//! `arguments` is an object, or a string sent as it is (to script malformed
//! arguments). `id` defaults to `call_<turn>_<n>`; `finish_reason` (`stop`,
//! `tool_calls`, `length`) and `usage` are optional. Empty lines and lines starting
//! with `#` or `//` are skipped. `${WORKSPACE}` in any string becomes the workspace
//! directory, so one script runs anywhere (tools want absolute paths).
//!
//! The n-th request gets the n-th turn, whatever it contains, so a script written for one
//! run may be replayed against changed tools or another folder. What it does check: a
//! scripted call whose result came back as an error (the tool message starts with
//! `Error: `, as every failed call's does) when the script did not say
//! `"expect_error": true` for it. The script's last answer then says so, since its
//! words were written for results this run did not get.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{FinishReason, Model, ModelError, ModelRequest, ModelTurn, ToolCall, Usage};

/// Placeholder replaced by the workspace directory.
pub(crate) const WORKSPACE_PLACEHOLDER: &str = "${WORKSPACE}";

/// One scripted model turn.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    /// The answer text.
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// The calls the turn asks for.
    pub tool_calls: Vec<ScriptedCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Why it stopped; derived from the calls when absent.
    pub finish_reason: Option<FinishReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Token counts to report.
    pub usage: Option<Usage>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
/// One tool call of a scripted turn.
pub struct ScriptedCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Its id; made up when absent.
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    #[serde(default)]
    /// Its arguments (sent as their JSON text).
    pub arguments: Value,
    /// The script means this call to fail (a misspelt tool, a refused path).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expect_error: bool,
}

impl ScriptTurn {
    /// The model turn this line stands for; `turn` (from 1) numbers default call ids.
    pub fn to_model_turn(&self, turn: usize) -> ModelTurn {
        let tool_calls: Vec<ToolCall> = self
            .tool_calls
            .iter()
            .enumerate()
            .map(|(n, c)| ToolCall {
                id: c
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("call_{turn}_{}", n + 1)),
                name: c.name.clone(),
                arguments: match &c.arguments {
                    Value::String(s) => s.clone(),
                    Value::Null => "{}".to_string(),
                    other => other.to_string(),
                },
            })
            .collect();
        let finish_reason = self
            .finish_reason
            .clone()
            .unwrap_or(if tool_calls.is_empty() {
                FinishReason::Stop
            } else {
                FinishReason::ToolCalls
            });
        ModelTurn {
            text: self.text.clone(),
            tool_calls,
            finish_reason,
            usage: self.usage,
            ..Default::default()
        }
    }

    /// A line for a recording: arguments that are JSON objects are kept as objects.
    pub fn from_model_turn(turn: &ModelTurn) -> Self {
        ScriptTurn {
            text: turn.text.clone(),
            tool_calls: turn
                .tool_calls
                .iter()
                .map(|c| ScriptedCall {
                    id: Some(c.id.clone()),
                    name: c.name.clone(),
                    arguments: serde_json::from_str::<Value>(&c.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| Value::String(c.arguments.clone())),
                    expect_error: false,
                })
                .collect(),
            finish_reason: Some(turn.finish_reason.clone()),
            usage: turn.usage,
        }
    }
}

/// Why [`parse_script`] refused a script.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// A line that is not JSON, or not a turn; `line` counts from 1.
    #[error("line {line}: {source}")]
    Line {
        /// The line number.
        line: usize,
        /// What serde said.
        source: serde_json::Error,
    },
    /// Nothing but blank lines and comments.
    #[error("the script has no turns")]
    Empty,
}

/// Parses a script; errors name the line.
pub fn parse_script(text: &str, workspace: Option<&Path>) -> Result<Vec<ScriptTurn>, ScriptError> {
    let mut turns = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("//") {
            continue;
        }
        let at = |source| ScriptError::Line {
            line: n + 1,
            source,
        };
        let mut value: Value = serde_json::from_str(line).map_err(at)?;
        if let Some(dir) = workspace {
            substitute(&mut value, &dir.to_string_lossy());
        }
        let turn: ScriptTurn = serde_json::from_value(value).map_err(at)?;
        turns.push(turn);
    }
    if turns.is_empty() {
        return Err(ScriptError::Empty);
    }
    Ok(turns)
}

fn substitute(value: &mut Value, workspace: &str) {
    match value {
        Value::String(s) if s.contains(WORKSPACE_PLACEHOLDER) => {
            *s = s.replace(WORKSPACE_PLACEHOLDER, workspace);
        }
        Value::Array(items) => items.iter_mut().for_each(|v| substitute(v, workspace)),
        Value::Object(map) => map.values_mut().for_each(|v| substitute(v, workspace)),
        _ => {}
    }
}

/// Answers the n-th request with the n-th scripted turn.
pub struct ReplayModel {
    turns: Vec<ModelTurn>,
    /// The ids of the scripted calls meant to fail.
    expected_errors: std::collections::HashSet<String>,
    /// Scripted calls that failed unexpectedly: `id name: first line of the error`.
    misfits: Mutex<Vec<String>>,
    next: AtomicUsize,
    name: String,
}

impl ReplayModel {
    /// A model that answers with `script`, one turn per request; `name` is its model name.
    pub fn new(script: &[ScriptTurn], name: impl Into<String>) -> Self {
        let turns: Vec<ModelTurn> = script
            .iter()
            .enumerate()
            .map(|(i, t)| t.to_model_turn(i + 1))
            .collect();
        let expected_errors = script
            .iter()
            .zip(&turns)
            .flat_map(|(line, turn)| {
                line.tool_calls
                    .iter()
                    .zip(&turn.tool_calls)
                    .filter(|(scripted, _)| scripted.expect_error)
                    .map(|(_, call)| call.id.clone())
            })
            .collect();
        ReplayModel {
            turns,
            expected_errors,
            misfits: Mutex::new(Vec::new()),
            next: AtomicUsize::new(0),
            name: name.into(),
        }
    }

    /// Notes the results of the previous scripted turn's calls that failed though the
    /// script did not expect it.
    fn check_results(&self, request: &ModelRequest, previous: Option<&ModelTurn>) {
        let Some(previous) = previous else { return };
        for call in &previous.tool_calls {
            if self.expected_errors.contains(&call.id) {
                continue;
            }
            let failed = request.messages.iter().rev().find_map(|m| match m {
                crate::Message::Tool {
                    call_id,
                    text,
                    is_error: true,
                    ..
                } if *call_id == call.id => {
                    let text = text.strip_prefix("Error: ").unwrap_or(text);
                    Some(text.lines().next().unwrap_or("").to_string())
                }
                _ => None,
            });
            if let Some(error) = failed
                && let Ok(mut misfits) = self.misfits.lock()
            {
                let error: String = error.chars().take(160).collect();
                misfits.push(format!("{} {}: {error}", call.id, call.name));
            }
        }
    }

    /// The scripted answer, with a note when it ends the run after unexpected failures.
    fn with_misfits(&self, mut turn: ModelTurn) -> ModelTurn {
        if !turn.tool_calls.is_empty() {
            return turn;
        }
        let misfits = self.misfits.lock().map(|m| m.clone()).unwrap_or_default();
        if !misfits.is_empty() {
            turn.text.push_str(&format!(
                "\n\n[replay: this scripted answer was written for other results: {} scripted call{} failed where the script expected success ({}). The script may not fit this folder.]",
                misfits.len(),
                if misfits.len() == 1 { "" } else { "s" },
                misfits.join("; ")
            ));
        }
        turn
    }

    /// Reads a script file.
    pub fn from_file(path: &Path, workspace: Option<&Path>) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ModelError::Replay(format!("cannot read {}: {e}", path.display())))?;
        let script = parse_script(&text, workspace)
            .map_err(|e| ModelError::Replay(format!("{}: {e}", path.display())))?;
        Ok(ReplayModel::new(
            &script,
            format!("replay:{}", path.display()),
        ))
    }
}

impl Model for ReplayModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>> {
        Box::pin(async move {
            if cancel.is_cancelled() {
                return Err(ModelError::Cancelled);
            }
            let n = self.next.fetch_add(1, Ordering::SeqCst);
            self.check_results(request, n.checked_sub(1).and_then(|p| self.turns.get(p)));
            self.turns.get(n).cloned().map(|t| self.with_misfits(t)).ok_or_else(|| {
                ModelError::Replay(format!(
                    "the script has {} turns and the agent asked for turn {}; end the script with a turn without tool calls",
                    self.turns.len(),
                    n + 1
                ))
            })
        })
    }
}

/// Wraps a model and appends every turn it answers to a script file.
pub struct RecordingModel {
    inner: Box<dyn Model>,
    out: Mutex<std::fs::File>,
}

impl RecordingModel {
    /// Creates (truncates) `path`.
    pub fn new(inner: Box<dyn Model>, path: &Path) -> Result<Self, ModelError> {
        let out = std::fs::File::create(path).map_err(|e| {
            ModelError::Config(format!(
                "cannot create the record file {}: {e}",
                path.display()
            ))
        })?;
        Ok(RecordingModel {
            inner,
            out: Mutex::new(out),
        })
    }

    fn record(&self, turn: &ModelTurn) {
        let line = match serde_json::to_string(&ScriptTurn::from_model_turn(turn)) {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!("cannot record a model turn: {e}");
                return;
            }
        };
        if let Ok(mut f) = self.out.lock()
            && let Err(e) = writeln!(f, "{line}").and_then(|_| f.flush())
        {
            tracing::warn!("cannot write the record file: {e}");
        }
    }
}

impl Model for RecordingModel {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn takes_images(&self) -> bool {
        self.inner.takes_images()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>> {
        self.complete_streaming(request, cancel, &|_| {})
    }

    fn complete_streaming<'a>(
        &'a self,
        request: &'a ModelRequest,
        cancel: &'a CancellationToken,
        on_delta: crate::DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>> {
        Box::pin(async move {
            let turn = self
                .inner
                .complete_streaming(request, cancel, on_delta)
                .await?;
            self.record(&turn);
            Ok(turn)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_parse_with_placeholders_defaults_and_comments() {
        let text = r#"
# a comment
{"text": "hi", "tool_calls": [{"name": "read_file", "arguments": {"absolute_path": "${WORKSPACE}/a.txt"}}, {"id": "x", "name": "glob", "arguments": "{bad"}]}
// another
{"text": "done", "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
"#;
        let script = parse_script(text, Some(Path::new("/w"))).unwrap();
        let t1 = script[0].to_model_turn(1);
        assert_eq!(t1.tool_calls[0].id, "call_1_1");
        assert_eq!(
            t1.tool_calls[0].arguments,
            r#"{"absolute_path":"/w/a.txt"}"#
        );
        assert_eq!(t1.tool_calls[1].arguments, "{bad");
        assert_eq!(t1.finish_reason, FinishReason::ToolCalls);
        let t2 = script[1].to_model_turn(2);
        assert_eq!(t2.finish_reason, FinishReason::Stop);
        assert_eq!(t2.usage.unwrap().total_tokens, 5);
    }

    #[test]
    fn bad_lines_are_named() {
        let err = parse_script("{\"text\": \"a\"}\n{\"txt\": 1}\n", None).unwrap_err();
        assert!(err.to_string().starts_with("line 2:"), "{err}");
        assert!(matches!(err, ScriptError::Line { line: 2, .. }), "{err:?}");
        let err = parse_script("\n# only comments\n", None).unwrap_err();
        assert!(matches!(err, ScriptError::Empty), "{err:?}");
        assert_eq!(err.to_string(), "the script has no turns");
    }

    #[test]
    fn a_recorded_turn_replays_as_itself() {
        let turn = ModelTurn {
            text: "t".into(),
            tool_calls: vec![ToolCall {
                id: "c9".into(),
                name: "edit".into(),
                arguments: r#"{"file_path":"/a"}"#.into(),
            }],
            finish_reason: FinishReason::Length,
            usage: None,
            ..Default::default()
        };
        let line = serde_json::to_string(&ScriptTurn::from_model_turn(&turn)).unwrap();
        let back = parse_script(&line, None).unwrap()[0].to_model_turn(1);
        assert_eq!(back, turn);
    }

    #[tokio::test]
    async fn an_unexpected_failure_is_named_in_the_last_answer_and_an_expected_one_is_not() {
        let script = parse_script(
            r#"{"tool_calls": [{"id": "r1", "name": "read_file"}, {"id": "r2", "name": "read_fil", "expect_error": true}]}
{"text": "Read it."}"#,
            None,
        )
        .unwrap();
        let cancel = CancellationToken::new();
        let answer = |r1: &str| ModelRequest {
            messages: vec![
                crate::Message::Tool {
                    call_id: "r1".into(),
                    text: r1.into(),
                    is_error: r1.starts_with("Error: "),
                    images: Vec::new(),
                },
                crate::Message::Tool {
                    call_id: "r2".into(),
                    text: "Error: Tool \"read_fil\" not found".into(),
                    is_error: true,
                    images: Vec::new(),
                },
            ],
            ..ModelRequest::default()
        };
        let model = ReplayModel::new(&script, "r");
        model
            .complete(&ModelRequest::default(), &cancel)
            .await
            .unwrap();
        let last = model
            .complete(&answer("Error: File not found: /x/a.txt"), &cancel)
            .await
            .unwrap();
        assert!(
            last.text.starts_with("Read it.\n\n[replay: "),
            "{}",
            last.text
        );
        assert!(
            last.text.contains("r1 read_file: File not found: /x/a.txt"),
            "{}",
            last.text
        );
        assert!(
            !last.text.contains("r2"),
            "an expected failure is not a misfit: {}",
            last.text
        );
        let model = ReplayModel::new(&script, "r");
        model
            .complete(&ModelRequest::default(), &cancel)
            .await
            .unwrap();
        let last = model.complete(&answer("contents"), &cancel).await.unwrap();
        assert_eq!(last.text, "Read it.");
    }

    #[tokio::test]
    async fn replay_answers_in_order_then_says_the_script_ran_out() {
        let script = parse_script("{\"text\": \"one\"}\n{\"text\": \"two\"}", None).unwrap();
        let model = ReplayModel::new(&script, "r");
        let req = ModelRequest::default();
        let cancel = CancellationToken::new();
        assert_eq!(model.complete(&req, &cancel).await.unwrap().text, "one");
        assert_eq!(model.complete(&req, &cancel).await.unwrap().text, "two");
        let err = model.complete(&req, &cancel).await.unwrap_err().to_string();
        assert!(err.contains("has 2 turns"), "{err}");
    }
}
