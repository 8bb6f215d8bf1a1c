use std::sync::Arc;

use serde_json::json;
use toolbelt_config::settings::Settings;

use super::ModelSwitch;
use crate::{AgentOptions, ModelSlot};

fn switch() -> (ModelSwitch, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings::from_value(json!({"modelProviders": {
        "anthropic": [{"id": "claude-x", "name": "Claude X", "envKey": "TOOLBELT_TEST_UNSET_KEY_1"}],
        "openai": [{"id": "local-coder", "baseUrl": "http://127.0.0.1:9/v1"}]
    }}))
    .unwrap();
    let options = AgentOptions {
        model: Some("local-coder".into()),
        openai_base_url: Some("http://127.0.0.1:9/v1".into()),
        ..AgentOptions::default()
    };
    let (model, _) = crate::build_model(&options, &settings, dir.path()).unwrap();
    let slot = Arc::new(ModelSlot::new(model));
    let switch = ModelSwitch::of(options, Arc::new(settings), dir.path().to_path_buf(), slot);
    (switch, dir)
}

#[test]
fn lists_the_configured_models_with_the_current_one_marked() {
    let (switch, _dir) = switch();
    let text = switch.list("local-coder");
    assert!(text.contains("anthropic: claude-x (Claude X)"), "{text}");
    assert!(text.contains(" * openai: local-coder"), "{text}");
    assert!(!text.contains("* anthropic"), "{text}");
}

#[test]
fn switches_to_a_usable_model_and_refuses_one_without_its_key() {
    let (mut switch, _dir) = switch();
    // A name no entry lists stays on the session's server.
    let text = switch.switch("another-model").unwrap();
    assert!(text.contains("another-model"), "{text}");
    assert!(text.contains("127.0.0.1:9"), "{text}");
    // An entry whose key is missing changes nothing and says what is missing.
    let err = switch.switch("claude-x").unwrap_err();
    assert!(
        err.to_string().contains("TOOLBELT_TEST_UNSET_KEY_1"),
        "{err}"
    );
    assert!(
        matches!(
            err,
            crate::SwitchError::Model(crate::ModelSetupError::Credentials(_))
        ),
        "{err:?}"
    );
    assert!(matches!(
        switch.switch("two words"),
        Err(crate::SwitchError::BadName(_))
    ));
    assert!(switch.switch("  ").is_err());
}
