//! The session's model as the answerer of MCP servers' sampling requests (see
//! [`toolbelt_core::ServerAsker`]): a request the person approved (or the server's
//! settings allow) goes to the model the session uses now, with the server's system
//! prompt, its messages, its `maxTokens` (already capped) and temperature, and no tools.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;
use toolbelt_core::{SampledReply, SamplingRequest, ServerSampler};
use toolbelt_model::{FinishReason, Message, Model, ModelRequest, Sampling};

use crate::model_slot::ModelSlot;

/// Samples with the session's model.
pub(crate) struct ModelSampler(pub(crate) Arc<ModelSlot>);

impl ServerSampler for ModelSampler {
    fn sample<'a>(
        &'a self,
        request: &'a SamplingRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<SampledReply, toolbelt_core::EmbedderError>> {
        Box::pin(async move {
            let asked = model_request(request);
            let turn = self
                .0
                .complete(&asked, cancel)
                .await
                .map_err(|e| e.to_string())?;
            Ok(SampledReply {
                text: turn.text,
                model: self.0.current_name(),
                truncated: turn.finish_reason == FinishReason::Length,
            })
        })
    }
}

/// The server's conversation as a request of its own: nothing of the session's.
fn model_request(request: &SamplingRequest) -> ModelRequest {
    let mut messages = Vec::new();
    if let Some(system) = &request.system_prompt {
        messages.push(Message::System(system.clone()));
    }
    for m in &request.messages {
        messages.push(if m.assistant {
            Message::Assistant {
                text: m.text.clone(),
                tool_calls: Vec::new(),
                reasoning: Vec::new(),
            }
        } else {
            Message::user_text(m.text.clone())
        });
    }
    ModelRequest {
        messages,
        sampling: Some(Sampling {
            max_tokens: Some(request.max_tokens),
            temperature: request.temperature.map(f64::from),
            ..Sampling::default()
        }),
        ..ModelRequest::default()
    }
}
