//! Claude Code settings handed to a session (`--settings`, `--managed-settings`, an SDK's
//! `initialize`): toolbelt reads their `permissions`, allow, deny and ask rules in
//! Claude's tool names (`Bash(npm test:*)`, `Read(./secrets/**)`) or toolbelt's, which the
//! rule parser knows both of. Their other keys (`env`, `hooks`, `model`, `sandbox`, ...)
//! name things toolbelt has under other names or not at all; they are listed so the
//! session can say they were ignored. A setting that cannot be read is an error: a
//! deny rule silently lost would run the session under weaker rules than the ones given.

use serde_json::Value;
use toolbelt_engine::rules::RuleList;

/// The largest settings file read.
const MAX_BYTES: u64 = 1 << 20;

/// What a session takes from one Claude settings object.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ClaudeSettings {
    /// The permission rules, in the order given.
    pub(crate) rules: Vec<(RuleList, String)>,
    /// The keys that were not read (`env`, `permissions.defaultMode`, ...).
    pub(crate) ignored_keys: Vec<String>,
}

/// Reads `source`: a JSON object, or the path of a file holding one.
pub(crate) fn read(source: &str) -> Result<ClaudeSettings, String> {
    let text = if source.trim_start().starts_with('{') {
        source.to_string()
    } else {
        read_file(source)?
    };
    let value: Value =
        serde_json::from_str(&text).map_err(|e| format!("Claude settings: not JSON ({e})"))?;
    let Value::Object(object) = value else {
        return Err("Claude settings: not a JSON object".to_string());
    };
    let mut read = ClaudeSettings::default();
    for (key, value) in &object {
        if key == "permissions" {
            permissions(value, &mut read)?;
        } else {
            read.ignored_keys.push(key.clone());
        }
    }
    Ok(read)
}

fn read_file(path: &str) -> Result<String, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("Claude settings: cannot read {path}: {e}"))?;
    let mut text = String::new();
    use std::io::Read;
    file.take(MAX_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("Claude settings: cannot read {path}: {e}"))?;
    if text.len() as u64 > MAX_BYTES {
        return Err(format!(
            "Claude settings: {path} is larger than {MAX_BYTES} bytes"
        ));
    }
    Ok(text)
}

/// `permissions`: the `allow`, `deny` and `ask` lists of rule strings.
fn permissions(value: &Value, read: &mut ClaudeSettings) -> Result<(), String> {
    let Value::Object(lists) = value else {
        return Err("Claude settings: `permissions` is not an object".to_string());
    };
    for (key, value) in lists {
        let list = match key.as_str() {
            "allow" => RuleList::Allow,
            "deny" => RuleList::Deny,
            "ask" => RuleList::Ask,
            _ => {
                read.ignored_keys.push(format!("permissions.{key}"));
                continue;
            }
        };
        for rule in rule_strings(key, value)? {
            read.rules.push((list, rule));
        }
    }
    Ok(())
}

fn rule_strings(key: &str, value: &Value) -> Result<Vec<String>, String> {
    let not_a_list = || format!("Claude settings: `permissions.{key}` is not a list of rules");
    let Value::Array(items) = value else {
        return Err(not_a_list());
    };
    items
        .iter()
        .map(|item| item.as_str().map(str::to_string).ok_or_else(not_a_list))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_become_rules_and_other_keys_are_named() {
        let read = read(
            r#"{"permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./secrets/**)", "WebFetch"],
                "ask": ["Edit"], "defaultMode": "plan"}, "env": {"A": "1"}}"#,
        )
        .unwrap();
        let mut rules = read.rules.clone();
        rules.sort_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(
            rules,
            vec![
                (RuleList::Allow, "Bash(npm test:*)".to_string()),
                (RuleList::Ask, "Edit".to_string()),
                (RuleList::Deny, "Read(./secrets/**)".to_string()),
                (RuleList::Deny, "WebFetch".to_string()),
            ]
        );
        let mut ignored = read.ignored_keys.clone();
        ignored.sort();
        assert_eq!(ignored, ["env", "permissions.defaultMode"]);
    }

    #[test]
    fn a_file_is_read_and_bad_settings_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, r#"{"permissions": {"deny": ["Bash"]}}"#).unwrap();
        let read = read(path.to_str().unwrap()).unwrap();
        assert_eq!(read.rules, vec![(RuleList::Deny, "Bash".to_string())]);
        for bad in [
            "{not json",
            "[1]",
            r#"{"permissions": []}"#,
            r#"{"permissions": {"deny": "Bash"}}"#,
            r#"{"permissions": {"deny": [1]}}"#,
            "/no/such/settings.json",
        ] {
            let err = super::read(bad).unwrap_err();
            assert!(err.starts_with("Claude settings:"), "{bad}: {err}");
        }
    }
}
