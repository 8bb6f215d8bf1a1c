//! What a project's manifests may reach: a manifest is read only where it stays in the
//! project, and the files its commands name are protected configuration.

use std::os::unix::fs::symlink;

use serde_json::json;
use toolbelt_config::settings::Settings;

use super::tests::{home, load, setup, write_json};

fn manifest(name: &str) -> serde_json::Value {
    json!({
        "languageModelTools": [{"name": name, "displayName": name, "modelDescription": "Does things."}],
        "bindings": {name: {"command": ["true"]}}
    })
}

#[test]
fn a_workspace_manifest_that_leads_out_of_the_project_is_not_read() {
    let f = setup(Settings::default());
    let dir = f.ws().join(".qwen/tools");
    write_json(&dir.join("inside.json"), &manifest("inside"));
    write_json(&f.outside().join("secret.json"), &manifest("from_outside"));
    symlink(f.outside().join("secret.json"), dir.join("linked.json")).unwrap();
    symlink("/dev/zero", dir.join("zero.json")).unwrap();
    let loaded = load(&f);
    assert_eq!(loaded.tool_names(), vec!["inside"]);
    let warnings = loaded.warnings.join("\n");
    assert!(
        warnings.contains("linked.json") && warnings.contains("leads outside the project"),
        "{warnings}"
    );

    // The person's own manifests may link anywhere.
    let user = home(&f).join(".qwen/tools");
    std::fs::create_dir_all(&user).unwrap();
    write_json(&f.outside().join("dotfiles.json"), &manifest("mine"));
    symlink(f.outside().join("dotfiles.json"), user.join("mine.json")).unwrap();
    assert_eq!(load(&f).tool_names(), vec!["inside", "mine"]);
}
