//! `toolbelt hooks list`: every hook, its file, and whether it runs here.

use serde_json::json;
use toolbelt_hooks::HookListing;

use crate::support::{Fixture, command_group};

#[test]
fn the_listing_names_every_hook_with_its_file_and_whether_it_runs() {
    let mut f = Fixture::new();
    f.trusted = false;
    f.user_hooks(json!({"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh", "name": "check", "timeout": 5}]},
    ]}));
    f.write(
        &f.project_file(),
        &json!({"hooks": {"Stop": [
            {"hooks": [{"type": "http", "url": "http://127.0.0.1:8080/stop"}]},
        ]}}),
    );
    f.write(
        &f.home.join(".claude/settings.json"),
        &json!({"hooks": {
            "PostToolUse": [command_group("Edit|Write", "npx prettier --write")],
            "PostToolBatch": [command_group("", "true")],
        }}),
    );
    let listing = HookListing::from_settings(&f.settings());
    let json = listing.json();
    let hooks = json["hooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 3);
    assert_eq!(hooks[0]["event"], "Stop");
    assert_eq!(hooks[0]["type"], "http");
    assert_eq!(hooks[0]["url"], "http://127.0.0.1:8080/stop");
    assert_eq!(hooks[0]["source"], f.project_file().display().to_string());
    assert_eq!(hooks[0]["runs"], false);
    assert!(hooks[0]["whyNot"].as_str().unwrap().contains("not trusted"));
    assert_eq!(hooks[1]["event"], "PreToolUse");
    assert_eq!(hooks[1]["matcher"], "Bash");
    assert_eq!(hooks[1]["command"], "./check.sh");
    assert_eq!(hooks[1]["name"], "check");
    assert_eq!(hooks[1]["timeoutSeconds"], 5.0);
    assert_eq!(hooks[1]["key"], "hooks.PreToolUse[0].hooks[0]");
    assert_eq!(hooks[1]["runs"], true);
    assert_eq!(hooks[1]["whyNot"], serde_json::Value::Null);
    assert_eq!(hooks[2]["claude"], true);
    assert_eq!(hooks[2]["runs"], true);
    assert_eq!(json["skipped"][0]["key"], "hooks.PostToolBatch");
    let text = listing.text();
    assert!(
        text.contains("PreToolUse [Bash] command \"check\": ./check.sh"),
        "{text}"
    );
    assert!(
        text.contains("does not run: this folder is not trusted"),
        "{text}"
    );
}

#[test]
fn errors_are_listed_where_a_session_would_refuse_to_start() {
    let f = Fixture::new();
    f.user_hooks(json!({"PreToolUse": [{"hooks": [{"type": "command"}]}]}));
    let listing = HookListing::from_settings(&f.settings());
    assert_eq!(listing.errors.len(), 1);
    let text = listing.text();
    assert!(
        text.contains("does not start a session until they are fixed"),
        "{text}"
    );
    assert!(
        text.contains("hooks.PreToolUse[0].hooks[0]: \"command\" is missing"),
        "{text}"
    );
    assert_eq!(
        listing.json()["errors"][0]["key"],
        "hooks.PreToolUse[0].hooks[0]"
    );
}

#[test]
fn no_hooks_says_so() {
    let f = Fixture::new();
    assert_eq!(
        HookListing::from_settings(&f.settings()).text(),
        "No hooks are configured.\n"
    );
}
