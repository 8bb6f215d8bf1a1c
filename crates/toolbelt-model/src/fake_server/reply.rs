//! The script's vocabulary: how the fake server answers one request.

use crate::ModelTurn;

/// How the server answers one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A streamed turn, written in pieces of `piece` bytes.
    Stream {
        /// The turn.
        turn: ModelTurn,
        /// Bytes per write.
        piece: usize,
    },
    /// This SSE text, exactly, then a clean end (for malformed streams).
    RawStream(String),
    /// The start of a streamed turn (`bytes` of it), then the connection is dropped.
    Drop {
        /// The turn.
        turn: ModelTurn,
        /// How many of its bytes are sent.
        bytes: usize,
    },
    /// A whole JSON response (for clients that do not stream).
    Whole(ModelTurn),
    /// Waits until `parties` requests (this one included) have reached the rendezvous
    /// `name`, then answers `then`. Not reached within ten seconds: a violation, and
    /// `then` anyway.
    Rendezvous {
        /// The rendezvous' name.
        name: String,
        /// How many requests meet there.
        parties: usize,
        /// The answer once they have.
        then: Box<Reply>,
    },
    /// `then`, after `delay` (a model's thinking time, for benchmarks).
    Delayed {
        /// How long to wait.
        delay: std::time::Duration,
        /// The answer after it.
        then: Box<Reply>,
    },
    /// The turn's first `events` server-sent events, then an error event of type `kind`
    /// (`overloaded_error`, ...) and the end of the stream.
    StreamError {
        /// The turn begun.
        turn: ModelTurn,
        /// How many of its events are sent first.
        events: usize,
        /// The error's type.
        kind: String,
        /// The error's message.
        message: String,
    },
    /// An HTTP error with a JSON error body.
    Status {
        /// The HTTP status.
        status: u16,
        /// A `Retry-After` header to send.
        retry_after: Option<String>,
        /// The error message in the body.
        message: String,
    },
}

impl Reply {
    /// A streamed `turn`, in one piece.
    pub fn turn(turn: ModelTurn) -> Reply {
        Reply::Stream { turn, piece: 7 }
    }

    /// A streamed text answer.
    pub fn text(text: &str) -> Reply {
        Reply::turn(ModelTurn {
            text: text.to_string(),
            ..Default::default()
        })
    }

    /// `then`, once `parties` requests have reached the rendezvous `name`.
    pub fn rendezvous(name: &str, parties: usize, then: Reply) -> Reply {
        Reply::Rendezvous {
            name: name.to_string(),
            parties,
            then: Box::new(then),
        }
    }

    /// An HTTP error `status` with `message`.
    pub fn status(status: u16, message: &str) -> Reply {
        Reply::Status {
            status,
            retry_after: None,
            message: message.to_string(),
        }
    }
}
