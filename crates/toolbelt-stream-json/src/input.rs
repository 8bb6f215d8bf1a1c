//! One line of `--input-format stream-json`, parsed.
//!
//! A line is one JSON object: a `user` message (text, or content blocks with text and
//! base64 images), a `control_request` from the client, a `control_response` to one of
//! ours, or a `control_cancel_request`. Messages the protocol allows but that carry
//! nothing for us (`system`, `assistant` echoes, `keep_alive`) are [`Inbound::Ignored`].
//! Anything else is an error that names the problem; the caller reports it and reads the
//! next line, so one bad line never ends the session.

use base64::Engine;
use serde_json::Value;
use toolbelt_model::UserPart;

use crate::control::ControlError;

/// The longest line read; a longer one is skipped with an error (a client's runaway
/// must not take the memory).
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// One message from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// A user turn. `written` is its text, where `#references` are looked for.
    User {
        /// What the model is sent: text and images.
        parts: Vec<UserPart>,
        /// The text the person wrote.
        written: String,
        /// The client's ID of the message (`uuid`), which `rewind_files` names.
        uuid: Option<String>,
    },
    /// The client asks something (`initialize`, `interrupt`, ...).
    ControlRequest {
        /// The ID the answer names.
        request_id: String,
        /// What is asked (`initialize`, `interrupt`, ...).
        subtype: String,
        /// The whole request.
        request: Value,
    },
    /// The client answers one of our requests: `Ok(response)` or its error.
    ControlResponse {
        /// The ID of our request.
        request_id: String,
        /// The answer.
        outcome: Result<Value, ControlError>,
    },
    /// The client withdraws a request of its own.
    ControlCancel {
        /// The ID of the withdrawn request.
        request_id: Option<String>,
    },
    /// A message of the protocol that needs no action (its type).
    Ignored(String),
}

/// Why [`parse_line`] refused a line (answered to the client, which goes on).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The line is not JSON.
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// The line is JSON but not an object.
    #[error("a line must be a JSON object")]
    NotObject,
    /// The object has no `type`.
    #[error("the object has no \"type\" string")]
    NoType,
    /// A `type` this protocol does not have.
    #[error(
        "unknown message type {0:?} (expected user, control_request, control_response or control_cancel_request)"
    )]
    UnknownType(String),
    /// A message of a known type whose fields are wrong; what is wrong.
    #[error("{0}")]
    BadMessage(String),
}

/// Parses one line; `Ok(None)` for a blank one.
pub fn parse_line(line: &str) -> Result<Option<Inbound>, InputError> {
    let line = line.trim();
    if line.is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(line).map_err(InputError::NotJson)?;
    let Value::Object(map) = &value else {
        return Err(InputError::NotObject);
    };
    let kind = map
        .get("type")
        .and_then(Value::as_str)
        .ok_or(InputError::NoType)?;
    match kind {
        "user" | "control_request" | "control_response" => message(kind, &value, map)
            .map(Some)
            .map_err(InputError::BadMessage),
        "control_cancel_request" => Ok(Some(Inbound::ControlCancel {
            request_id: id_of(map.get("request_id")),
        })),
        "system" | "assistant" | "result" | "stream_event" | "keep_alive" => {
            Ok(Some(Inbound::Ignored(kind.to_string())))
        }
        other => Err(InputError::UnknownType(other.to_string())),
    }
}

/// A `user`, `control_request` or `control_response` message, or what is wrong with it.
fn message(
    kind: &str,
    value: &Value,
    map: &serde_json::Map<String, Value>,
) -> Result<Inbound, String> {
    match kind {
        "user" => user(value),
        "control_request" => {
            let request_id = id_of(map.get("request_id"))
                .ok_or("a control_request needs a \"request_id\" (string or number)".to_string())?;
            let request = map
                .get("request")
                .filter(|r| r.is_object())
                .cloned()
                .ok_or("a control_request needs a \"request\" object")?;
            let subtype = request
                .get("subtype")
                .and_then(Value::as_str)
                .ok_or("the control request has no \"subtype\" string")?
                .to_string();
            Ok(Inbound::ControlRequest {
                request_id,
                subtype,
                request,
            })
        }
        _ => {
            let response = map
                .get("response")
                .filter(|r| r.is_object())
                .ok_or("a control_response needs a \"response\" object")?;
            let request_id = id_of(response.get("request_id"))
                .ok_or("the control response has no \"request_id\"")?;
            let outcome = match response.get("subtype").and_then(Value::as_str) {
                Some("success") => Ok(response.get("response").cloned().unwrap_or(Value::Null)),
                Some("error") => Err(ControlError::Client(match response.get("error") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Object(e)) => e
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("the client reported an error")
                        .to_string(),
                    _ => "the client reported an error".to_string(),
                })),
                _ => {
                    return Err(
                        "the control response's \"subtype\" must be \"success\" or \"error\""
                            .to_string(),
                    );
                }
            };
            Ok(Inbound::ControlResponse {
                request_id,
                outcome,
            })
        }
    }
}

/// A request id: a string, or a number taken as its decimal text.
fn id_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn user(value: &Value) -> Result<Inbound, String> {
    let content = value
        .get("message")
        .and_then(|m| m.get("content"))
        .ok_or("a user message needs \"message\": {\"role\": \"user\", \"content\": ...}")?;
    let mut parts = Vec::new();
    let mut texts = Vec::new();
    match content {
        Value::String(text) => {
            texts.push(text.clone());
            parts.push(UserPart::Text(text.clone()));
        }
        Value::Array(blocks) => {
            for (i, block) in blocks.iter().enumerate() {
                let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
                match kind {
                    "text" => {
                        let text = block
                            .get("text")
                            .and_then(Value::as_str)
                            .ok_or(format!("content block {i}: a text block needs \"text\""))?;
                        texts.push(text.to_string());
                        parts.push(UserPart::Text(text.to_string()));
                    }
                    "image" => {
                        parts.push(image(block).map_err(|e| format!("content block {i}: {e}"))?)
                    }
                    other => {
                        return Err(format!(
                            "content block {i}: unsupported type {other:?} (text and image are)"
                        ));
                    }
                }
            }
        }
        _ => return Err("\"content\" must be a string or an array of content blocks".to_string()),
    }
    if parts.is_empty() {
        return Err("the user message is empty".to_string());
    }
    let uuid = value
        .get("uuid")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty() && u.len() <= 200)
        .map(str::to_string);
    Ok(Inbound::User {
        parts,
        written: texts.join("\n"),
        uuid,
    })
}

/// `{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ...}}`.
fn image(block: &Value) -> Result<UserPart, String> {
    let source = block
        .get("source")
        .ok_or("an image block needs \"source\"")?;
    if source.get("type").and_then(Value::as_str) != Some("base64") {
        return Err("only base64 image sources are supported".to_string());
    }
    let mime_type = source
        .get("media_type")
        .and_then(Value::as_str)
        .filter(|m| m.starts_with("image/"))
        .ok_or("an image source needs an image/* \"media_type\"")?;
    let data = source
        .get("data")
        .and_then(Value::as_str)
        .ok_or("an image source needs \"data\"")?;
    let data = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("the image data is not base64: {e}"))?;
    Ok(UserPart::Image {
        mime_type: mime_type.to_string(),
        data,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    #[test]
    fn user_text_and_blocks() {
        let got = parse_line(
            r#"{"type":"user","session_id":"s","message":{"role":"user","content":"hi #x"},"parent_tool_use_id":null}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            got,
            Inbound::User {
                parts: vec![UserPart::Text("hi #x".into())],
                written: "hi #x".into(),
                uuid: None,
            }
        );
        let line = json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
        ]}})
        .to_string();
        let Some(Inbound::User { parts, written, .. }) = parse_line(&line).unwrap() else {
            panic!("not a user message");
        };
        assert_eq!(written, "look");
        assert!(
            matches!(&parts[1], UserPart::Image { mime_type, data } if mime_type == "image/png" && data.len() == 4)
        );
    }

    #[test]
    fn control_messages() {
        let got = parse_line(
            r#"{"type":"control_request","request_id":"r1","request":{"subtype":"interrupt"}}"#,
        )
        .unwrap()
        .unwrap();
        assert!(
            matches!(got, Inbound::ControlRequest { ref request_id, ref subtype, .. } if request_id == "r1" && subtype == "interrupt")
        );
        let got = parse_line(r#"{"type":"control_response","response":{"subtype":"error","request_id":7,"error":{"message":"nope"}}}"#)
            .unwrap()
            .unwrap();
        assert_eq!(
            got,
            Inbound::ControlResponse {
                request_id: "7".into(),
                outcome: Err(ControlError::Client("nope".into()))
            }
        );
        assert_eq!(parse_line("  ").unwrap(), None);
    }

    #[test]
    fn bad_lines_say_why() {
        for (line, says) in [
            ("not json", "not JSON"),
            ("[1]", "JSON object"),
            (r#"{"type":"bogus"}"#, "unknown message type"),
            (
                r#"{"type":"user","message":{"content":[{"type":"video"}]}}"#,
                "unsupported type",
            ),
            (
                r#"{"type":"control_request","request":{"subtype":"x"}}"#,
                "request_id",
            ),
            (r#"{"type":"user","message":{"content":[]}}"#, "empty"),
        ] {
            let err = parse_line(line).unwrap_err().to_string();
            assert!(err.contains(says), "{line}: {err}");
        }
    }

    #[test]
    fn a_refused_line_says_its_cause() {
        assert!(matches!(parse_line("{oops"), Err(InputError::NotJson(_))));
        assert!(matches!(parse_line("[1]"), Err(InputError::NotObject)));
        assert!(matches!(parse_line("{}"), Err(InputError::NoType)));
        assert!(matches!(
            parse_line(r#"{"type":"telegram"}"#),
            Err(InputError::UnknownType(t)) if t == "telegram"
        ));
        assert!(matches!(
            parse_line(r#"{"type":"control_request"}"#),
            Err(InputError::BadMessage(_))
        ));
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            ".{0,12}".prop_map(Value::String),
            prop_oneof![
                Just("user"),
                Just("control_request"),
                Just("control_response"),
                Just("text"),
                Just("image"),
                Just("success"),
                Just("error")
            ]
            .prop_map(|s| Value::String(s.to_string())),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        prop_oneof![
                            Just("type".to_string()),
                            Just("message".to_string()),
                            Just("content".to_string()),
                            Just("request".to_string()),
                            Just("request_id".to_string()),
                            Just("subtype".to_string()),
                            Just("response".to_string()),
                            Just("source".to_string()),
                            Just("data".to_string()),
                            ".{0,6}"
                        ],
                        inner
                    ),
                    0..5
                )
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Any text: an answer or an error, never a panic.
        #[test]
        fn any_text_is_parsed_or_refused(line in ".{0,200}") {
            let _ = parse_line(&line);
        }

        /// JSON shaped like the protocol, in any combination.
        #[test]
        fn any_protocol_shaped_json_is_parsed_or_refused(v in json_value()) {
            let _ = parse_line(&v.to_string());
        }

        /// Every well-formed text message comes back as written.
        #[test]
        fn text_messages_round_trip(text in ".{1,80}") {
            let line = json!({"type": "user", "message": {"role": "user", "content": text}}).to_string();
            let parsed = parse_line(&line).map_err(|e| e.to_string());
            prop_assert_eq!(parsed, Ok(Some(Inbound::User { parts: vec![UserPart::Text(text.clone())], written: text, uuid: None })));
        }
    }
}
