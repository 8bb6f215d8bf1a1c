//! The SDKs' `initialize.hooks`: hooks that are callbacks in the program driving
//! toolbelt over stream-JSON.
//!
//! Two shapes, one per SDK family:
//!
//! - Claude's Agent SDK: the settings' shape with `hookCallbackIds` for `hooks`,
//!   `{"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0"], "timeout": 30,
//!   "onFailure": "block"}]}` (`timeout` in seconds for every callback of the group).
//! - Qwen's (`@qwen-code/sdk`'s `HookRegistration[]`): a list of `{"event":
//!   "PreToolUse", "callback_id": "h1"}`, each with an optional `matcher` and `timeout`.
//!   The SDK declares the shape but sends `hooks: null` (0.1.14), and Qwen Code answers
//!   `can_handle_hook_callback: false`; a client speaking the protocol itself may send it.
//!
//! The list becomes the object shape, so both are read by the settings' reader
//! (matchers with aliases, events, errors naming the entry).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{CALLBACK_TIMEOUT, ConfigError, Executor, Hook, HookOrigin, label, timeout_of};

/// Fields Claude's SDK (0.3) sends with every callback group that its documentation
/// does not describe; toolbelt leaves them alone (a debug line names them).
const IGNORED_GROUP_FIELDS: &[&str] = &["contextOnly", "replacedByFrame", "whenUnanswered"];

/// `initialize.hooks` in the object shape: Claude's as it is, Qwen's list turned into
/// it. `Err` names each bad entry.
pub(crate) fn object_shape(hooks: &Value) -> Result<Value, Vec<ConfigError>> {
    let Value::Array(list) = hooks else {
        return Ok(hooks.clone());
    };
    let error = |key: String, message: &str| ConfigError {
        origin: HookOrigin::Sdk,
        key,
        message: message.to_string(),
    };
    let mut events = Map::new();
    let mut errors = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        let key = format!("hooks[{i}]");
        let Some(entry) = entry.as_object() else {
            errors.push(error(
                key,
                "must be an object with \"event\" and \"callback_id\"",
            ));
            continue;
        };
        let Some(event) = entry.get("event").and_then(Value::as_str) else {
            errors.push(error(format!("{key}.event"), "must be a hook event's name"));
            continue;
        };
        let Some(id) = entry.get("callback_id").filter(|id| id.is_string()) else {
            errors.push(error(
                format!("{key}.callback_id"),
                "must be a string (the callback's id)",
            ));
            continue;
        };
        let mut group = json!({"hookCallbackIds": [id]});
        for field in ["matcher", "timeout"] {
            if let Some(value) = entry.get(field) {
                group[field] = value.clone();
            }
        }
        let groups = events.entry(event).or_insert_with(|| json!([]));
        if let Value::Array(groups) = groups {
            groups.push(group);
        }
    }
    if errors.is_empty() {
        Ok(Value::Object(events))
    } else {
        Err(errors)
    }
}

/// The `hookCallbackIds` of an SDK group, with its `timeout` and `onFailure`.
pub(super) fn callback_hooks(
    group: &Map<String, Value>,
    key: &str,
    origin: &Arc<HookOrigin>,
) -> Result<Vec<Hook>, Vec<ConfigError>> {
    let error = |key: String, message: &str| {
        vec![ConfigError {
            origin: (**origin).clone(),
            key,
            message: message.to_string(),
        }]
    };
    let timeout = timeout_of(group.get("timeout"), CALLBACK_TIMEOUT, false);
    let block_on_failure = match group.get("onFailure") {
        None | Some(Value::Null) => false,
        Some(Value::String(word)) if word == "continue" => false,
        Some(Value::String(word)) if word == "block" => true,
        Some(_) => {
            return Err(error(
                format!("{key}.onFailure"),
                "must be \"continue\" or \"block\"",
            ));
        }
    };
    for field in IGNORED_GROUP_FIELDS {
        if group.get(*field).is_some_and(|v| !v.is_null()) {
            tracing::debug!("{key}.{field} is not used by toolbelt");
        }
    }
    let Some(ids) = group.get("hookCallbackIds").and_then(Value::as_array) else {
        return Err(error(
            format!("{key}.hookCallbackIds"),
            "must be a list of callback ids",
        ));
    };
    let mut hooks = Vec::new();
    for (j, id) in ids.iter().enumerate() {
        let Some(id) = id
            .as_str()
            .filter(|s| !s.is_empty() && s.len() <= MAX_ID_BYTES)
        else {
            return Err(error(
                format!("{key}.hookCallbackIds[{j}]"),
                &format!("must be a non-empty string of at most {MAX_ID_BYTES} bytes"),
            ));
        };
        let executor = Executor::Callback {
            id: id.to_string(),
            timeout,
            block_on_failure,
        };
        hooks.push(Hook {
            name: None,
            label: label(None, &executor, origin),
            executor,
        });
    }
    Ok(hooks)
}

/// The longest callback id taken (the SDKs' are `hook_0`, `hook_1`, ...); an id is
/// written into every `hook_callback` request and every message naming the hook.
const MAX_ID_BYTES: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qwens_list_becomes_the_object_shape_in_order() {
        let list = json!([
            {"event": "PreToolUse", "callback_id": "h1", "matcher": "Bash"},
            {"event": "Stop", "callback_id": "h2"},
            {"event": "PreToolUse", "callback_id": "h3", "timeout": 5},
        ]);
        assert_eq!(
            object_shape(&list).unwrap(),
            json!({
                "PreToolUse": [
                    {"hookCallbackIds": ["h1"], "matcher": "Bash"},
                    {"hookCallbackIds": ["h3"], "timeout": 5},
                ],
                "Stop": [{"hookCallbackIds": ["h2"]}],
            })
        );
        let claude = json!({"PreToolUse": [{"hookCallbackIds": ["hook_0"]}]});
        assert_eq!(object_shape(&claude).unwrap(), claude);
    }

    #[test]
    fn a_bad_list_entry_is_named() {
        let errors = object_shape(&json!([
            "PreToolUse",
            {"event": 3, "callback_id": "h"},
            {"event": "Stop", "callback_id": 7},
        ]))
        .unwrap_err();
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "the SDK's initialize request: hooks[0]: must be an object with \"event\" and \"callback_id\"",
                "the SDK's initialize request: hooks[1].event: must be a hook event's name",
                "the SDK's initialize request: hooks[2].callback_id: must be a string (the callback's id)",
            ]
        );
    }
}
