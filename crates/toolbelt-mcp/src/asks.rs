//! What a server asks of the session (`elicitation/create`, `sampling/createMessage`):
//! the wire requests as [`toolbelt_core::ServerAsker`] shapes, who answers them, and
//! the answers back.
//!
//! Who answers is the session's [`ServerAskSlot`]: its asker (the front end's person)
//! shows an elicitation and approves a sampling request; its sampler (the session's
//! model) answers an approved one. With no asker (headless) an elicitation is declined
//! and a sampling request refused, unless the server's settings say
//! `"sampling": "allow"`; both say so in the log. The asker's answer to a form is
//! checked against the form here again, whatever front end gave it: a server only ever
//! receives content that fits what it asked for.

// Sampling is deprecated by SEP-2577 (the 2026-07-28 revision drops it); servers of the
// earlier revisions, which toolbelt speaks, still ask for it.
#![allow(deprecated)]

use rmcp::ErrorData;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, ErrorCode, Role, SamplingMessage, SamplingMessageContentBlock,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolbelt_config::settings::McpSampling;
use toolbelt_core::{
    Choice, ElicitationAnswer, ElicitationMode, ElicitationRequest, FieldKind, Form, FormField,
    SAMPLING_MAX_TOKENS, SampledMessage, SamplingRequest, ServerAskSlot,
};

/// Answers `elicitation/create` of server `alias`.
pub(crate) async fn elicit(
    alias: &str,
    slot: &ServerAskSlot,
    params: ElicitRequestParams,
    cancel: &CancellationToken,
) -> ElicitResult {
    let request = match elicitation_of(alias, params) {
        Ok(request) => request,
        Err(why) => {
            tracing::warn!("MCP server \"{alias}\" asked for input; declined: {why}");
            return ElicitResult::new(ElicitationAction::Decline);
        }
    };
    let Some(asker) = slot.asker() else {
        tracing::warn!(
            "MCP server \"{alias}\" asked for input ({}); declined: nobody can be asked in this run",
            request.message
        );
        return ElicitResult::new(ElicitationAction::Decline);
    };
    let answer = tokio::select! {
        answer = asker.elicit(&request, cancel) => answer,
        () = cancel.cancelled() => ElicitationAnswer::Cancel,
    };
    match (answer, &request.mode) {
        (ElicitationAnswer::Accept(content), ElicitationMode::Form(form)) => {
            match form.check(&content) {
                Ok(()) => ElicitResult::new(ElicitationAction::Accept)
                    .with_content(Value::Object(content)),
                Err(why) => {
                    tracing::warn!(
                        "MCP server \"{alias}\": the answer to its form does not fit it ({why}); sent as cancelled"
                    );
                    ElicitResult::new(ElicitationAction::Cancel)
                }
            }
        }
        (ElicitationAnswer::Accept(_), _) => ElicitResult::new(ElicitationAction::Accept),
        (ElicitationAnswer::Decline, _) => ElicitResult::new(ElicitationAction::Decline),
        (ElicitationAnswer::Cancel, _) => ElicitResult::new(ElicitationAction::Cancel),
    }
}

/// The wire request as ours; `Err` when it cannot be shown (a schema beyond the
/// restricted one, a URL that is neither `https` nor loopback `http`).
fn elicitation_of(alias: &str, params: ElicitRequestParams) -> Result<ElicitationRequest, String> {
    let (message, mode) = match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => {
            let schema = serde_json::to_value(&requested_schema)
                .map_err(|e| format!("its form cannot be read ({e})"))?;
            (message, ElicitationMode::Form(form_of(schema)?))
        }
        ElicitRequestParams::UrlElicitationParams {
            message,
            url,
            elicitation_id,
            ..
        } => {
            // What a browser would open: the URL as parsed (tabs and line breaks gone).
            let url = url_allowed(&url)?;
            (
                message,
                ElicitationMode::Url {
                    url,
                    elicitation_id,
                },
            )
        }
        _ => return Err("it asks in a mode toolbelt does not know".to_string()),
    };
    Ok(ElicitationRequest {
        server: alias.to_string(),
        message,
        mode,
    })
}

/// The fields of a restricted schema: a flat object of strings (perhaps with a format
/// or choices), numbers, booleans and lists of choices.
pub(crate) fn form_of(schema: Value) -> Result<Form, String> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields = Vec::new();
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            fields.push(FormField {
                name: name.clone(),
                title: text(property, "title"),
                description: text(property, "description"),
                required: required.contains(&name.as_str()),
                default: property.get("default").cloned(),
                kind: kind_of(name, property)?,
            });
        }
    }
    Ok(Form { fields, schema })
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

fn kind_of(name: &str, p: &Value) -> Result<FieldKind, String> {
    let number = |key: &str| p.get(key).and_then(Value::as_f64);
    let count = |key: &str| p.get(key).and_then(Value::as_u64);
    Ok(match p["type"].as_str() {
        Some("string") => match choices(p) {
            Some(options) => FieldKind::Choice(options),
            None => FieldKind::Text {
                format: text(p, "format"),
                min_length: count("minLength"),
                max_length: count("maxLength"),
            },
        },
        Some(kind @ ("number" | "integer")) => FieldKind::Number {
            integer: kind == "integer",
            minimum: number("minimum"),
            maximum: number("maximum"),
        },
        Some("boolean") => FieldKind::Boolean,
        Some("array") => match choices(&p["items"]) {
            Some(options) => FieldKind::Choices {
                options,
                min_items: count("minItems"),
                max_items: count("maxItems"),
            },
            None => return Err(format!("its field \"{name}\" is a list without choices")),
        },
        _ => {
            return Err(format!(
                "its field \"{name}\" has a type a form cannot hold"
            ));
        }
    })
}

/// `enum` (labels from `enumNames`), or `oneOf`/`anyOf` of `{const, title}`.
fn choices(p: &Value) -> Option<Vec<Choice>> {
    if let Some(values) = p["enum"].as_array() {
        let names = p["enumNames"].as_array();
        return values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let value = v.as_str()?.to_string();
                let label = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map_or_else(|| value.clone(), str::to_string);
                Some(Choice { value, label })
            })
            .collect();
    }
    let list = p["oneOf"].as_array().or(p["anyOf"].as_array())?;
    list.iter()
        .map(|o| {
            let value = o["const"].as_str()?.to_string();
            let label = text(o, "title").unwrap_or_else(|| value.clone());
            Some(Choice { value, label })
        })
        .collect()
}

/// Only `https`, or `http` to this machine: a URL the person is sent to must not be
/// readable or changeable on the way. The URL as parsed.
pub(crate) fn url_allowed(url: &str) -> Result<String, String> {
    let parsed = url::Url::parse(url).map_err(|_| format!("its URL {url:?} is not a URL"))?;
    let loopback = match parsed.host() {
        Some(url::Host::Domain(host)) => host.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match parsed.scheme() {
        "https" if parsed.host().is_some() => Ok(parsed.to_string()),
        "http" if loopback => Ok(parsed.to_string()),
        _ => Err(format!(
            "its URL {url} is neither https nor http to this machine"
        )),
    }
}

/// Answers `sampling/createMessage` of server `alias`.
pub(crate) async fn sample(
    alias: &str,
    policy: McpSampling,
    slot: &ServerAskSlot,
    params: CreateMessageRequestParams,
    cancel: &CancellationToken,
) -> Result<CreateMessageResult, ErrorData> {
    let refused = |why: &str| {
        let text =
            format!("toolbelt refused the sampling request of MCP server \"{alias}\": {why}");
        tracing::warn!("{text}");
        ErrorData::new(ErrorCode(-1), text, None)
    };
    if policy == McpSampling::Deny {
        return Err(refused("its settings say \"sampling\": \"deny\""));
    }
    let request = sampling_of(alias, params).map_err(|why: String| refused(&why))?;
    if policy == McpSampling::Ask {
        let Some(asker) = slot.asker() else {
            return Err(refused(
                "nobody can approve it in this run (\"sampling\": \"allow\" in the server's settings lets it run unasked)",
            ));
        };
        let approval = tokio::select! {
            approval = asker.approve_sampling(&request, cancel) => approval,
            () = cancel.cancelled() => Err("the request was cancelled".into()),
        };
        approval.map_err(|why| refused(why.message()))?;
    }
    let Some(sampler) = slot.sampler() else {
        return Err(refused("this run has no model"));
    };
    let reply = sampler
        .sample(&request, cancel)
        .await
        .map_err(|why| ErrorData::internal_error(format!("the model failed: {why}"), None))?;
    let stop = if reply.truncated {
        CreateMessageResult::STOP_REASON_END_MAX_TOKEN
    } else {
        CreateMessageResult::STOP_REASON_END_TURN
    };
    Ok(
        CreateMessageResult::new(SamplingMessage::assistant_text(reply.text), reply.model)
            .with_stop_reason(stop),
    )
}

/// The wire request as ours: text messages only (the model is offered no tools, so a
/// conversation with tool calls or results cannot go on), `maxTokens` capped.
fn sampling_of(alias: &str, params: CreateMessageRequestParams) -> Result<SamplingRequest, String> {
    let mut messages = Vec::new();
    for message in params.messages {
        let mut text = String::new();
        for block in message.content.into_vec() {
            match block {
                SamplingMessageContentBlock::Text(t) => text.push_str(&t.text),
                _ => {
                    return Err(
                        "it holds content other than text, which toolbelt does not sample"
                            .to_string(),
                    );
                }
            }
        }
        messages.push(SampledMessage {
            assistant: message.role == Role::Assistant,
            text,
        });
    }
    if messages.is_empty() {
        return Err("it has no messages".to_string());
    }
    Ok(SamplingRequest {
        server: alias.to_string(),
        system_prompt: params.system_prompt.filter(|s| !s.trim().is_empty()),
        messages,
        max_tokens: params.max_tokens.clamp(1, SAMPLING_MAX_TOKENS),
        temperature: params.temperature,
    })
}

#[cfg(test)]
mod tests;
