//! What an editor puts in a prompt reaches the model: the text, an embedded resource
//! (the selection or an open file), a resource link, and an image.

use serde_json::json;
use toolbelt_model::fake_server::{FakeOpenAi, Reply};

use crate::{Editor, clean, model_env, sdk_dir, start};

/// A 1x1 PNG.
const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_resources_links_and_images_reach_the_model() {
    let Some(sdk) = sdk_dir() else { return };
    let e = Editor::new(sdk);
    e.write("src/lib.rs", "fn selected() {}\nfn other() {}\n");
    e.write("linked.txt", "what the link points at\n");
    // The model takes images (settings), so the image is sent, not described.
    std::fs::create_dir_all(e.home().join(".qwen")).unwrap();
    std::fs::write(
        e.home().join(".qwen/settings.json"),
        r#"{"model": {"vision": true}}"#,
    )
    .unwrap();
    let server = FakeOpenAi::start(vec![Reply::text("Seen it all.")])
        .await
        .unwrap();
    let lib_uri = format!("file://{}", e.path("src/lib.rs"));
    let link_uri = format!("file://{}", e.path("linked.txt"));
    let mut steps = start();
    steps.push(json!({
        "op": "prompt",
        "text": "explain the selection",
        "resources": [{"uri": lib_uri, "mimeType": "text/x-rust", "text": "fn selected() {}"}],
        "resourceLinks": [{"uri": link_uri, "name": "linked.txt"}],
        "images": [{"mimeType": "image/png", "data": PIXEL}],
    }));
    let seen = e
        .drive(&[], &[], json!(steps), json!({ "env": model_env(&server) }))
        .await;
    assert_eq!(seen.result(2)["stopReason"], "end_turn");
    assert_eq!(seen.text_of("agent_message_chunk", Some(2)), "Seen it all.");
    let body = server.last_request().unwrap().body;
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "user")
        .unwrap()
        .to_string();
    assert!(user.contains("explain the selection"), "{user}");
    assert!(user.contains("fn selected() {}"), "{user}");
    assert!(user.contains("linked.txt"), "{user}");
    assert!(
        user.contains(&format!("data:image/png;base64,{PIXEL}")),
        "{user}"
    );
    clean(&server);
}
