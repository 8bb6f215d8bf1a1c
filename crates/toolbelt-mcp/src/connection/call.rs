//! A tool call on the server: cancellation (`notifications/cancelled`), the call timeout,
//! progress notifications to the live output, and the input rounds of the 2026-07-28
//! revision. Such a server does not send requests of its own mid-call; it answers the
//! call with an `InputRequiredResult` naming what it needs first (the client's roots, an
//! elicitation), and the call is sent again with the answers and the server's opaque
//! state. The answers come from the connection's [`rmcp::ClientHandler`], the same that
//! answers a server of an older revision asking mid-call, so both revisions get the same.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    ClientResult, InputRequest, InputRequiredResult, InputResponses, NumberOrString, ServerRequest,
    ServerResult,
};
use rmcp::service::{PeerRequestOptions, RequestContext};
use rmcp::{Peer, RoleClient, Service, ServiceError};
use serde_json::{Map, Value};
use toolbelt_config::redact::redact;
use toolbelt_core::{ErrorKind, ExecContext, ToolResult};

use super::{Link, McpConnection, Unavailable, human_duration, service_error_text};
use crate::events::ServerEvents;

/// Input rounds one request may take: a server that keeps asking past this is looping.
pub(crate) const MAX_INPUT_ROUNDS: u32 = 8;
/// Inputs one round may ask for: each may be a question to the person, and a server
/// asking for hundreds at once would hold them in dialogs.
const MAX_INPUTS_PER_ROUND: usize = 8;

/// How one round of a call ended.
enum Round {
    Done(ToolResult),
    /// The server needs input before it can answer.
    Input(InputRequiredResult),
}

impl McpConnection {
    /// Runs `tool` on the server: honours `ctx.cancel` (sends `notifications/cancelled`),
    /// the call timeout (per round), passes progress notifications to `ctx.output`, and
    /// answers the input a 2026-07-28 server asks for (see the module's documentation).
    pub async fn call(self: &Arc<Self>, tool: &str, args: Value, ctx: ExecContext) -> ToolResult {
        let alias = &self.config.alias;
        let peer = match self.peer(&ctx.cancel).await {
            Ok(peer) => peer,
            Err(Unavailable::Cancelled) => return self.cancelled(tool),
            Err(Unavailable::Failed(why)) => {
                return ToolResult::err(
                    ErrorKind::McpToolError,
                    redact(&format!("MCP server \"{alias}\" is not available: {why}")),
                );
            }
        };
        let arguments = match args {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        for round in 0..MAX_INPUT_ROUNDS {
            let input = match self.call_round(&peer, tool, params.clone(), &ctx).await {
                Round::Done(result) => return result,
                Round::Input(input) => input,
            };
            let answered = tokio::select! {
                answered = self.answer_input(&peer, input, round) => answered,
                _ = ctx.cancel.cancelled() => return self.cancelled(tool),
            };
            match answered {
                Ok((responses, state)) => {
                    params.input_responses = responses;
                    params.request_state = state;
                }
                Err(why) => {
                    return ToolResult::err(
                        ErrorKind::McpToolError,
                        redact(&format!(
                            "MCP tool \"{tool}\" of server \"{alias}\" asked for input that could not be given: {why}"
                        )),
                    );
                }
            }
        }
        ToolResult::err(
            ErrorKind::McpToolError,
            format!(
                "MCP tool \"{tool}\" of server \"{alias}\" still asked for input after {MAX_INPUT_ROUNDS} rounds; the call was given up."
            ),
        )
    }

    /// One `tools/call` request and its answer.
    async fn call_round(
        &self,
        peer: &Peer<RoleClient>,
        tool: &str,
        params: CallToolRequestParams,
        ctx: &ExecContext,
    ) -> Round {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let options = PeerRequestOptions::with_timeout(self.config.call_timeout);
        let handle = match peer.send_request_with_option(request, options).await {
            Ok(handle) => handle,
            Err(e) => return Round::Done(self.failed_call(tool, e)),
        };
        let id = handle.id.clone();
        let token = handle.progress_token.clone();
        self.events
            .watch_progress(token.clone(), ctx.output.clone());
        let outcome = tokio::select! {
            response = handle.await_response() => Some(response),
            _ = ctx.cancel.cancelled() => None,
        };
        self.events.unwatch_progress(&token);
        let alias = &self.config.alias;
        Round::Done(match outcome {
            None => {
                let param =
                    CancelledNotificationParam::new(Some(id), Some("cancelled by the user".into()));
                // Best effort and bounded: a cancelled call ends now, not when a stuck
                // server takes the notification.
                let _ =
                    tokio::time::timeout(Duration::from_millis(500), peer.notify_cancelled(param))
                        .await;
                self.cancelled(tool)
            }
            Some(Ok(ServerResult::CallToolResult(result))) => {
                crate::content::to_tool_result(alias, tool, result)
            }
            Some(Ok(ServerResult::InputRequiredResult(input))) => return Round::Input(input),
            Some(Ok(_)) => ToolResult::err(
                ErrorKind::McpToolError,
                format!(
                    "MCP tool \"{tool}\" of server \"{alias}\" answered with something other than a tool result (tasks are not supported)."
                ),
            ),
            Some(Err(e)) => self.failed_call(tool, e),
        })
    }

    fn cancelled(&self, tool: &str) -> ToolResult {
        ToolResult::err(
            ErrorKind::Cancelled,
            format!(
                "The call to MCP tool \"{tool}\" of server \"{}\" was cancelled.",
                self.config.alias
            ),
        )
    }

    fn failed_call(&self, tool: &str, error: ServiceError) -> ToolResult {
        let alias = &self.config.alias;
        let (kind, message) = match error {
            ServiceError::McpError(e) => (
                ErrorKind::McpToolError,
                format!(
                    "MCP tool \"{tool}\" of server \"{alias}\" failed: MCP error {}: {}",
                    e.code.0, e.message
                ),
            ),
            ServiceError::Timeout { timeout } => (
                ErrorKind::Timeout,
                format!(
                    "MCP tool \"{tool}\" of server \"{alias}\" did not answer within {} (the server's `timeout` setting, in ms); the request was cancelled.",
                    human_duration(timeout)
                ),
            ),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let mut link = self.link();
                if matches!(*link, Link::Up(_)) {
                    *link = Link::Down;
                }
                drop(link);
                let why = "the server closed the connection during a call (it may have crashed); it will be restarted on next use";
                self.mark_failed(why);
                (
                    ErrorKind::McpToolError,
                    format!(
                        "MCP tool \"{tool}\" of server \"{alias}\" failed: {}",
                        self.with_log_hint(why)
                    ),
                )
            }
            other => (
                ErrorKind::McpToolError,
                format!(
                    "MCP tool \"{tool}\" of server \"{alias}\" failed: {}",
                    service_error_text(&other)
                ),
            ),
        };
        ToolResult::err(kind, redact(&message))
    }

    /// The answers to what an `InputRequiredResult` asks, by its keys, and the state to
    /// send back. A result that asks nothing and only carries state means "ask again
    /// later": `round` paces that, as the revision asks, a little longer each time.
    pub(crate) async fn answer_input(
        &self,
        peer: &Peer<RoleClient>,
        input: InputRequiredResult,
        round: u32,
    ) -> Result<(Option<InputResponses>, Option<String>), String> {
        answer_input(&self.events, peer, input, round).await
    }
}

async fn answer_input(
    events: &ServerEvents,
    peer: &Peer<RoleClient>,
    input: InputRequiredResult,
    round: u32,
) -> Result<(Option<InputResponses>, Option<String>), String> {
    let requests = input.input_requests.unwrap_or_default();
    if requests.len() > MAX_INPUTS_PER_ROUND {
        return Err(format!(
            "the server asked for {} inputs at once; toolbelt answers at most {MAX_INPUTS_PER_ROUND}",
            requests.len()
        ));
    }
    if requests.is_empty() {
        if input.request_state.is_none() {
            return Err("the server asked for input but named none".into());
        }
        tokio::time::sleep(Duration::from_millis(50 << round.min(2))).await;
    }
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let answer = answer_one(events, peer, &key, request).await?;
        responses.insert(key, answer);
    }
    Ok((
        (!responses.is_empty()).then_some(responses),
        input.request_state,
    ))
}

/// One input request, put to the handler as the request an older revision would send.
async fn answer_one(
    events: &ServerEvents,
    peer: &Peer<RoleClient>,
    key: &str,
    request: InputRequest,
) -> Result<Value, String> {
    let request = match request {
        InputRequest::ListRoots(r) => ServerRequest::ListRootsRequest(r),
        InputRequest::Elicitation(r) => ServerRequest::ElicitRequest(r),
        InputRequest::CreateMessage(r) => ServerRequest::CreateMessageRequest(r),
        _ => {
            return Err(format!(
                "input \"{key}\" is of a kind toolbelt does not know"
            ));
        }
    };
    let context = RequestContext::new(NumberOrString::String(key.into()), peer.clone());
    let answered = events
        .handle_request(request, context)
        .await
        .map_err(|e| format!("input \"{key}\": {}", e.message))?;
    let value = match answered {
        ClientResult::ListRootsResult(r) => serde_json::to_value(r),
        ClientResult::ElicitResult(r) => serde_json::to_value(r),
        ClientResult::CreateMessageResult(r) => serde_json::to_value(r),
        _ => return Err(format!("input \"{key}\" got no answer")),
    };
    value.map_err(|e| format!("input \"{key}\": {e}"))
}
