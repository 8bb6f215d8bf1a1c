//! One matcher group's own fields and one hook entry, read with serde derive.
//!
//! `serde_path_to_error` names the field that did not fit, and the message says what that
//! field accepts in the settings' own words (`"env" must be an object of strings`), not in
//! serde's (`invalid type: integer 1, expected a string`). Unknown fields are left alone:
//! the files are shared with Qwen Code and Claude Code, whose hooks carry fields toolbelt
//! does not use (`statusMessage`, `async`).

use std::fmt;

use serde::de::{Deserialize, DeserializeOwned, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use super::{
    COMMAND_TIMEOUT, CommandHook, Executor, HTTP_TIMEOUT, HttpHook, OTHER_TOOLS_TYPES, quoted,
    timeout_of,
};

/// A group's `matcher` and `sequential` (its hooks are read apart: a settings group
/// lists `hooks`, an SDK group `hookCallbackIds`).
#[derive(serde::Deserialize)]
pub(super) struct GroupFields {
    #[serde(default)]
    pub matcher: Option<String>,
    #[serde(default)]
    pub sequential: Option<bool>,
}

/// What every entry has, read before the fields of its type: another tool's type is
/// skipped whatever its own fields hold.
#[derive(serde::Deserialize)]
struct Kind {
    #[serde(default)]
    name: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
}

#[derive(serde::Deserialize)]
struct CommandFields {
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Option<Vec<String>>,
    /// Any value: one that is not a string means the default shell, as in Qwen Code.
    #[serde(default)]
    shell: Option<Value>,
    #[serde(default)]
    env: Option<StringPairs>,
    /// Any value: one that is not a positive number means the default time limit.
    #[serde(default)]
    timeout: Option<Value>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct HttpFields {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: Option<StringPairs>,
    #[serde(default)]
    allowed_env_vars: Option<Vec<String>>,
    #[serde(default)]
    timeout: Option<Value>,
}

/// An object of strings, in the order written (headers are sent in it).
struct StringPairs(Vec<(String, String)>);

impl<'de> Deserialize<'de> for StringPairs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = StringPairs;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StringPairs, A::Error> {
                let mut pairs = Vec::new();
                while let Some(pair) = map.next_entry::<String, String>()? {
                    pairs.push(pair);
                }
                Ok(StringPairs(pairs))
            }
        }
        deserializer.deserialize_map(Pairs)
    }
}

/// What a field accepts, for the field (its first path segment) that did not fit.
fn accepted(field: &str) -> Option<&'static str> {
    Some(match field {
        "matcher" => {
            "must be a string (a tool name, a list such as \"Edit|Write\", or a regular expression)"
        }
        "sequential" => "must be true or false",
        "name" => "\"name\" must be a string",
        "type" => "\"type\" must be a string: command or http",
        "command" => "\"command\" must be a string",
        "args" => "\"args\" must be a list of strings (the command then runs without a shell)",
        "env" => "\"env\" must be an object of strings",
        "url" => "\"url\" must be a string",
        "headers" => "\"headers\" must be an object of strings",
        "allowedEnvVars" => "\"allowedEnvVars\" must be a list of strings",
        _ => return None,
    })
}

/// `value` read as `T`; `Err` is the field that did not fit and what it accepts.
pub(super) fn read<T: DeserializeOwned>(value: &Value) -> Result<T, (String, String)> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().iter().next().map(ToString::to_string);
        let field = field.unwrap_or_default();
        let message = match accepted(&field) {
            Some(message) => message.to_string(),
            None => format!("{}: {}", quoted(&e.path().to_string()), e.inner()),
        };
        (field, message)
    })
}

/// One hook entry: its name and executor; `None` for a type of another tool's.
pub(super) fn parse_hook(entry: &Value) -> Result<Option<(Option<String>, Executor)>, String> {
    if !entry.is_object() {
        return Err("must be an object with \"type\" and \"command\" or \"url\"".into());
    }
    let Kind { name, kind } = read(entry).map_err(|(_, message)| message)?;
    let name = name.map(|n| n.trim().to_string()).filter(|n| !n.is_empty());
    let executor = match kind.as_deref() {
        None => return Err("\"type\" is missing (command or http)".into()),
        Some("command") => Executor::Command(command_hook(entry)?),
        Some("http") => Executor::Http(http_hook(entry)?),
        Some(other) if OTHER_TOOLS_TYPES.contains(&other) => return Ok(None),
        Some(other) => {
            return Err(format!(
                "\"type\": {} is no hook type; accepted: command, http",
                quoted(other)
            ));
        }
    };
    Ok(Some((name, executor)))
}

fn command_hook(entry: &Value) -> Result<CommandHook, String> {
    let fields: CommandFields = read(entry).map_err(|(_, message)| message)?;
    let command = match fields.command {
        None => return Err("\"command\" is missing".into()),
        Some(c) if c.trim().is_empty() => return Err("\"command\" is empty".into()),
        Some(c) => c,
    };
    let shell = match fields.shell.as_ref().and_then(Value::as_str).map(str::trim) {
        None | Some("" | "bash") => "bash",
        Some("sh") => "sh",
        Some(other) => {
            return Err(format!(
                "\"shell\": {} is not available here; accepted: bash, sh",
                quoted(other)
            ));
        }
    };
    Ok(CommandHook {
        command,
        args: fields.args,
        shell,
        env: fields.env.map(|p| p.0).unwrap_or_default(),
        timeout: timeout_of(fields.timeout.as_ref(), COMMAND_TIMEOUT, true),
    })
}

fn http_hook(entry: &Value) -> Result<HttpHook, String> {
    let fields: HttpFields = read(entry).map_err(|(_, message)| message)?;
    let Some(url) = fields.url.map(|u| u.trim().to_string()) else {
        return Err("\"url\" is missing".into());
    };
    // Checked as written; `${VAR}` parts are checked again once expanded.
    let probe = url.replace("${", "").replace(['}', '$'], "");
    match reqwest::Url::parse(&probe) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => {}
        Ok(u) => {
            return Err(format!(
                "\"url\": {} is not an http or https URL ({}:)",
                quoted(&url),
                u.scheme()
            ));
        }
        Err(e) => return Err(format!("\"url\": {} is not a URL: {e}", quoted(&url))),
    }
    Ok(HttpHook {
        url,
        headers: fields.headers.map(|p| p.0).unwrap_or_default(),
        allowed_env_vars: fields.allowed_env_vars.unwrap_or_default(),
        timeout: timeout_of(fields.timeout.as_ref(), HTTP_TIMEOUT, false),
    })
}
