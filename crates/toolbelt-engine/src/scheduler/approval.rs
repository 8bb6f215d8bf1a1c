//! Who decides whether a call runs: permission rules, the approval mode, what the person
//! already allowed in this session, and, when all of those leave it open, the person.
//!
//! The order, per call (the session's hooks, when it has any, in `call_hooks.rs`):
//! 0. PreToolUse hooks: `deny` → refused with their reason; `allow` and `ask` count
//!    below as an allow or an ask rule would (never past 1, 2 or protected
//!    configuration); their `updatedInput` is validated and judged from step 1 again;
//! 1. rules `Deny` → refused, naming the rule; rules `Ask` → the person must be asked
//!    (even in yolo mode: an explicit ask rule is the stricter word);
//!    rules `Allow` → runs (outside plan mode);
//! 2. plan mode refuses every kind that is not read-only, except `exit_plan_mode`;
//!    (1 and 2 are judged before anything of the call runs, a declared tool's
//!    `prepare` command included: a refused call runs nothing; with no approver, steps
//!    3 to 5 are judged before `prepare` too, since nobody can be asked and a call that
//!    would ask is refused);
//! 3. a call whose invocation asks no confirmation runs;
//! 4. yolo approves everything; auto-edit approves edit confirmations; "always allow"
//!    answers of this session approve what they cover. A change to protected
//!    configuration (`.qwen`, `.agents`, `.git`, see [`toolbelt_core::ProtectedPaths`]) is approved
//!    here only by yolo, and in step 1 only by an allow rule that names the file
//!    (`scheduler/protect.rs`); its question offers no "always";
//! 5. otherwise PermissionRequest hooks may answer in the person's place (not for
//!    protected configuration, not when a PreToolUse hook asked), then the [`Approver`]
//!    is asked. Without one (headless) the call is refused with a message that tells
//!    the model why and what the person can do.
//!
//! Asking is an async trait object so the headless command line, tests and a future
//! terminal UI plug in their own way of asking.

use std::collections::HashSet;
use std::sync::Mutex;

use crate::registry::Origin;
use crate::rules::{Decision, PermissionRules, RuleList, RuleVocabulary};
use toolbelt_config::settings::Settings;
use toolbelt_core::{BoxFuture, Kind, PermissionSubject};
use toolbelt_core::{ConfirmationDetails, ConfirmationOutcome};

/// What a person is asked about.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    /// The model's id for the call.
    pub call_id: String,
    /// Registered name of the tool.
    pub tool: String,
    /// The tool's kind.
    pub kind: Kind,
    /// One line saying what the call will do.
    pub description: String,
    /// What to show: the diff, the command, the plan.
    pub details: ConfirmationDetails,
    /// False when an explicit ask rule forced the question ("always allow" would
    /// contradict the rule) or the call changes protected configuration (it is asked
    /// every time), so a display should not offer it; an "always" answer is then taken
    /// as once.
    pub may_always_allow: bool,
}

/// Asks a person. Implementations: a terminal prompt, a UI, a scripted test answerer.
/// The scheduler stops waiting when the turn is cancelled, so an implementation need
/// not watch for cancellation itself.
pub trait Approver: Send + Sync {
    /// The person's answer. A display should offer the "always" answers only when
    /// `request.may_always_allow` is true. A bare [`ConfirmationOutcome`] converts
    /// with `.into()`.
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval>;
}

/// An approver's whole answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    /// Whether the call runs, and what this answer allows from now on.
    pub outcome: ConfirmationOutcome,
    /// On a refusal, what the person wants the model to know (why, what to do
    /// instead); it follows the standard refusal text. Ignored when the call runs.
    pub message: Option<String>,
    /// Run with these arguments instead of the model's (the person corrected the
    /// call). They are validated again and the permission rules and plan mode are
    /// applied to them again; the person is not asked a second time. Ignored on a
    /// refusal.
    pub arguments: Option<serde_json::Value>,
}

impl Approval {
    /// A refusal with a message for the model.
    pub fn deny(message: impl Into<String>) -> Self {
        let message = message.into();
        Approval {
            outcome: ConfirmationOutcome::Cancel,
            message: (!message.trim().is_empty()).then_some(message),
            arguments: None,
        }
    }

    /// Runs the call once, with `arguments` in place of the model's.
    pub fn with_arguments(arguments: serde_json::Value) -> Self {
        Approval {
            outcome: ConfirmationOutcome::ProceedOnce,
            message: None,
            arguments: Some(arguments),
        }
    }
}

impl From<ConfirmationOutcome> for Approval {
    fn from(outcome: ConfirmationOutcome) -> Self {
        Approval {
            outcome,
            message: None,
            arguments: None,
        }
    }
}

/// "Always allow" answers given in this session.
#[derive(Debug, Default)]
pub struct SessionAllowances {
    inner: Mutex<Allowed>,
}

#[derive(Debug, Default)]
struct Allowed {
    tools: HashSet<String>,
    mcp_servers: HashSet<String>,
    root_commands: HashSet<String>,
}

impl SessionAllowances {
    /// Whether an earlier answer covers this call.
    pub fn covers(&self, tool: &str, origin: &Origin, details: &ConfirmationDetails) -> bool {
        let Ok(allowed) = self.inner.lock() else {
            return false;
        };
        if allowed.tools.contains(tool) {
            return true;
        }
        let server = mcp_server(origin, details);
        if server.is_some_and(|s| allowed.mcp_servers.contains(s)) {
            return true;
        }
        match details {
            ConfirmationDetails::Exec { root_commands, .. } => {
                !root_commands.is_empty()
                    && root_commands
                        .iter()
                        .all(|c| allowed.root_commands.contains(c))
            }
            _ => false,
        }
    }

    /// Remembers what `outcome` allows from now on.
    pub fn remember(
        &self,
        outcome: ConfirmationOutcome,
        tool: &str,
        origin: &Origin,
        details: &ConfirmationDetails,
    ) {
        let Ok(mut allowed) = self.inner.lock() else {
            return;
        };
        // A shell command is remembered by its root commands, never as the whole tool:
        // the shell tool leaves them out when no rule may be formed (a wrapper, `eval`, a
        // name it cannot read), and then nothing is remembered.
        if let ConfirmationDetails::Exec { root_commands, .. } = details {
            if matches!(
                outcome,
                ConfirmationOutcome::ProceedAlways
                    | ConfirmationOutcome::ProceedAlwaysServer
                    | ConfirmationOutcome::ProceedAlwaysRootCommand
            ) {
                allowed.root_commands.extend(root_commands.iter().cloned());
            }
            return;
        }
        match outcome {
            ConfirmationOutcome::ProceedAlways => {
                allowed.tools.insert(tool.to_string());
            }
            ConfirmationOutcome::ProceedAlwaysServer => match mcp_server(origin, details) {
                Some(server) => {
                    allowed.mcp_servers.insert(server.to_string());
                }
                None => {
                    allowed.tools.insert(tool.to_string());
                }
            },
            ConfirmationOutcome::ProceedAlwaysRootCommand => match details {
                ConfirmationDetails::Exec { root_commands, .. } if !root_commands.is_empty() => {
                    allowed.root_commands.extend(root_commands.iter().cloned());
                }
                _ => {
                    allowed.tools.insert(tool.to_string());
                }
            },
            _ => {}
        }
    }
}

fn mcp_server<'a>(origin: &'a Origin, details: &'a ConfirmationDetails) -> Option<&'a str> {
    match (origin, details) {
        (Origin::Mcp { server }, _) => Some(server),
        (_, ConfirmationDetails::Mcp { server, .. }) => Some(server),
        _ => None,
    }
}

/// The permission rules of a session, as the scheduler applies them.
#[derive(Debug, Clone)]
pub struct Permissions {
    rules: PermissionRules,
}

impl Permissions {
    /// `permissions.*`, `tools.allowed` and `tools.exclude` (see
    /// [`PermissionRules::from_settings`]), path rules anchored at the process's current
    /// directory. A session that knows its roots uses [`Permissions::from_rules`].
    pub fn from_settings(settings: &Settings, vocabulary: &RuleVocabulary) -> Self {
        Permissions::from_rules(PermissionRules::from_settings(settings, vocabulary))
    }

    /// No rules yet; rules added later are parsed with `vocabulary`.
    pub fn new(vocabulary: &RuleVocabulary) -> Self {
        Permissions::from_rules(PermissionRules::new(vocabulary))
    }

    /// Rules already built (and anchored with [`PermissionRules::with_base`]).
    pub fn from_rules(rules: PermissionRules) -> Self {
        Permissions { rules }
    }

    /// Adds a rule from a flag (`--allowed-tools`, `--exclude-tools`).
    pub fn add(&mut self, list: RuleList, text: &str) {
        self.rules.add(list, text);
    }

    /// What the rules say about a call of `tool` with `subject` (deny > ask > allow >
    /// [`Decision::Default`]).
    pub fn evaluate(&self, tool: &str, subject: &PermissionSubject) -> Decision {
        self.rules.evaluate(tool, subject)
    }

    /// The rules themselves.
    pub fn rules(&self) -> &PermissionRules {
        &self.rules
    }

    /// Entries that did not parse, for a warning.
    pub fn invalid(&self) -> &[String] {
        &self.rules.invalid
    }

    /// What to tell the model about the deny rule that refuses the call: the rule, and,
    /// when one of its shell commands cannot be read (see
    /// [`toolbelt_core::ShellCommand::unreadable`]), why every deny rule covers it.
    pub fn deny_explanation(&self, tool: &str, subject: &PermissionSubject) -> Option<String> {
        let rule = self.deny_rule(tool, subject)?;
        let mut text = format!(" Matching deny rule: \"{rule}\".");
        if let Some(note) = self.rules.unreadable_note(subject) {
            text.push(' ');
            text.push_str(&note);
        }
        Some(text)
    }

    /// The deny rule that refuses the call (or one of its shell commands or paths), as
    /// written. Path rules are read as operations, as in [`PermissionRules::verdict`].
    pub fn deny_rule(&self, tool: &str, subject: &PermissionSubject) -> Option<String> {
        let verdict = self.rules.verdict(tool, subject);
        (verdict.decision == Decision::Deny)
            .then_some(verdict.rule)
            .flatten()
    }
}
