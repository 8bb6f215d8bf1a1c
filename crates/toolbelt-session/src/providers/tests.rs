//! How a provider, model, server and key are chosen, and that each client built from
//! a choice reaches its server (the fake ones on 127.0.0.1) as the choice says. The
//! variables are given as a fixed set, never the process's environment.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::error::ModelSetupError;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolbelt_model::fake_gemini::{FakeGemini, GeminiReply};
use toolbelt_model::fake_responses::{FakeResponses, ResponsesReply};
use toolbelt_model::{Message, ModelRequest};

use super::*;

fn settings(value: serde_json::Value) -> Settings {
    serde_json::from_value(value).unwrap()
}

/// One question to the client `choice` builds; the answer's text.
async fn ask(choice: &ModelChoice) -> String {
    let request = ModelRequest {
        messages: vec![Message::user_text("go")],
        ..Default::default()
    };
    let model = choice.build().unwrap();
    let turn = model.complete(&request, &CancellationToken::new()).await;
    turn.unwrap().text
}

/// A `modelProviders` entry for `model` at `base_url` with sampling and a header.
fn entry(provider: &str, model: &str, base_url: &str) -> Settings {
    settings(json!({"modelProviders": {provider: [{
        "id": model,
        "baseUrl": base_url,
        "generationConfig": {
            "customHeaders": {"x-team": "tools"},
            "samplingParams": {"temperature": 0.2, "top_p": 0.9, "top_k": 20, "max_tokens": 2048}
        }
    }]}}))
}

#[tokio::test]
async fn an_entrys_sampling_and_headers_reach_gemini_and_responses_servers() {
    let gemini = FakeGemini::start(vec![GeminiReply::text("g")])
        .await
        .unwrap();
    let options = AgentOptions {
        model: Some("gemini-fake".into()),
        ..AgentOptions::default()
    };
    let vars = Vars::fixed(&[("GEMINI_API_KEY", "g-key")]);
    let s = entry("gemini", "gemini-fake", &gemini.base_url());
    let choice = choose_with(&options, &s, vars).unwrap();
    assert_eq!(choice.protocol, Protocol::Gemini);
    assert_eq!(ask(&choice).await, "g");
    let r = &gemini.requests()[0];
    assert_eq!(r.header("x-team"), Some("tools"));
    assert_eq!(
        r.body["generationConfig"],
        json!({"temperature": 0.2, "topP": 0.9, "topK": 20, "maxOutputTokens": 2048})
    );
    assert_eq!(gemini.violations(), Vec::<String>::new());

    let responses = FakeResponses::start(vec![ResponsesReply::text("r")])
        .await
        .unwrap();
    let options = AgentOptions {
        model: Some("gpt-fake".into()),
        ..AgentOptions::default()
    };
    let vars = Vars::fixed(&[("OPENAI_API_KEY", "sk-test")]);
    let s = entry("openai-responses", "gpt-fake", &responses.base_url());
    let choice = choose_with(&options, &s, vars).unwrap();
    assert_eq!(choice.protocol, Protocol::OpenAiResponses);
    assert_eq!(ask(&choice).await, "r");
    let r = &responses.requests()[0];
    assert_eq!(r.header("x-team"), Some("tools"));
    assert_eq!(r.body["temperature"], 0.2);
    assert_eq!(r.body["top_p"], 0.9);
    assert_eq!(r.body["max_output_tokens"], 2048);
    assert!(r.body.get("top_k").is_none(), "{}", r.body);
    assert_eq!(responses.violations(), Vec::<String>::new());
}

#[tokio::test]
async fn gemini_clis_variables_choose_vertex_ai_with_a_project() {
    let server = FakeGemini::start(vec![GeminiReply::text("v")])
        .await
        .unwrap();
    let base = server.base_url();
    // GOOGLE_API_KEY too: a complete project setup wins over it.
    let vars = Vars::fixed(&[
        ("GOOGLE_GENAI_USE_VERTEXAI", "true"),
        ("GOOGLE_CLOUD_PROJECT", "proj-1"),
        ("GOOGLE_CLOUD_LOCATION", "europe-west4"),
        ("GOOGLE_CLOUD_ACCESS_TOKEN", "ya29.token"),
        ("GOOGLE_API_KEY", "unused-key"),
        ("GEMINI_MODEL", "gemini-fake"),
        ("GOOGLE_VERTEX_BASE_URL", &base),
    ]);
    let choice = choose_with(&AgentOptions::default(), &Settings::default(), vars).unwrap();
    assert_eq!(choice.provider, "vertex-ai");
    assert_eq!(choice.protocol, Protocol::VertexAi);
    assert_eq!(
        choice.base_url_origin,
        "GOOGLE_VERTEX_BASE_URL, for provider 'vertex-ai'"
    );
    assert_eq!(choice.api_key_origin, "GOOGLE_CLOUD_ACCESS_TOKEN");
    assert!(!format!("{choice:?}").contains("ya29.token"));
    assert_eq!(ask(&choice).await, "v");
    let r = &server.requests()[0];
    assert_eq!(
        r.path,
        "/v1/projects/proj-1/locations/europe-west4/publishers/google/models/gemini-fake:streamGenerateContent?alt=sse"
    );
    assert_eq!(r.header("authorization"), Some("Bearer ya29.token"));
    assert_eq!(r.header("x-goog-api-key"), None);
    assert_eq!(server.violations(), Vec::<String>::new());

    // Without a base URL the region's own host is used.
    let vars = Vars::fixed(&[
        ("GOOGLE_CLOUD_PROJECT", "proj-1"),
        ("GOOGLE_CLOUD_LOCATION", "europe-west4"),
        ("GOOGLE_CLOUD_ACCESS_TOKEN", "ya29.token"),
    ]);
    let options = AgentOptions {
        provider: Some("vertex-ai".into()),
        model: Some("gemini-2.5-pro".into()),
        ..AgentOptions::default()
    };
    let choice = choose_with(&options, &Settings::default(), vars).unwrap();
    assert_eq!(
        choice.base_url,
        "https://europe-west4-aiplatform.googleapis.com"
    );
}

#[tokio::test]
async fn provider_vertex_ai_with_only_a_key_is_express_mode() {
    let server = FakeGemini::start(vec![GeminiReply::text("x")])
        .await
        .unwrap();
    let base = server.base_url();
    let vars = Vars::fixed(&[
        ("GOOGLE_API_KEY", "vertex-key"),
        ("GOOGLE_VERTEX_BASE_URL", &base),
    ]);
    let options = AgentOptions {
        provider: Some("vertex-ai".into()),
        model: Some("gemini-fake".into()),
        ..AgentOptions::default()
    };
    let choice = choose_with(&options, &Settings::default(), vars).unwrap();
    assert_eq!(choice.api_key_origin, "GOOGLE_API_KEY");
    assert_eq!(ask(&choice).await, "x");
    let r = &server.requests()[0];
    assert_eq!(
        r.path,
        "/v1/publishers/google/models/gemini-fake:streamGenerateContent?alt=sse"
    );
    assert_eq!(r.header("x-goog-api-key"), Some("vertex-key"));
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[test]
fn vertex_ai_without_credentials_names_what_is_missing() {
    let options = AgentOptions {
        provider: Some("vertex-ai".into()),
        model: Some("gemini-2.5-pro".into()),
        ..AgentOptions::default()
    };
    let vars = Vars::fixed(&[("GOOGLE_CLOUD_PROJECT", "proj-1")]);
    let err = choose_with(&options, &Settings::default(), vars).unwrap_err();
    assert!(matches!(err, ModelSetupError::Credentials(_)), "{err:?}");
    let err = err.to_string();
    assert!(err.contains("provider 'vertex-ai'"), "{err}");
    assert!(
        err.contains("Not set: GOOGLE_CLOUD_LOCATION, GOOGLE_CLOUD_ACCESS_TOKEN, GOOGLE_API_KEY"),
        "{err}"
    );
    // A custom id mapped to vertex-ai is Vertex AI too, and so is its error.
    let s = settings(json!({"providerProtocol": {"corp-vertex": "vertex-ai"}}));
    let options = AgentOptions {
        provider: Some("corp-vertex".into()),
        ..options
    };
    let err = choose_with(&options, &s, Vars::fixed(&[]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("'corp-vertex'") && err.contains("Vertex AI needs"),
        "{err}"
    );
    // GOOGLE_GENAI_USE_VERTEXAI only counts as true or 1; and OPENAI_* still wins.
    let model_only = AgentOptions {
        model: Some("m".into()),
        ..AgentOptions::default()
    };
    for (vars, provider) in [
        (
            vec![("GOOGLE_GENAI_USE_VERTEXAI", "1"), ("GOOGLE_API_KEY", "k")],
            "vertex-ai",
        ),
        (
            vec![
                ("GOOGLE_GENAI_USE_VERTEXAI", "false"),
                ("GOOGLE_API_KEY", "k"),
            ],
            "gemini",
        ),
        (
            vec![
                ("GOOGLE_GENAI_USE_VERTEXAI", "true"),
                ("OPENAI_API_KEY", "k"),
            ],
            "openai",
        ),
    ] {
        let choice = choose_with(&model_only, &Settings::default(), Vars::fixed(&vars)).unwrap();
        assert_eq!(choice.provider, provider, "{vars:?}");
    }
}

#[test]
fn provider_ids_name_their_protocols() {
    for (id, protocol) in [
        ("openai", Some(Protocol::OpenAiChat)),
        ("qwen-oauth", Some(Protocol::OpenAiChat)),
        ("anthropic", Some(Protocol::Anthropic)),
        ("gemini", Some(Protocol::Gemini)),
        ("vertex-ai", Some(Protocol::VertexAi)),
        ("openai-responses", Some(Protocol::OpenAiResponses)),
        ("corp", None),
    ] {
        assert_eq!(Protocol::of_provider(id), protocol, "{id}");
    }
}

/// Flags only, so the test does not depend on the environment it runs in.
#[test]
fn flags_choose_the_chat_format_and_the_key_stays_out_of_debug_output() {
    let options = AgentOptions {
        model: Some("m".into()),
        openai_base_url: Some("http://127.0.0.1:9/v1".into()),
        openai_api_key: Some("sk-secret-key".into()),
        ..AgentOptions::default()
    };
    let choice = choose(&options, &Settings::default()).unwrap();
    assert_eq!(choice.protocol, Protocol::OpenAiChat);
    assert_eq!(choice.provider, "openai");
    assert_eq!(choice.base_url_origin, "--openai-base-url");
    assert_eq!(choice.api_key_origin, "--openai-api-key");
    assert!(!format!("{choice:?}").contains("sk-secret-key"));
    // A custom id without providerProtocol is refused, naming the setting.
    let options = AgentOptions {
        provider: Some("corp".into()),
        ..options
    };
    let err = choose(&options, &Settings::default()).unwrap_err();
    assert!(
        matches!(&err, ModelSetupError::UnknownProvider { provider, .. } if provider == "corp"),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(
        err.contains("'corp'") && err.contains("providerProtocol"),
        "{err}"
    );
}
