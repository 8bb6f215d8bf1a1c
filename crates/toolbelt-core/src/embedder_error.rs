//! [`EmbedderError`]: how an implementation of one of toolbelt's traits says it could not
//! do what was asked (the person dismissed a question, a callback failed, a transport
//! broke), in its own words.
//!
//! The traits are implemented by front ends and embedders, so toolbelt cannot know the
//! causes; a type of its own, rather than a `String`, keeps such a failure apart from
//! toolbelt's own errors where both meet, and lets a caller match on it.

/// A failure reported by the implementation of a trait toolbelt calls (`AskUser`,
/// `ServerAsker`, hook callbacks, an SDK's MCP channel, ...). Its text is shown as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct EmbedderError {
    message: String,
}

impl EmbedderError {
    /// A failure described by `message`.
    pub fn new(message: impl Into<String>) -> Self {
        EmbedderError {
            message: message.into(),
        }
    }

    /// The implementation's words.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<String> for EmbedderError {
    fn from(message: String) -> Self {
        EmbedderError { message }
    }
}

impl From<&str> for EmbedderError {
    fn from(message: &str) -> Self {
        EmbedderError::new(message)
    }
}

impl From<EmbedderError> for String {
    fn from(error: EmbedderError) -> Self {
        error.message
    }
}
