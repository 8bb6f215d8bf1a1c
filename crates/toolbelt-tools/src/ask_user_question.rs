//! `ask_user_question`: the model asks the person one to four questions with choices
//! (Qwen Code's schema: `questions[{question, header, options[{label, description}],
//! multiSelect}]`) and gets the answers back as text.
//!
//! The asking is the display's: the tool hands the questions to the session's
//! [`toolbelt_core::AskUser`] (the environment's `ask_user` slot, filled by the
//! interactive terminal). With nobody to ask (headless runs, `tools call`, `mcp serve`)
//! the call is refused with `execution_denied`, so the model goes on by its own judgement
//! instead of waiting. Kind `think`: the question is itself the confirmation, so the
//! scheduler never asks one first, in every approval mode.

use std::collections::HashSet;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::{
    Answer, BoxFuture, ConfirmationDetails, ErrorKind, ExecContext, Invocation, Kind, Question,
    QuestionOption, Tool, ToolEnvironment, ToolError, ToolFacts, ToolResult,
};

/// The longest `header`, in characters (Qwen Code's limit).
pub(crate) const MAX_HEADER_CHARS: usize = 12;

/// The `ask_user_question` tool: questions with choices for the person.
pub struct AskUserQuestion {
    schema: Value,
}

impl AskUserQuestion {
    /// The tool over a session's environment.
    pub fn new(_env: Arc<ToolEnvironment>) -> Self {
        let schema = crate::params::schema_for::<Params>();
        AskUserQuestion { schema }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(
        length(min = 1, max = 4),
        description = "One to four questions to ask the user at once."
    )]
    questions: Vec<QuestionParam>,
    // Read for its shape only: the schema offers it, nothing uses it.
    #[serde(rename = "metadata")]
    #[schemars(description = "Optional bookkeeping; not shown to the user.")]
    _metadata: Option<Metadata>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
struct QuestionParam {
    #[schemars(description = "The complete question, ending with a question mark.")]
    question: String,
    #[schemars(
        description = "A very short label for the question (at most 12 characters), e.g. \"Database\"."
    )]
    header: String,
    #[schemars(
        length(min = 2, max = 4),
        description = "Two to four distinct choices. The user can always answer in their own words instead."
    )]
    options: Vec<OptionParam>,
    #[serde(default)]
    #[schemars(description = "Whether several choices may be picked (default false).")]
    multi_select: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct OptionParam {
    #[schemars(description = "The choice, in a few words.")]
    label: String,
    #[schemars(description = "What choosing it means or implies.")]
    description: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Metadata {
    #[allow(dead_code)] // kept for the schema; see `Params::_metadata`
    #[schemars(description = "Where the question comes from (for logs).")]
    source: Option<String>,
}

/// The tool as a built-in (see [`crate::builtin`]): its rule words and how a session
/// makes it.
pub(crate) const BUILTIN: crate::builtin::Builtin = crate::builtin::Builtin {
    name: "ask_user_question",
    rule_aliases: &[],
    path_operation: None,
    make: crate::builtin::Make::Env(|env| {
        Some(std::sync::Arc::new(AskUserQuestion::new(env.clone())))
    }),
};

impl Tool for AskUserQuestion {
    fn name(&self) -> &str {
        "ask_user_question"
    }
    fn display_name(&self) -> &str {
        "AskUserQuestion"
    }
    fn description(&self) -> &str {
        "Asks the user one to four multiple-choice questions and waits for the answers. \
         Use it when a decision is the user's (a preference, a trade-off, an ambiguous requirement) and guessing would waste work; \
         do not use it for things you can find out yourself by reading the code. \
         Each question has a short header (at most 12 characters), two to four options with a label and a description, and multiSelect when several may apply; \
         the user may also answer in their own words. Only works in an interactive session: headless, the call is refused and you should decide yourself."
    }
    fn kind(&self) -> Kind {
        Kind::Think
    }
    /// Only a person can answer it.
    fn facts(&self) -> ToolFacts {
        ToolFacts {
            asks_a_person: true,
            ..ToolFacts::default()
        }
    }
    fn needs_confirmation(&self) -> bool {
        false
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        let questions = check(params.questions)?;
        Ok(Box::new(AskCall { questions }))
    }
}

/// What the schema cannot say: non-empty texts, distinct questions and labels.
fn check(questions: Vec<QuestionParam>) -> Result<Vec<Question>, ToolError> {
    if questions.is_empty() || questions.len() > 4 {
        return Err(ToolError::invalid_params(format!(
            "ask one to four questions, not {}",
            questions.len()
        )));
    }
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(questions.len());
    for (i, q) in questions.into_iter().enumerate() {
        let question = q.question.trim().to_string();
        let header = q.header.trim().to_string();
        if question.is_empty() {
            return Err(ToolError::invalid_params(format!(
                "questions[{i}].question is empty"
            )));
        }
        if header.is_empty() || header.chars().count() > MAX_HEADER_CHARS {
            return Err(ToolError::invalid_params(format!(
                "questions[{i}].header must be 1 to {MAX_HEADER_CHARS} characters, got \"{header}\""
            )));
        }
        if !seen.insert(question.clone()) {
            return Err(ToolError::invalid_params(format!(
                "questions[{i}] repeats the question \"{question}\"; ask each question once"
            )));
        }
        if q.options.len() < 2 || q.options.len() > 4 {
            return Err(ToolError::invalid_params(format!(
                "questions[{i}] needs two to four options, not {}",
                q.options.len()
            )));
        }
        let mut labels = HashSet::new();
        let mut options = Vec::with_capacity(q.options.len());
        for (j, o) in q.options.into_iter().enumerate() {
            let label = o.label.trim().to_string();
            if label.is_empty() {
                return Err(ToolError::invalid_params(format!(
                    "questions[{i}].options[{j}].label is empty"
                )));
            }
            if !labels.insert(label.clone()) {
                return Err(ToolError::invalid_params(format!(
                    "questions[{i}] has the option \"{label}\" twice; labels must differ"
                )));
            }
            options.push(QuestionOption {
                label,
                description: o.description.trim().to_string(),
            });
        }
        out.push(Question {
            question,
            header,
            options,
            multi_select: q.multi_select,
        });
    }
    Ok(out)
}

struct AskCall {
    questions: Vec<Question>,
}

impl Invocation for AskCall {
    fn describe(&self) -> String {
        match self.questions.as_slice() {
            [one] => format!("Ask the user: {}", one.question),
            many => format!("Ask the user {} questions", many.len()),
        }
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let Some(asker) = ctx.env.ask_user.get().cloned() else {
                return ToolResult::err(
                    ErrorKind::ExecutionDenied,
                    "ask_user_question needs an interactive session and this one has nobody to ask \
                     (headless or over MCP). Decide by your own judgement, say which assumption you made, \
                     and go on.",
                );
            };
            let answers = tokio::select! {
                answers = asker.ask(&self.questions, &ctx.cancel) => answers,
                () = ctx.cancel.cancelled() => {
                    return ToolResult::err(ErrorKind::Cancelled, "the questions were cancelled before the user answered");
                }
            };
            match answers {
                Ok(answers) if answers.len() == self.questions.len() => {
                    ToolResult::text(answers_text(&self.questions, &answers))
                }
                Ok(answers) => ToolResult::err(
                    ErrorKind::ExecutionFailed,
                    format!(
                        "the display returned {} answers for {} questions",
                        answers.len(),
                        self.questions.len()
                    ),
                ),
                Err(why) => ToolResult::err(
                    ErrorKind::ExecutionDenied,
                    format!(
                        "The user did not answer ({why}). Do not ask the same again; go on with what you know or ask what they want instead."
                    ),
                ),
            }
        })
    }
}

/// The answers as the model reads them: each question with its header and what was
/// picked (or written).
pub(crate) fn answers_text(questions: &[Question], answers: &[Answer]) -> String {
    let mut text = String::from("The user answered your questions:\n");
    for (i, (q, a)) in questions.iter().zip(answers).enumerate() {
        let answer = match a {
            Answer::Chosen(labels) if labels.is_empty() => "(nothing chosen)".to_string(),
            Answer::Chosen(labels) => labels.join(", "),
            Answer::Other(own) => format!("in their own words: {}", own.trim()),
        };
        text.push_str(&format!(
            "{}. [{}] {}\n   Answer: {answer}\n",
            i + 1,
            q.header,
            q.question
        ));
    }
    text.push_str("Go on with these answers in mind.");
    text
}

#[cfg(test)]
mod tests;
