//! Where a server stands, as `toolbelt mcp list`, `/mcp` and stream-JSON's
//! `mcp_server_status` show it: connecting, connected, failed with the reason, failed
//! and waiting for the session's next start (`background`), or waiting for an OAuth
//! login (`oauth`).

use toolbelt_config::redact::redact;

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerStatus {
    /// Starting or doing the handshake.
    Connecting,
    /// Handshake done; tools listed.
    Connected,
    /// Why it is not usable.
    Failed(String),
    /// It answered 401: it wants an OAuth login first (what to run). Not started again
    /// until then.
    NeedsLogin(String),
    /// The last start failed (why); the session starts it again `at` (see
    /// `background`: attempt `attempt` of `attempts`).
    Retrying {
        /// Why the last start failed.
        why: String,
        /// The number of the next attempt.
        attempt: u32,
        /// How many attempts there are in all.
        attempts: u32,
        /// When the next attempt starts.
        at: std::time::Instant,
    },
}

impl std::fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerStatus::Connecting => f.write_str("connecting"),
            ServerStatus::Connected => f.write_str("connected"),
            ServerStatus::Failed(why) => write!(f, "failed: {why}"),
            ServerStatus::NeedsLogin(hint) => write!(f, "needs login: {hint}"),
            ServerStatus::Retrying {
                why,
                attempt,
                attempts,
                at,
            } => {
                // Whole seconds, rounded up: "in 0 s" would read as "now, or never".
                let left = at.saturating_duration_since(std::time::Instant::now());
                let secs = left.as_millis().div_ceil(1000);
                write!(
                    f,
                    "failed: {why}; start {attempt} of {attempts} in {secs} s"
                )
            }
        }
    }
}

impl ServerStatus {
    /// The status with its reason masked: a reason may quote a URL or a command line.
    pub(crate) fn masked(self) -> ServerStatus {
        match self {
            ServerStatus::Failed(why) => ServerStatus::Failed(redact(&why)),
            ServerStatus::Retrying {
                why,
                attempt,
                attempts,
                at,
            } => ServerStatus::Retrying {
                why: redact(&why),
                attempt,
                attempts,
                at,
            },
            other => other,
        }
    }
}
