//! What an MCP server may ask of the session: the person, for input (elicitation), and
//! the model, for an answer (sampling).
//!
//! These are the domain shapes; the MCP crate turns the wire requests into them and the
//! answers back. Two parties answer, each installed into the session's [`ServerAskSlot`]
//! after the environment is built (like [`crate::QuestionSlot`]):
//!
//! - a [`ServerAsker`], by the front end that has a person (the terminal, a stream-JSON
//!   client): it shows an elicitation and returns the person's answer, and approves or
//!   refuses a sampling request;
//! - a [`ServerSampler`], by the session: the session's model answers an approved
//!   sampling request.
//!
//! An empty slot refuses: headless runs (`-p`, `tools call`, `mcp serve`) decline every
//! elicitation, and sample only for a server whose settings say `"sampling": "allow"`.

use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::BoxFuture;

/// A server asks the person for input.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationRequest {
    /// The server's alias in the settings.
    pub server: String,
    /// What the server says to the person (its text, not ours).
    pub message: String,
    /// A form to fill in, or a URL to visit.
    pub mode: ElicitationMode,
}

/// What kind of input a server asks for.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitationMode {
    /// Fill in a flat form.
    Form(Form),
    /// Visit a URL (already checked: `https`, or `http` on a loopback address). Opening
    /// it is the person's choice; an accepted answer says they agreed to.
    Url {
        /// Where to go.
        url: String,
        /// The server's id of this request.
        elicitation_id: String,
    },
}

/// A form: the fields of the server's requested schema (a flat object of primitive
/// properties), and that schema as sent, for a client that renders it itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// The fields, in the schema's order.
    pub fields: Vec<FormField>,
    /// The `requestedSchema` as the server sent it.
    pub schema: Value,
}

/// One field of a [`Form`].
#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    /// The property name (the key of the answer).
    pub name: String,
    /// A label for it, when the server gave one.
    pub title: Option<String>,
    /// What it is for.
    pub description: Option<String>,
    /// An answer must have it.
    pub required: bool,
    /// The server's default value.
    pub default: Option<Value>,
    /// What values it takes.
    pub kind: FieldKind,
}

/// The values a [`FormField`] takes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FieldKind {
    /// A string, perhaps of a `format` (`email`, `uri`, `date`, `date-time`).
    Text {
        /// The format the string must have.
        format: Option<String>,
        /// Fewest characters.
        min_length: Option<u64>,
        /// Most characters.
        max_length: Option<u64>,
    },
    /// A number.
    Number {
        /// Whole numbers only.
        integer: bool,
        /// Smallest value.
        minimum: Option<f64>,
        /// Largest value.
        maximum: Option<f64>,
    },
    /// True or false.
    Boolean,
    /// One of the choices.
    Choice(Vec<Choice>),
    /// Several of the choices.
    Choices {
        /// What may be picked.
        options: Vec<Choice>,
        /// Fewest picks.
        min_items: Option<u64>,
        /// Most picks.
        max_items: Option<u64>,
    },
}

/// One choice of a [`FieldKind::Choice`] or [`FieldKind::Choices`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The value sent back.
    pub value: String,
    /// What the person reads.
    pub label: String,
}

/// The person's answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAnswer {
    /// They gave the content (for a URL: agreed to open it; the content is empty).
    Accept(Map<String, Value>),
    /// They said no.
    Decline,
    /// They dismissed the question without choosing (or nobody answered).
    Cancel,
}

impl FormField {
    /// The label to show: the title, else the name.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }

    /// Checks one value against the field.
    pub fn check(&self, value: &Value) -> Result<(), FormError> {
        let name = self.label();
        match &self.kind {
            FieldKind::Text {
                format,
                min_length,
                max_length,
            } => {
                let text = value.as_str().ok_or(bad(name, "a text is expected"))?;
                let count = text.chars().count() as u64;
                if min_length.is_some_and(|min| count < min) {
                    return Err(bad(
                        name,
                        format!("at least {} characters", min_length.unwrap_or(0)),
                    ));
                }
                if max_length.is_some_and(|max| count > max) {
                    return Err(bad(
                        name,
                        format!("at most {} characters", max_length.unwrap_or(0)),
                    ));
                }
                check_format(name, format.as_deref(), text)
            }
            FieldKind::Number {
                integer,
                minimum,
                maximum,
            } => {
                let n = value.as_f64().ok_or(bad(name, "a number is expected"))?;
                if *integer && n.fract().abs() > 0.0 {
                    return Err(bad(name, "a whole number is expected"));
                }
                if minimum.is_some_and(|min| n < min) || maximum.is_some_and(|max| n > max) {
                    return Err(bad(
                        name,
                        format!(
                            "between {} and {}",
                            minimum.map_or("-∞".into(), |m| m.to_string()),
                            maximum.map_or("∞".into(), |m| m.to_string())
                        ),
                    ));
                }
                Ok(())
            }
            FieldKind::Boolean => value
                .as_bool()
                .map(|_| ())
                .ok_or(bad(name, "true or false is expected")),
            FieldKind::Choice(options) => match value.as_str() {
                Some(v) if options.iter().any(|o| o.value == v) => Ok(()),
                _ => Err(bad(name, "not one of the choices")),
            },
            FieldKind::Choices {
                options,
                min_items,
                max_items,
            } => {
                let picked = value.as_array().ok_or(bad(name, "a list is expected"))?;
                let known = |v: &Value| {
                    v.as_str()
                        .is_some_and(|v| options.iter().any(|o| o.value == v))
                };
                if !picked.iter().all(known) {
                    return Err(bad(name, "not one of the choices"));
                }
                let count = picked.len() as u64;
                if min_items.is_some_and(|min| count < min)
                    || max_items.is_some_and(|max| count > max)
                {
                    return Err(bad(name, "a wrong number of choices"));
                }
                Ok(())
            }
        }
    }

    /// The value a person typed, as this field takes it (`42` for a number, `yes` for a
    /// boolean, a choice's label or value, choices separated by commas).
    pub fn parse_typed(&self, typed: &str) -> Result<Value, FormError> {
        let typed = typed.trim();
        let pick = |options: &[Choice], text: &str| -> Result<Value, FormError> {
            options
                .iter()
                .find(|o| o.value == text || o.label.eq_ignore_ascii_case(text))
                .map(|o| Value::String(o.value.clone()))
                .ok_or(bad(self.label(), "not one of the choices"))
        };
        let value = match &self.kind {
            FieldKind::Text { .. } => Value::String(typed.to_string()),
            FieldKind::Number { .. } => serde_json::from_str::<serde_json::Number>(typed)
                .map(Value::Number)
                .map_err(|_| bad(self.label(), "a number is expected"))?,
            FieldKind::Boolean => match typed.to_ascii_lowercase().as_str() {
                "yes" | "y" | "true" => Value::Bool(true),
                "no" | "n" | "false" => Value::Bool(false),
                _ => return Err(bad(self.label(), "yes or no is expected")),
            },
            FieldKind::Choice(options) => pick(options, typed)?,
            FieldKind::Choices { options, .. } => Value::Array(
                typed
                    .split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(|t| pick(options, t))
                    .collect::<Result<_, _>>()?,
            ),
        };
        self.check(&value)?;
        Ok(value)
    }
}

impl Form {
    /// Checks an answer: every required field present, every value as its field says,
    /// no key the form does not have.
    pub fn check(&self, content: &Map<String, Value>) -> Result<(), FormError> {
        for key in content.keys() {
            if !self.fields.iter().any(|f| &f.name == key) {
                return Err(FormError::UnknownField(key.clone()));
            }
        }
        for field in &self.fields {
            match content.get(&field.name) {
                Some(value) => field.check(value)?,
                None if field.required => {
                    return Err(FormError::Missing(field.label().to_string()));
                }
                None => {}
            }
        }
        Ok(())
    }
}

/// Why an answer does not fit its form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormError {
    /// The answer has a key the form does not.
    #[error("{0}: the form has no such field")]
    UnknownField(String),
    /// A required field has no answer.
    #[error("{0}: an answer is required")]
    Missing(String),
    /// A value is not what its field takes.
    #[error("{field}: {expected}")]
    Invalid {
        /// The field's label.
        field: String,
        /// What it takes.
        expected: String,
    },
}

fn bad(field: &str, expected: impl Into<String>) -> FormError {
    FormError::Invalid {
        field: field.to_string(),
        expected: expected.into(),
    }
}

/// The formats of the restricted schema, checked loosely: enough to catch a slip, not
/// to prove an address exists.
fn check_format(name: &str, format: Option<&str>, text: &str) -> Result<(), FormError> {
    let fine = match format {
        Some("email") => text
            .split_once('@')
            .is_some_and(|(user, host)| !user.is_empty() && host.contains('.')),
        Some("uri") => text.split_once(':').is_some_and(|(scheme, rest)| {
            !rest.is_empty()
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }),
        Some("date") => is_date(text),
        Some("date-time") => text.len() > 10 && is_date(&text[..10]) && text.contains('T'),
        _ => true,
    };
    if fine {
        Ok(())
    } else {
        Err(bad(
            name,
            format!("not a valid {}", format.unwrap_or("value")),
        ))
    }
}

/// `YYYY-MM-DD`.
fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    matches!(parts.as_slice(), [y, m, d]
        if y.len() == 4 && m.len() == 2 && d.len() == 2
            && [y, m, d].iter().all(|p| p.chars().all(|c| c.is_ascii_digit()))
            && (1..=12).contains(&m.parse::<u8>().unwrap_or(0))
            && (1..=31).contains(&d.parse::<u8>().unwrap_or(0)))
}

/// A server asks the session's model for an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingRequest {
    /// The server's alias in the settings.
    pub server: String,
    /// The system prompt it asks for.
    pub system_prompt: Option<String>,
    /// The conversation, text only.
    pub messages: Vec<SampledMessage>,
    /// The most tokens of the answer: the server's, capped at [`SAMPLING_MAX_TOKENS`].
    pub max_tokens: u32,
    /// The temperature it asks for.
    pub temperature: Option<f32>,
}

/// The most tokens a server's sampling request gets, whatever it asks.
pub const SAMPLING_MAX_TOKENS: u32 = 8192;

/// One message of a [`SamplingRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampledMessage {
    /// Said by the assistant (else by the user).
    pub assistant: bool,
    /// Its text.
    pub text: String,
}

/// The model's answer to a [`SamplingRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampledReply {
    /// The answer.
    pub text: String,
    /// The model that answered.
    pub model: String,
    /// The token limit cut it off.
    pub truncated: bool,
}

/// The front end's person, for what servers ask.
pub trait ServerAsker: Send + Sync {
    /// Shows the elicitation and returns the answer (a form's content already checked
    /// against the form). Must return promptly once `cancel` is cancelled.
    fn elicit<'a>(
        &'a self,
        request: &'a ElicitationRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, ElicitationAnswer>;

    /// Whether the person lets the session's model answer `request`; `Err` says why not.
    fn approve_sampling<'a>(
        &'a self,
        request: &'a SamplingRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<(), crate::EmbedderError>>;
}

/// The session's model, for sampling requests already approved.
pub trait ServerSampler: Send + Sync {
    /// The model's answer, with no tools offered to it.
    fn sample<'a>(
        &'a self,
        request: &'a SamplingRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<SampledReply, crate::EmbedderError>>;
}

#[derive(Default)]
struct Installed {
    asker: OnceLock<Arc<dyn ServerAsker>>,
    sampler: OnceLock<Arc<dyn ServerSampler>>,
}

/// Where the session's [`ServerAsker`] and [`ServerSampler`] are put; shared by every
/// clone (each MCP server holds one). Empty: nobody is asked, nothing is sampled.
#[derive(Clone, Default)]
pub struct ServerAskSlot(Arc<Installed>);

impl ServerAskSlot {
    /// Sets the asker; a second call is ignored.
    pub fn set_asker(&self, asker: Arc<dyn ServerAsker>) {
        let _ = self.0.asker.set(asker);
    }

    /// Sets the sampler; a second call is ignored.
    pub fn set_sampler(&self, sampler: Arc<dyn ServerSampler>) {
        let _ = self.0.sampler.set(sampler);
    }

    /// The asker, `None` when nobody can be asked (headless).
    pub fn asker(&self) -> Option<&Arc<dyn ServerAsker>> {
        self.0.asker.get()
    }

    /// The sampler, `None` when the run has no model.
    pub fn sampler(&self) -> Option<&Arc<dyn ServerSampler>> {
        self.0.sampler.get()
    }
}

impl std::fmt::Debug for ServerAskSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerAskSlot")
            .field("asker", &self.asker().is_some())
            .field("sampler", &self.sampler().is_some())
            .finish()
    }
}

/// Every slot is equal: it is where answers come from, not configuration to compare.
impl PartialEq for ServerAskSlot {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ServerAskSlot {}

#[cfg(test)]
mod tests;
