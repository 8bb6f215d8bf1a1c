//! The context keys a session offers to when-clauses.
//!
//! `isLinux`, `isMac`, `isWindows`, `approvalMode` (`default`, `auto-edit`, `yolo`,
//! `plan`), `workspaceFolderCount`, `gitRepository` (the primary root is inside a Git
//! work tree), `config.<path>` for every value of the merged settings
//! (`config.tools.sandbox`), `env.<NAME>` for the variables listed in `context.envKeys`
//! (none otherwise: a manifest must not learn the environment by probing it), and the
//! keys of `context.keys`, which win over the built-in ones.

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use crate::ApprovalMode;
use crate::settings::Settings;

/// The session's context keys, ready for [`super::Expr::evaluate`].
pub fn session_context(
    settings: &Settings,
    roots: &[PathBuf],
    mode: ApprovalMode,
) -> Map<String, Value> {
    let git = roots
        .first()
        .is_some_and(|root| root.ancestors().any(|dir| dir.join(".git").exists()));
    let mut keys = Map::new();
    keys.insert("isLinux".into(), json!(cfg!(target_os = "linux")));
    keys.insert("isMac".into(), json!(cfg!(target_os = "macos")));
    keys.insert("isWindows".into(), json!(cfg!(windows)));
    keys.insert("approvalMode".into(), json!(mode.to_string()));
    keys.insert("workspaceFolderCount".into(), json!(roots.len()));
    keys.insert("gitRepository".into(), json!(git));
    flatten_config("config", &settings.raw, &mut keys);
    for name in &settings.context.env_keys {
        if let Some(value) = std::env::var_os(name) {
            keys.insert(
                format!("env.{name}"),
                Value::String(value.to_string_lossy().into_owned()),
            );
        }
    }
    for (key, value) in &settings.context.keys {
        keys.insert(key.clone(), value.clone());
    }
    keys
}

/// `config.a.b` for every object member at any depth (objects too, so `config.tools`
/// is truthy when the settings have a `tools` object).
fn flatten_config(prefix: &str, value: &Value, keys: &mut Map<String, Value>) {
    if let Value::Object(members) = value {
        for (name, member) in members {
            let key = format!("{prefix}.{name}");
            flatten_config(&key, member, keys);
            keys.insert(key, member.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::when::parse;

    fn settings(value: Value) -> Settings {
        let mut s = Settings::from_value(value.clone()).unwrap();
        s.raw = value;
        s
    }

    fn holds(clause: &str, settings: &Settings) -> bool {
        let ctx = session_context(
            settings,
            &[PathBuf::from("/nonexistent/root")],
            ApprovalMode::Plan,
        );
        parse(clause).unwrap().evaluate(&ctx)
    }

    #[test]
    fn config_keys_read_the_merged_settings_at_any_depth() {
        let s = settings(
            json!({"tools": {"sandbox": "landlock", "shell": {"killBackgroundOnExit": true}}}),
        );
        assert!(holds("config.tools.sandbox == landlock", &s));
        assert!(holds("config.tools.shell.killBackgroundOnExit", &s));
        assert!(holds("config.tools", &s));
        assert!(!holds("config.tools.core", &s));
        assert!(holds(
            "approvalMode == plan && workspaceFolderCount == 1",
            &s
        ));
    }

    #[test]
    fn environment_variables_are_visible_only_when_listed() {
        // PATH is set in every test environment.
        let hidden = settings(json!({}));
        assert!(!holds("env.PATH", &hidden));
        let listed = settings(json!({"context": {"envKeys": ["PATH"]}}));
        assert!(holds("env.PATH", &listed));
    }

    #[test]
    fn settings_keys_are_added_and_win_over_built_in_ones() {
        let s = settings(
            json!({"context": {"keys": {"debugState": "running", "gitRepository": "no"}}}),
        );
        assert!(holds("debugState == running", &s));
        assert!(holds("gitRepository == no", &s));
    }
}
