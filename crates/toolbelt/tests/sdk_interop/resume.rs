//! Resuming from the SDK: `query({resume})` takes only UUIDs, and the SDK takes the
//! resumed ID as the session's own, so a continuation must keep its parent's ID for the
//! application to resume it again.

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};

use crate::{Sandbox, clean, sdk_dir};

/// The texts of the user messages the model saw in the last request.
fn prompts_seen(server: &FakeOpenAi) -> Vec<String> {
    let body = server.last_request().unwrap().body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_resumes_a_resumed_session_under_one_uuid() {
    let Some(sdk) = sdk_dir() else { return };
    let s = Sandbox::new();
    let server = FakeOpenAi::start(vec![
        Reply::text("One."),
        Reply::text("Two."),
        Reply::text("Three."),
    ])
    .await
    .unwrap();
    let mut resume: Option<String> = None;
    for (n, prompt) in ["first", "second", "third"].into_iter().enumerate() {
        let mut args = json!({ "prompt": prompt });
        if let Some(id) = &resume {
            args["resume"] = json!(id);
        }
        let c = s.client(&sdk, "single", &server, args).await;
        assert_eq!(c.results().len(), 1, "run {n}: {:?}", c.shape());
        let id = c.messages[0]["session_id"].as_str().unwrap().to_string();
        assert!(uuid::Uuid::try_parse(&id).is_ok(), "run {n}: {id}");
        if let Some(parent) = &resume {
            assert_eq!(&id, parent, "run {n} keeps the resumed ID");
        }
        resume = Some(id);
    }
    let seen = prompts_seen(&server);
    for prompt in ["first", "second", "third"] {
        assert!(
            seen.iter().any(|p| p.contains(prompt)),
            "{prompt} missing from {seen:?}"
        );
    }
    clean(&server);
}
