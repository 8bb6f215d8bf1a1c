//! What MCP servers ask, in the terminal's question dialog (`ask_user_question`'s, an
//! [`AskUser`]): a form becomes one question per field, a URL one question whose "yes"
//! says the person will open it themselves (toolbelt never opens it), a sampling
//! request one question that shows what the model would be sent.
//!
//! A typed answer is read as its field takes it and the form is checked; when it does
//! not fit, the form is asked again with the reason, up to [`FORM_TRIES`] times.
//! Dismissing the dialog (Esc) cancels.

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;
use toolbelt_core::{Answer, AskUser, Question, QuestionOption};
use toolbelt_core::{
    ElicitationAnswer, ElicitationMode, ElicitationRequest, FieldKind, Form, FormError, FormField,
    SamplingRequest, ServerAsker,
};

/// How many times a form whose answer does not fit is asked.
pub const FORM_TRIES: usize = 3;

const FILL_IN: &str = "Fill in";
const DECLINE: &str = "Decline";
const LEAVE_EMPTY: &str = "Leave empty";
const APPROVE: &str = "Approve";
const REFUSE: &str = "Refuse";

/// The person behind `ask`, for MCP servers.
pub struct DialogAsker(pub Arc<dyn AskUser>);

fn option(label: &str, description: &str) -> QuestionOption {
    QuestionOption {
        label: label.to_string(),
        description: description.to_string(),
    }
}

fn question(header: &str, text: String, options: Vec<QuestionOption>, multi: bool) -> Question {
    Question {
        question: text,
        header: header.to_string(),
        options,
        multi_select: multi,
    }
}

impl ServerAsker for DialogAsker {
    fn elicit<'a>(
        &'a self,
        request: &'a ElicitationRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, ElicitationAnswer> {
        Box::pin(async move {
            match &request.mode {
                ElicitationMode::Form(form) => self.form(request, form, cancel).await,
                ElicitationMode::Url { url, .. } => {
                    let text = format!(
                        "MCP server \"{}\" asks you to open a web page:\n\n{}\n\n{}\n\ntoolbelt does not open it: open it yourself if you agree.",
                        request.server,
                        shown(&request.message),
                        shown(url)
                    );
                    let options = vec![
                        option("I will open it", "tell the server you agreed"),
                        option(DECLINE, "tell the server no"),
                    ];
                    let asked = [question("MCP page", text, options, false)];
                    match self.0.ask(&asked, cancel).await {
                        Ok(answers) if picked(&answers, 0) == Some("I will open it") => {
                            ElicitationAnswer::Accept(Map::new())
                        }
                        Ok(_) => ElicitationAnswer::Decline,
                        Err(_) => ElicitationAnswer::Cancel,
                    }
                }
                _ => ElicitationAnswer::Decline,
            }
        })
    }

    fn approve_sampling<'a>(
        &'a self,
        request: &'a SamplingRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<(), toolbelt_core::EmbedderError>> {
        Box::pin(async move {
            let options = vec![
                option(APPROVE, "the session's model answers, with no tools"),
                option(REFUSE, "the server gets an error"),
            ];
            let asked = [question(
                "MCP model",
                sampling_text(request),
                options,
                false,
            )];
            match self.0.ask(&asked, cancel).await {
                Ok(answers) if picked(&answers, 0) == Some(APPROVE) => Ok(()),
                Ok(_) => Err("the person refused it".into()),
                Err(why) => Err(format!("the person was not asked to the end ({why})").into()),
            }
        })
    }
}

/// What the person reads before approving a sampling request: the server, the limits
/// and everything the model would be sent.
pub fn sampling_text(request: &SamplingRequest) -> String {
    let mut text = format!(
        "MCP server \"{}\" asks the session's model to answer (at most {} tokens):\n",
        request.server, request.max_tokens
    );
    if let Some(system) = &request.system_prompt {
        text.push_str(&format!("\nSystem: {}", shown(system)));
    }
    for m in &request.messages {
        let who = if m.assistant { "Assistant" } else { "User" };
        text.push_str(&format!("\n{who}: {}", shown(&m.text)));
    }
    text
}

/// A server's text as the terminal may show it: control characters (escape sequences
/// a server could use to redraw the screen) become `?`; line breaks stay.
fn shown(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() && c != '\n' { '?' } else { c })
        .collect()
}

/// The single label picked for question `i`, if one was.
fn picked(answers: &[Answer], i: usize) -> Option<&str> {
    match answers.get(i) {
        Some(Answer::Chosen(labels)) => labels.first().map(String::as_str),
        _ => None,
    }
}

impl DialogAsker {
    async fn form(
        &self,
        request: &ElicitationRequest,
        form: &Form,
        cancel: &CancellationToken,
    ) -> ElicitationAnswer {
        let mut problem: Option<String> = None;
        for _ in 0..FORM_TRIES {
            let mut intro = format!(
                "MCP server \"{}\" asks for input:\n\n{}",
                request.server,
                shown(&request.message)
            );
            if let Some(why) = &problem {
                intro.push_str(&format!("\n\nThe last answer did not fit: {why}"));
            }
            let options = vec![
                option(FILL_IN, "answer the questions that follow"),
                option(DECLINE, "tell the server no"),
            ];
            // First whether to answer at all, then the fields: the dialog asks every
            // question it is given.
            match self
                .0
                .ask(&[question("MCP input", intro, options, false)], cancel)
                .await
            {
                Ok(answers) if picked(&answers, 0) == Some(FILL_IN) => {}
                Ok(_) => return ElicitationAnswer::Decline,
                Err(_) => return ElicitationAnswer::Cancel,
            }
            if form.fields.is_empty() {
                return ElicitationAnswer::Accept(Map::new());
            }
            let asked: Vec<Question> = form.fields.iter().map(field_question).collect();
            let answers = match self.0.ask(&asked, cancel).await {
                Ok(answers) => answers,
                Err(_) => return ElicitationAnswer::Cancel,
            };
            match content(form, &answers) {
                Ok(content) => match form.check(&content) {
                    Ok(()) => return ElicitationAnswer::Accept(content),
                    Err(why) => problem = Some(why.to_string()),
                },
                Err(why) => problem = Some(why.to_string()),
            }
        }
        ElicitationAnswer::Cancel
    }
}

/// One field as a question: its choices, yes/no, or typed text.
fn field_question(field: &FormField) -> Question {
    let mut text = shown(field.label());
    if let Some(description) = &field.description {
        text.push_str(&format!(" ({})", shown(description)));
    }
    if let Some(default) = &field.default {
        text.push_str(&format!("\nDefault: {default}"));
    }
    let (mut options, multi) = match &field.kind {
        FieldKind::Boolean => (vec![option("Yes", ""), option("No", "")], false),
        FieldKind::Choice(choices) => (
            choices
                .iter()
                .map(|c| option(&shown(&c.label), ""))
                .collect(),
            false,
        ),
        FieldKind::Choices { options, .. } => (
            options
                .iter()
                .map(|c| option(&shown(&c.label), ""))
                .collect(),
            true,
        ),
        _ => {
            text.push_str("\nType the answer.");
            (Vec::new(), false)
        }
    };
    if !field.required && !multi {
        options.push(option(LEAVE_EMPTY, "leave this field out"));
    }
    question("MCP input", text, options, multi)
}

/// The answers as the form's content.
fn content(form: &Form, answers: &[Answer]) -> Result<Map<String, Value>, FormError> {
    let mut content = Map::new();
    for (field, answer) in form.fields.iter().zip(answers) {
        let value = match answer {
            Answer::Chosen(labels) if labels.iter().any(|l| l == LEAVE_EMPTY) => continue,
            Answer::Chosen(labels) => chosen(field, labels)?,
            Answer::Other(typed) => field.parse_typed(typed)?,
        };
        content.insert(field.name.clone(), value);
    }
    Ok(content)
}

fn chosen(field: &FormField, labels: &[String]) -> Result<Value, FormError> {
    let value_of = |label: &String, choices: &[toolbelt_core::Choice]| {
        choices
            .iter()
            .find(|c| &shown(&c.label) == label)
            .map(|c| Value::String(c.value.clone()))
    };
    let value = match &field.kind {
        FieldKind::Boolean => Some(Value::Bool(labels.first().is_some_and(|l| l == "Yes"))),
        FieldKind::Choice(choices) => labels.first().and_then(|l| value_of(l, choices)),
        FieldKind::Choices { options, .. } => labels
            .iter()
            .map(|l| value_of(l, options))
            .collect::<Option<Vec<Value>>>()
            .map(Value::Array),
        _ => None,
    };
    value.ok_or_else(|| FormError::Invalid {
        field: field.label().to_string(),
        expected: "not one of the choices".to_string(),
    })
}

#[cfg(test)]
mod tests;
