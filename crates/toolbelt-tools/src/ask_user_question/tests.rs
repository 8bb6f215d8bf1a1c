use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolbelt_core::{Answer, AskUser, BoxFuture, ErrorKind, ExecContext, Question};

use crate::test_support::{err_kind, fixture};

fn two_questions() -> serde_json::Value {
    json!({"questions": [
        {"question": "Which database should the service use?", "header": "Database",
         "options": [{"label": "Postgres", "description": "relational, already deployed"},
                     {"label": "SQLite", "description": "one file, no server"}]},
        {"question": "Which checks should run in CI?", "header": "CI", "multiSelect": true,
         "options": [{"label": "clippy", "description": "lints"},
                     {"label": "tests", "description": "unit and integration"},
                     {"label": "docs", "description": "rustdoc"}]}
    ]})
}

/// Answers with what it was given, and remembers the questions it saw.
struct Scripted {
    answers: Result<Vec<Answer>, String>,
    seen: Mutex<Vec<Question>>,
}

impl AskUser for Scripted {
    fn ask<'a>(
        &'a self,
        questions: &'a [Question],
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<Answer>, toolbelt_core::EmbedderError>> {
        self.seen.lock().unwrap().extend(questions.iter().cloned());
        Box::pin(std::future::ready(self.answers.clone().map_err(Into::into)))
    }
}

/// Never answers: the call must end through cancellation.
struct Silent;

impl AskUser for Silent {
    fn ask<'a>(
        &'a self,
        _questions: &'a [Question],
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<Answer>, toolbelt_core::EmbedderError>> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn headless_there_is_nobody_to_ask_and_the_call_is_refused() {
    let fx = fixture();
    let result = fx.call("ask_user_question", two_questions()).await;
    assert_eq!(err_kind(&result), Some(ErrorKind::ExecutionDenied));
    let text = result.llm_text();
    assert!(text.contains("needs an interactive session"), "{text}");
    assert!(text.contains("own judgement"), "{text}");
}

#[tokio::test]
async fn the_answers_reach_the_model_with_their_questions() {
    let fx = fixture();
    let asker = Arc::new(Scripted {
        answers: Ok(vec![
            Answer::Chosen(vec!["SQLite".into()]),
            Answer::Chosen(vec!["clippy".into(), "tests".into()]),
        ]),
        seen: Mutex::new(Vec::new()),
    });
    fx.env.ask_user.set(asker.clone());
    let call = fx.build("ask_user_question", two_questions()).unwrap();
    assert!(
        call.confirmation().await.is_none(),
        "the question is the confirmation"
    );
    assert_eq!(call.describe(), "Ask the user 2 questions");
    let result = call.execute(ExecContext::new(fx.env.clone())).await;
    assert!(result.error.is_none(), "{:?}", result.error);
    insta::assert_snapshot!(result.llm_text(), @r"
    The user answered your questions:
    1. [Database] Which database should the service use?
       Answer: SQLite
    2. [CI] Which checks should run in CI?
       Answer: clippy, tests
    Go on with these answers in mind.
    ");
    let seen = asker.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert!(!seen[0].multi_select && seen[1].multi_select);
    assert_eq!(seen[1].options[2].label, "docs");
    assert_eq!(
        seen[0].options[0].description,
        "relational, already deployed"
    );
}

#[tokio::test]
async fn own_words_and_a_dismissal_are_told_as_such() {
    let fx = fixture();
    fx.env.ask_user.set(Arc::new(Scripted {
        answers: Ok(vec![Answer::Other("  MySQL, we have it  ".into())]),
        seen: Mutex::new(Vec::new()),
    }));
    let one = json!({"questions": [two_questions()["questions"][0].clone()]});
    let result = fx.call("ask_user_question", one.clone()).await;
    assert!(
        result
            .llm_text()
            .contains("Answer: in their own words: MySQL, we have it\n"),
        "{}",
        result.llm_text()
    );

    let fx = fixture();
    fx.env.ask_user.set(Arc::new(Scripted {
        answers: Err("dismissed with Esc".into()),
        seen: Mutex::new(Vec::new()),
    }));
    let result = fx.call("ask_user_question", one).await;
    assert_eq!(err_kind(&result), Some(ErrorKind::ExecutionDenied));
    assert!(result.llm_text().contains("dismissed with Esc"));
}

#[tokio::test]
async fn cancelling_the_turn_ends_a_question_nobody_answers() {
    let fx = fixture();
    fx.env.ask_user.set(Arc::new(Silent));
    let call = fx.build("ask_user_question", two_questions()).unwrap();
    let ctx = ExecContext::new(fx.env.clone());
    let cancel = ctx.cancel.clone();
    let running = tokio::spawn(call.execute(ctx));
    cancel.cancel();
    let result = running.await.unwrap();
    assert_eq!(err_kind(&result), Some(ErrorKind::Cancelled));
}

#[test]
fn malformed_questions_are_refused_with_what_to_fix() {
    let fx = fixture();
    let option = |l: &str| json!({"label": l, "description": "d"});
    let q = |header: &str, options: Vec<serde_json::Value>| json!({"question": "Which one?", "header": header, "options": options});
    let cases = [
        (json!({"questions": []}), "questions"),
        (
            json!({"questions": vec![q("a", vec![option("x"), option("y")]); 5]}),
            "questions",
        ),
        (json!({"questions": [q("a", vec![option("x")])]}), "options"),
        (
            json!({"questions": [q("far too long header", vec![option("x"), option("y")])]}),
            "header",
        ),
        (
            json!({"questions": [q("", vec![option("x"), option("y")])]}),
            "header",
        ),
        (
            json!({"questions": [q("a", vec![option("x"), option("x")])]}),
            "twice",
        ),
        (
            json!({"questions": [q("a", vec![option("x"), option("y")]), q("b", vec![option("x"), option("y")])]}),
            "repeats",
        ),
        (
            json!({"questions": [{"question": "Q?", "header": "h", "options": [{"label": "x"}, {"label": "y"}]}]}),
            "description",
        ),
    ];
    for (args, needle) in cases {
        let err = fx
            .build("ask_user_question", args.clone())
            .err()
            .unwrap_or_else(|| panic!("accepted {args}"));
        assert_eq!(err.kind, ErrorKind::InvalidToolParams, "{args}");
        assert!(err.message.contains(needle), "{args}: {}", err.message);
    }
}
