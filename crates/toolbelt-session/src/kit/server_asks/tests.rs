//! The dialog asker against a scripted person.

use std::sync::Mutex;

use serde_json::json;
use toolbelt_core::{Choice, SampledMessage};

use super::*;

/// Answers each `ask` with the next script entry and keeps the questions.
struct Scripted {
    answers: Mutex<Vec<Result<Vec<Answer>, String>>>,
    asked: Mutex<Vec<Vec<Question>>>,
}

impl AskUser for Scripted {
    fn ask<'a>(
        &'a self,
        questions: &'a [Question],
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<Answer>, toolbelt_core::EmbedderError>> {
        self.asked.lock().unwrap().push(questions.to_vec());
        let next = self.answers.lock().unwrap().remove(0);
        Box::pin(async move { next.map_err(Into::into) })
    }
}

fn scripted(answers: Vec<Result<Vec<Answer>, String>>) -> Arc<Scripted> {
    Arc::new(Scripted {
        answers: Mutex::new(answers),
        asked: Mutex::new(Vec::new()),
    })
}

fn chosen(label: &str) -> Answer {
    Answer::Chosen(vec![label.to_string()])
}

fn request() -> ElicitationRequest {
    let field = |name: &str, required: bool, kind: FieldKind| FormField {
        name: name.into(),
        title: None,
        description: None,
        required,
        default: None,
        kind,
    };
    let form = Form {
        fields: vec![
            field(
                "age",
                true,
                FieldKind::Number {
                    integer: true,
                    minimum: Some(1.0),
                    maximum: Some(100.0),
                },
            ),
            field("agree", false, FieldKind::Boolean),
            field(
                "pet",
                false,
                FieldKind::Choice(vec![Choice {
                    value: "pet-1".into(),
                    label: "Cats".into(),
                }]),
            ),
        ],
        schema: json!({}),
    };
    ElicitationRequest {
        server: "everything".into(),
        message: "Please answer".into(),
        mode: ElicitationMode::Form(form),
    }
}

#[tokio::test]
async fn a_form_is_asked_field_by_field_and_asked_again_when_an_answer_does_not_fit() {
    let person = scripted(vec![
        Ok(vec![chosen(FILL_IN)]),
        Ok(vec![
            Answer::Other("300".into()),
            chosen("Yes"),
            chosen("Cats"),
        ]),
        Ok(vec![chosen(FILL_IN)]),
        Ok(vec![
            Answer::Other("42".into()),
            chosen("No"),
            chosen(LEAVE_EMPTY),
        ]),
    ]);
    let asker = DialogAsker(person.clone());
    let answer = asker.elicit(&request(), &CancellationToken::new()).await;
    let expected = json!({"age": 42, "agree": false});
    assert_eq!(
        answer,
        ElicitationAnswer::Accept(expected.as_object().unwrap().clone())
    );
    let asked = person.asked.lock().unwrap();
    assert_eq!(asked.len(), 4);
    assert!(
        asked[0][0]
            .question
            .contains("\"everything\" asks for input")
    );
    assert!(
        asked[2][0].question.contains("between 1 and 100"),
        "{:?}",
        asked[2][0]
    );
    // The required number is typed; the optional ones may be left out.
    assert!(asked[1][0].options.is_empty());
    assert!(asked[1][2].options.iter().any(|o| o.label == LEAVE_EMPTY));
}

#[tokio::test]
async fn declining_and_dismissing_are_told_apart() {
    let person = scripted(vec![Ok(vec![chosen(DECLINE)]), Err("Esc".into())]);
    let asker = DialogAsker(person);
    let cancel = CancellationToken::new();
    assert_eq!(
        asker.elicit(&request(), &cancel).await,
        ElicitationAnswer::Decline
    );
    assert_eq!(
        asker.elicit(&request(), &cancel).await,
        ElicitationAnswer::Cancel
    );
}

#[tokio::test]
async fn a_sampling_request_shows_what_the_model_gets_and_needs_an_approve() {
    let person = scripted(vec![Ok(vec![chosen(APPROVE)]), Ok(vec![chosen(REFUSE)])]);
    let asker = DialogAsker(person.clone());
    let request = SamplingRequest {
        server: "everything".into(),
        system_prompt: Some("You are a helpful test server.".into()),
        messages: vec![SampledMessage {
            assistant: false,
            text: "Say hi".into(),
        }],
        max_tokens: 100,
        temperature: Some(0.7),
    };
    let cancel = CancellationToken::new();
    assert_eq!(asker.approve_sampling(&request, &cancel).await, Ok(()));
    assert!(asker.approve_sampling(&request, &cancel).await.is_err());
    let asked = person.asked.lock().unwrap();
    let text = &asked[0][0].question;
    for part in [
        "\"everything\"",
        "at most 100 tokens",
        "System: You are a helpful test server.",
        "User: Say hi",
    ] {
        assert!(text.contains(part), "{text}");
    }
}

#[tokio::test]
async fn a_url_is_shown_never_opened_and_a_servers_escape_sequences_are_not_drawn() {
    let person = scripted(vec![Ok(vec![chosen("I will open it")])]);
    let asker = DialogAsker(person.clone());
    let request = ElicitationRequest {
        server: "everything".into(),
        message: "Log in\u{1b}[2J please".into(),
        mode: ElicitationMode::Url {
            url: "https://example.org/login".into(),
            elicitation_id: "e1".into(),
        },
    };
    let answer = asker.elicit(&request, &CancellationToken::new()).await;
    assert_eq!(answer, ElicitationAnswer::Accept(Map::new()));
    let asked = person.asked.lock().unwrap();
    let text = &asked[0][0].question;
    assert!(text.contains("https://example.org/login"), "{text}");
    assert!(text.contains("does not open it"), "{text}");
    assert!(
        text.contains("Log in?[2J please") && !text.contains('\u{1b}'),
        "{text}"
    );
}
