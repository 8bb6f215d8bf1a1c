//! Gemini request bodies: `contents` of `user` and `model` turns made of parts,
//! `systemInstruction`, `tools[].functionDeclarations`, `toolConfig`.
//!
//! Tool results are `functionResponse` parts of a `user` turn, named after their call
//! (Gemini matches a response to its call by id and name; `Message::Tool` carries only
//! the id, so the name is looked up in the assistant message that made the call).
//! Consecutive messages of one role are joined into one turn, as Gemini expects turns to
//! alternate.
//!
//! A result is `{"output": text}`, or `{"error": text}` when the call failed (the two
//! keys the API documents for a function's response). Images a tool returned go as
//! `inlineData` parts of the same user turn, after all of its `functionResponse` parts
//! (each named in its result's text): Gemini 3 also takes `parts` inside a
//! `functionResponse`, but older models do not, and inline data in the turn that
//! answers the calls is read by all of them.
//!
//! What an answer keeps for later requests (its one [`crate::OpaquePart`] of format
//! `gemini`) is
//! `{"calls": {id: signature}, "text": signature, "generated": [id]}`: the thought
//! signature of each `functionCall` part by call id, the one of a text part, and the call
//! ids this client made up because the server sent none (they are not sent back, so the
//! server sees exactly what it sent).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use super::{FORMAT, schema};
use crate::{Message, ModelRequest, OpaquePart, Sampling, ToolCall, ToolImage, UserPart};

/// The request body.
pub(crate) fn request_body(request: &ModelRequest, sampling: &Sampling) -> Value {
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::System(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let mut body = json!({ "contents": contents(&request.messages) });
    if !system.is_empty() {
        body["systemInstruction"] = json!({"parts": [{"text": system.join("\n\n")}]});
    }
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "parameters": schema::compliant(&t.parameters),
                })
            })
            .collect();
        body["tools"] = json!([{ "functionDeclarations": declarations }]);
        if let Some(name) = &request.tool_choice {
            body["toolConfig"] = json!({"functionCallingConfig": {
                "mode": "ANY", "allowedFunctionNames": [name]
            }});
        }
    }
    if let Some(config) = generation_config(sampling) {
        body["generationConfig"] = config;
    }
    body
}

/// `generationConfig` with the sampling settings that are set, in Gemini's camelCase
/// names; `None` when none is, so the server's defaults stay.
fn generation_config(sampling: &Sampling) -> Option<Value> {
    let fields = [
        ("temperature", sampling.temperature.map(Value::from)),
        ("topP", sampling.top_p.map(Value::from)),
        ("topK", sampling.top_k.map(Value::from)),
        ("maxOutputTokens", sampling.max_tokens.map(Value::from)),
        (
            "presencePenalty",
            sampling.presence_penalty.map(Value::from),
        ),
        (
            "frequencyPenalty",
            sampling.frequency_penalty.map(Value::from),
        ),
    ];
    let config: Map<String, Value> = fields
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), v?)))
        .collect();
    (!config.is_empty()).then_some(Value::Object(config))
}

fn contents(messages: &[Message]) -> Vec<Value> {
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    // Call id -> (name, whether the id was made up here), for the results.
    let mut calls: std::collections::HashMap<&str, (&str, bool)> = Default::default();
    for m in messages {
        let (role, parts) = match m {
            Message::System(_) => continue,
            Message::User(parts) => ("user", parts.iter().map(user_part).collect()),
            Message::Assistant {
                text,
                tool_calls,
                reasoning,
            } => {
                let state = OpaquePart::of_format(reasoning, FORMAT);
                for c in tool_calls {
                    calls.insert(&c.id, (&c.name, generated(state, &c.id)));
                }
                ("model", model_parts(text, tool_calls, state))
            }
            Message::Tool {
                call_id,
                text,
                is_error,
                images,
            } => {
                let (name, made_up) = calls.get(call_id.as_str()).copied().unwrap_or(("", false));
                (
                    "user",
                    result_parts(call_id, name, made_up, text, *is_error, images),
                )
            }
        };
        if parts.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(parts),
            _ => turns.push((role, parts)),
        }
    }
    turns
        .into_iter()
        .map(|(role, mut parts)| {
            // The results first, then what follows them (their images, any text).
            if role == "user" {
                parts.sort_by_key(|p| p.get("functionResponse").is_none());
            }
            json!({"role": role, "parts": parts})
        })
        .collect()
}

/// One result's parts: its `functionResponse`, then its images as `inlineData`.
fn result_parts(
    call_id: &str,
    name: &str,
    made_up: bool,
    text: &str,
    is_error: bool,
    images: &[ToolImage],
) -> Vec<Value> {
    let mut text = text.to_string();
    for image in images {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!(
            "[{} attached after the function responses]",
            image.mime_type
        ));
    }
    let key = if is_error { "error" } else { "output" };
    let mut response = json!({"name": name, "response": { key: text }});
    if !made_up {
        response["id"] = json!(call_id);
    }
    let mut parts = vec![json!({ "functionResponse": response })];
    parts.extend(images.iter().map(
        |i| json!({"inlineData": {"mimeType": i.mime_type, "data": STANDARD.encode(&i.data)}}),
    ));
    parts
}

fn user_part(part: &UserPart) -> Value {
    match part {
        UserPart::Text(text) => json!({ "text": text }),
        UserPart::Image { mime_type, data } => json!({
            "inlineData": {"mimeType": mime_type, "data": STANDARD.encode(data)}
        }),
    }
}

/// An answer's parts: its text, then its calls, each with the signature it came with.
fn model_parts(text: &str, tool_calls: &[ToolCall], state: Option<&Value>) -> Vec<Value> {
    let signature = |key: &str| state.and_then(|s| s.pointer(key)).cloned();
    let mut parts = Vec::new();
    let text_signature = signature("/text");
    if !text.is_empty() || text_signature.is_some() {
        let mut part = json!({ "text": text });
        if let Some(s) = text_signature {
            part["thoughtSignature"] = s;
        }
        parts.push(part);
    }
    for c in tool_calls {
        let args: Value = match serde_json::from_str::<Value>(&c.arguments) {
            Ok(v @ Value::Object(_)) => v,
            // Gemini's arguments are an object; text that is not one came from elsewhere
            // (another format before a switch of model) and is kept whole.
            _ if c.arguments.trim().is_empty() => json!({}),
            _ => json!({ "arguments": c.arguments }),
        };
        let mut call = Map::new();
        if !generated(state, &c.id) {
            call.insert("id".into(), json!(c.id));
        }
        call.insert("name".into(), json!(c.name));
        call.insert("args".into(), args);
        let mut part = json!({ "functionCall": call });
        let key = format!("/calls/{}", c.id.replace('~', "~0").replace('/', "~1"));
        if let Some(s) = signature(&key) {
            part["thoughtSignature"] = s;
        }
        parts.push(part);
    }
    parts
}

/// Whether this client made up call `id` (the server sent none).
fn generated(state: Option<&Value>, id: &str) -> bool {
    state
        .and_then(|s| s.get("generated"))
        .and_then(Value::as_array)
        .is_some_and(|ids| ids.iter().any(|g| g.as_str() == Some(id)))
}
