//! Slash commands typed in the editor: listed in `available_commands_update`, answered by
//! toolbelt without asking the model, and able to change the session (`/approval-mode`,
//! `/clear`).

use serde_json::json;
use toolbelt_model::fake_server::{FakeOpenAi, Reply};

use crate::{Editor, clean, model_env, sdk_dir, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_commands_are_listed_and_answered_without_the_model() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    let server = FakeOpenAi::start(vec![Reply::text("The model answered.")])
        .await
        .unwrap();
    let mut steps = start();
    for text in ["/tools", "/approval-mode plan", "/nope", "hello"] {
        steps.push(json!({"op": "prompt", "text": text}));
    }
    let seen = e
        .drive(&[], &[], json!(steps), json!({ "env": model_env(&server) }))
        .await;
    let listed = seen.updates_of("available_commands_update", None);
    let names: Vec<&str> = listed[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for name in ["help", "tools", "memory", "compress", "approval-mode"] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    assert!(!names.contains(&"quit"), "{names:?}");
    // `/tools` lists the tools; the model is not asked.
    assert_eq!(seen.result(2)["stopReason"], "end_turn");
    assert!(
        seen.text_of("agent_message_chunk", Some(2))
            .contains("read_file")
    );
    // `/approval-mode plan` changes the mode and says so.
    assert_eq!(seen.result(3)["stopReason"], "end_turn");
    let modes = seen.updates_of("current_mode_update", Some(3));
    assert_eq!(modes[0]["currentModeId"], "plan", "{}", seen.summary());
    // A misspelt command says what is wrong instead of reaching the model.
    assert!(
        seen.text_of("agent_message_chunk", Some(4))
            .contains("unknown command /nope")
    );
    // Only the plain prompt reached the model.
    assert_eq!(
        seen.text_of("agent_message_chunk", Some(5)),
        "The model answered."
    );
    assert_eq!(server.request_count(), 1);
    clean(&server);
}

/// The settings' `modelProviders` are the choices of the session's Model option, and
/// `/model NAME` switches to one: the editor is told the option's new value and the next
/// request goes to that model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configured_models_are_the_model_options_choices() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    let server = FakeOpenAi::start(vec![Reply::text("From the second.")])
        .await
        .unwrap();
    let settings = json!({"modelProviders": {"openai": [
        {"id": "fake-model"},
        {"id": "second-model", "name": "Second", "baseUrl": server.base_url(), "envKey": "OPENAI_API_KEY"},
    ]}});
    std::fs::create_dir_all(e.home().join(".qwen")).unwrap();
    std::fs::write(e.home().join(".qwen/settings.json"), settings.to_string()).unwrap();
    let mut steps = start();
    steps.push(json!({"op": "prompt", "text": "/model second-model"}));
    steps.push(json!({"op": "prompt", "text": "hello"}));
    let seen = e
        .drive(&[], &[], json!(steps), json!({ "env": model_env(&server) }))
        .await;
    let options = &seen.result(1)["configOptions"];
    let model = options
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "model")
        .unwrap();
    let choices: Vec<&str> = model["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["value"].as_str().unwrap())
        .collect();
    assert_eq!(choices, ["fake-model", "second-model"], "{model}");
    let changed = seen.updates_of("config_option_update", Some(2));
    let current = changed[0]["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "model")
        .unwrap()["currentValue"]
        .clone();
    assert_eq!(current, "second-model", "{}", seen.summary());
    assert_eq!(
        seen.text_of("agent_message_chunk", Some(3)),
        "From the second."
    );
    assert_eq!(server.last_request().unwrap().body["model"], "second-model");
    clean(&server);
}
