//! Bad entries are errors naming the file, the event and the index; other tools'
//! events and types are skipped; trust and `disableAllHooks` decide what loads.

use proptest::prelude::*;
use serde_json::{Value, json};
use toolbelt_config::{settings::HookLayer, settings::Settings, settings::SettingsLayer};
use toolbelt_hooks::HookConfig;

use crate::support::{Fixture, command_group};

/// The one error of the user's `hooks`.
fn error_of(hooks: Value) -> String {
    let f = Fixture::new();
    f.user_hooks(hooks);
    let errors = HookConfig::from_settings(&f.settings()).unwrap_err();
    assert_eq!(errors.0.len(), 1, "{errors}");
    let text = errors.to_string();
    let file = f.user_file().display().to_string();
    assert!(
        text.starts_with(&format!("{file}: ")),
        "names the file: {text}"
    );
    text[file.len() + 2..].to_string()
}

#[test]
fn bad_entries_name_the_event_and_the_index() {
    assert_eq!(
        error_of(json!({"PreToolUse": [{"hooks": [
            {"type": "command", "command": "true"},
            {"type": "command"}
        ]}]})),
        "hooks.PreToolUse[0].hooks[1]: \"command\" is missing"
    );
    let e = error_of(json!({"PreToolUSe": []}));
    assert!(
        e.starts_with(
            "hooks.PreToolUSe: \"PreToolUSe\" is no hook event (did you mean PreToolUse?)"
        ),
        "{e}"
    );
    assert_eq!(
        error_of(json!({"Stop": {"hooks": []}})),
        "hooks.Stop: must be a list of matcher groups"
    );
    assert_eq!(
        error_of(json!({"PostToolUse": [{"hooks": {"type": "command"}}]})),
        "hooks.PostToolUse[0].hooks: must be a list of hooks"
    );
    assert_eq!(
        error_of(json!({"PostToolUse": [{"matcher": "x"}]})),
        "hooks.PostToolUse[0]: \"hooks\" is missing"
    );
    let e = error_of(json!({"PreToolUse": [{"hooks": [{"type": "shell", "command": "x"}]}]}));
    assert_eq!(
        e,
        "hooks.PreToolUse[0].hooks[0]: \"type\": \"shell\" is no hook type; accepted: command, http"
    );
    let e = error_of(json!({"PreToolUse": [{"matcher": 3, "hooks": []}]}));
    assert!(
        e.starts_with("hooks.PreToolUse[0].matcher: must be a string"),
        "{e}"
    );
    let e = error_of(json!({"PreToolUse": [{"matcher": "read_(file", "hooks": []}]}));
    assert!(
        e.starts_with(
            "hooks.PreToolUse[0].matcher: \"read_(file\" is not a valid regular expression"
        ),
        "{e}"
    );
    let e = error_of(json!({"PreToolUse": [{"hooks": [{"type": "http", "url": "ftp://x/"}]}]}));
    assert!(e.contains("not an http or https URL"), "{e}");
    let e = error_of(
        json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "env": {"A": 1}}]}]}),
    );
    assert!(e.contains("\"env\" must be an object of strings"), "{e}");
    assert_eq!(
        error_of(json!([])),
        "hooks: must be an object of events, such as {\"PreToolUse\": [...]}"
    );
}

#[test]
fn every_bad_entry_is_named_at_once() {
    let f = Fixture::new();
    f.user_hooks(json!({"PreToolUse": [{"hooks": [{"type": "command"}]}], "Stop": 1}));
    f.write(&f.project_file(), &json!({"hooks": {"Nope": []}}));
    let errors = HookConfig::from_settings(&f.settings()).unwrap_err();
    assert_eq!(errors.0.len(), 3, "{errors}");
}

#[test]
fn other_tools_events_and_types_are_skipped_not_refused() {
    let f = Fixture::new();
    f.user_hooks(json!({
        "PostToolBatch": [command_group("", "true")],
        "PreToolUse": [{"hooks": [
            {"type": "prompt", "prompt": "is this safe? $ARGUMENTS"},
            {"type": "command", "command": "true"}
        ]}]
    }));
    let config = HookConfig::from_settings(&f.settings()).unwrap();
    assert!(!config.is_empty());
    let warnings: Vec<String> = config.skipped.iter().map(|s| s.warning()).collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("hooks.PostToolBatch: skipped: toolbelt does not raise"),
        "{warnings:?}"
    );
    assert!(
        warnings[1].contains(
            "hooks.PreToolUse[0].hooks[0]: skipped: toolbelt does not run \"prompt\" hooks"
        ),
        "{warnings:?}"
    );
}

#[test]
fn an_untrusted_folders_hooks_do_not_load_and_disable_all_hooks_turns_all_off() {
    let mut f = Fixture::new();
    f.trusted = false;
    f.write(
        &f.project_file(),
        &json!({"hooks": {"PreToolUse": [command_group("", "project")]}}),
    );
    f.write(
        &f.project.join(".claude/settings.json"),
        &json!({"hooks": {"PreToolUse": [command_group("", "claude-project")]}}),
    );
    f.user_hooks(json!({"PreToolUse": [command_group("", "user")]}));
    let settings = f.settings();
    let ignored = &settings.untrusted_workspace.as_ref().unwrap().ignored;
    assert!(ignored.contains(&"hooks".to_string()), "{ignored:?}");
    assert!(
        ignored.iter().any(|i| i.contains(".claude/settings.json")),
        "{ignored:?}"
    );
    let listing = toolbelt_hooks::HookListing::from_settings(&settings);
    let runs: Vec<(&str, bool)> = listing
        .hooks
        .iter()
        .map(|h| (h.runs.as_str(), h.not_running.is_none()))
        .collect();
    assert_eq!(
        runs,
        vec![
            ("project", false),
            ("user", true),
            ("claude-project", false)
        ]
    );
    // Even a bad entry in the untrusted file does not stop the session.
    f.write(&f.project_file(), &json!({"hooks": {"Nope": []}}));
    assert!(HookConfig::from_settings(&f.settings()).is_ok());

    f.write(
        &f.user_file(),
        &json!({"disableAllHooks": true, "hooks": {"PreToolUse": [command_group("", "user")]}}),
    );
    let settings = f.settings();
    assert!(HookConfig::from_settings(&settings).unwrap().is_empty());
    let listing = toolbelt_hooks::HookListing::from_settings(&settings);
    assert!(listing.hooks.iter().all(|h| h.not_running.is_some()));
}

#[test]
fn hook_scripts_named_by_commands_are_found_for_protection() {
    let f = Fixture::new();
    let script = f.script(".qwen/hooks/check.sh", "exit 0");
    let tool = f.script("tools/guard.py", "#!/usr/bin/env python3\n");
    f.user_hooks(json!({"PreToolUse": [
        command_group("", "\"$QWEN_PROJECT_DIR/.qwen/hooks/check.sh\" --strict"),
        {"hooks": [{"type": "command", "command": "python3", "args": ["tools/guard.py"]}]},
    ]}));
    let config = HookConfig::from_settings(&f.settings()).unwrap();
    assert_eq!(config.command_files(&f.project), vec![script, tool]);
}

/// A value of the shapes hooks use, arbitrarily wrong.
fn hooks_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<f64>().prop_map(|n| json!(n)),
        any::<i64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just("command".to_string()),
            Just("http".to_string()),
            Just("http://127.0.0.1:1/".to_string()),
            Just("^(?!a).*$".to_string()),
            Just("a|(b".to_string()),
            ".{0,10}",
        ]
        .prop_map(Value::String),
    ];
    let key = prop_oneof![
        Just("PreToolUse".to_string()),
        Just("Stop".to_string()),
        Just("PostToolBatch".to_string()),
        Just("matcher".to_string()),
        Just("hooks".to_string()),
        Just("type".to_string()),
        Just("command".to_string()),
        Just("url".to_string()),
        Just("args".to_string()),
        Just("env".to_string()),
        Just("timeout".to_string()),
        Just("headers".to_string()),
        Just("sequential".to_string()),
        ".{0,6}",
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    #[test]
    fn no_hooks_value_panics_the_parser(hooks in hooks_value()) {
        let mut settings = Settings::default();
        settings.hook_layers = vec![HookLayer {
            layer: SettingsLayer::User,
            claude: false,
            file: "/x/settings.json".into(),
            hooks,
            trusted: true,
        }];
        match HookConfig::from_settings(&settings) {
            Ok(_) => {}
            Err(errors) => {
                for e in errors.0 {
                    prop_assert!(e.to_string().starts_with("/x/settings.json: hooks"));
                }
            }
        }
        let _ = toolbelt_hooks::HookListing::from_settings(&settings).text();
    }
}
