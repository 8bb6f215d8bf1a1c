//! The editor as the person who approves: a call that needs confirmation is a
//! `session/request_permission` request carrying the call (title, kind, the diff of a
//! file change, the command) and the terminal's choices:
//!
//! | option id       | kind            | what it does                                          |
//! |-----------------|-----------------|-------------------------------------------------------|
//! | `allow_once`    | `allow_once`    | runs this call                                        |
//! | `allow_session` | `allow_always`  | runs it and does not ask again in this session        |
//! | `allow_always`  | `allow_always`  | also writes the rule the terminal's "always in this workspace" writes (`.qwen/settings.json`) |
//! | `reject_once`   | `reject_once`   | refuses this call                                     |
//! | `reject_always` | `reject_always` | refuses it and every later call the same rule covers, in this session, without asking |
//!
//! The "always" choices are offered only when the scheduler allows them
//! (`may_always_allow`: not for an explicit ask rule or protected configuration). A
//! cancelled turn drops the question, and the peer withdraws it (`$/cancel_request`);
//! an answer of `cancelled`, an unknown option or a failed request refuses the call.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol_schema::v1::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionResponse,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use serde_json::json;
use toolbelt_core::{BoxFuture, ConfirmationDetails, ConfirmationOutcome};
use toolbelt_engine::rules::RuleVocabulary;
use toolbelt_engine::{scheduler::Approval, scheduler::ApprovalRequest, scheduler::Approver};
use toolbelt_tools::workspace_rules;

use crate::rpc::Peer;
use crate::updates::{self, Updates};

/// The client of one session as its [`Approver`].
pub(crate) struct ClientApprover {
    pub peer: Arc<Peer>,
    pub updates: Arc<Updates>,
    /// Where "always in this workspace" writes its rule.
    pub project: PathBuf,
    /// The session's rule vocabulary, set once the session is made.
    pub vocabulary: OnceLock<RuleVocabulary>,
    /// The folder is not trusted: its `.qwen/settings.json` rules are ignored, so no
    /// "always in this workspace" is offered (or written), as in the terminal.
    pub untrusted: OnceLock<bool>,
    /// What `reject_always` refused, by rule: asked again, the answer is no.
    refused: Mutex<HashSet<String>>,
}

impl ClientApprover {
    pub(crate) fn new(peer: Arc<Peer>, updates: Arc<Updates>, project: PathBuf) -> Self {
        ClientApprover {
            peer,
            updates,
            project,
            vocabulary: OnceLock::new(),
            untrusted: OnceLock::new(),
            refused: Mutex::new(HashSet::new()),
        }
    }

    /// The rules an "always" answer about `request` forms (none when none may be).
    fn rules(&self, request: &ApprovalRequest) -> Vec<String> {
        let fallback = RuleVocabulary::default();
        let vocabulary = self.vocabulary.get().unwrap_or(&fallback);
        workspace_rules::rules_for(request, false, vocabulary)
    }

    fn refused_before(&self, rules: &[String]) -> bool {
        !rules.is_empty()
            && self
                .refused
                .lock()
                .is_ok_and(|refused| rules.iter().all(|r| refused.contains(r)))
    }

    /// Writes the workspace rule before the call runs, as the terminal does; a rule that
    /// cannot be written leaves the answer a session-long one, said to the editor.
    fn write_rules(&self, rules: &[String]) {
        if rules.is_empty() {
            return;
        }
        match workspace_rules::allow_in_workspace(&self.project, rules) {
            Ok(done) => tracing::info!("always allowed {rules:?} in {}", done.path.display()),
            Err(e) => self.updates.say(&format!(
                "\nCould not save the rule ({e}); allowed for this session only.\n"
            )),
        }
    }

    fn answer(&self, request: &ApprovalRequest, choice: &str, rules: &[String]) -> Approval {
        let session_wide = match request.details {
            ConfirmationDetails::Exec { .. } => ConfirmationOutcome::ProceedAlwaysRootCommand,
            _ => ConfirmationOutcome::ProceedAlways,
        };
        match choice {
            "allow_once" => ConfirmationOutcome::ProceedOnce.into(),
            "allow_session" if request.may_always_allow => session_wide.into(),
            "allow_always" if self.offers(request).workspace => {
                self.write_rules(rules);
                session_wide.into()
            }
            // An "always" not offered here counts once (the session-wide one where it
            // was offered).
            "allow_always" if request.may_always_allow => session_wide.into(),
            "allow_session" | "allow_always" => ConfirmationOutcome::ProceedOnce.into(),
            "reject_always" => {
                if let Ok(mut refused) = self.refused.lock() {
                    refused.extend(rules.iter().cloned());
                }
                Approval::deny(
                    "The person refused this call, and calls like it for the rest of the session.",
                )
            }
            "reject_once" => Approval::deny(""),
            other => Approval::deny(format!(
                "The editor answered with an unknown choice ({other}); the call was not run."
            )),
        }
    }
}

impl Approver for ClientApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let rules = self.rules(request);
            if self.refused_before(&rules) {
                return Approval::deny(
                    "The person refused calls like this one for the rest of the session.",
                );
            }
            let Some(session_id) = self.updates.session_id.get() else {
                return Approval::deny("The session is not ready to ask; the call was not run.");
            };
            let params = json!({
                "sessionId": session_id,
                "toolCall": question(request),
                "options": options(request, self.offers(request)),
            });
            let answer = self
                .peer
                .request("session/request_permission", params)
                .await;
            let answer = answer
                .ok()
                .and_then(|a| serde_json::from_value::<RequestPermissionResponse>(a).ok());
            match answer.map(|a| a.outcome) {
                Some(RequestPermissionOutcome::Selected(selected)) => {
                    self.answer(request, &selected.option_id.0, &rules)
                }
                Some(RequestPermissionOutcome::Cancelled) => {
                    Approval::deny("The person cancelled the question; the call was not run.")
                }
                _ => Approval::deny("The editor's answer could not be read; the call was not run."),
            }
        })
    }
}

/// Which "always" choices a question offers: the terminal's (`interactive/dialog.rs`).
#[derive(Debug, Clone, Copy)]
struct Always {
    session: bool,
    workspace: bool,
}

impl ClientApprover {
    fn offers(&self, request: &ApprovalRequest) -> Always {
        let plan = matches!(request.details, ConfirmationDetails::Plan { .. });
        let session = request.may_always_allow && !plan;
        let nameable = !self.rules(request).is_empty();
        let trusted = !self.untrusted.get().copied().unwrap_or(true);
        Always {
            session,
            workspace: session && nameable && trusted,
        }
    }
}

/// The call as the question shows it.
fn question(request: &ApprovalRequest) -> ToolCallUpdate {
    let content: Vec<ToolCallContent> = match &request.details {
        ConfirmationDetails::Edit {
            file_path,
            original_content,
            new_content,
            diff,
            ..
        } => vec![updates::diff_content(
            file_path,
            original_content.clone(),
            new_content.clone(),
            diff,
        )],
        ConfirmationDetails::Exec { command, .. } => vec![updates::text_content(command)],
        ConfirmationDetails::Plan { plan, .. } => vec![updates::text_content(plan)],
        ConfirmationDetails::Info { prompt, urls, .. } if !urls.is_empty() => {
            vec![updates::text_content(&format!(
                "{prompt}\n{}",
                urls.join("\n")
            ))]
        }
        _ => Vec::new(),
    };
    let fields = ToolCallUpdateFields::new()
        .title(request.description.clone())
        .kind(updates::acp_kind(request.kind))
        .status(ToolCallStatus::Pending)
        .content(content);
    ToolCallUpdate::new(request.call_id.clone(), fields)
}

/// The choices offered; the "always" ones only where the terminal offers them.
fn options(request: &ApprovalRequest, always: Always) -> Vec<PermissionOption> {
    let mut options = vec![PermissionOption::new(
        "allow_once",
        "Allow once",
        PermissionOptionKind::AllowOnce,
    )];
    if always.session {
        let session = match &request.details {
            ConfirmationDetails::Exec { root_commands, .. } if !root_commands.is_empty() => {
                format!("Allow `{}` for this session", root_commands.join("`, `"))
            }
            _ => format!("Allow {} for this session", request.tool),
        };
        options.push(PermissionOption::new(
            "allow_session",
            session,
            PermissionOptionKind::AllowAlways,
        ));
    }
    if always.workspace {
        options.push(PermissionOption::new(
            "allow_always",
            "Allow always in this workspace (.qwen/settings.json)",
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        "reject_once",
        "Deny",
        PermissionOptionKind::RejectOnce,
    ));
    if always.session {
        options.push(PermissionOption::new(
            "reject_always",
            "Deny for this session",
            PermissionOptionKind::RejectAlways,
        ));
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolbelt_core::Kind;

    fn request(may_always_allow: bool) -> ApprovalRequest {
        ApprovalRequest {
            call_id: "c1".into(),
            tool: "run_shell_command".into(),
            kind: Kind::Execute,
            description: "git status".into(),
            details: ConfirmationDetails::Exec {
                title: "Confirm Shell Command".into(),
                command: "git status".into(),
                root_commands: vec!["git".into()],
            },
            may_always_allow,
        }
    }

    fn ids(options: &[PermissionOption]) -> Vec<String> {
        options.iter().map(|o| o.option_id.0.to_string()).collect()
    }

    #[test]
    fn always_choices_are_offered_only_where_the_terminal_offers_them() {
        let both = Always {
            session: true,
            workspace: true,
        };
        let all = options(&request(true), both);
        let expected = [
            "allow_once",
            "allow_session",
            "allow_always",
            "reject_once",
            "reject_always",
        ];
        assert_eq!(ids(&all), expected);
        assert!(all[1].name.contains("`git`"), "{}", all[1].name);
        let untrusted = Always {
            session: true,
            workspace: false,
        };
        let session_only = options(&request(true), untrusted);
        let expected = [
            "allow_once",
            "allow_session",
            "reject_once",
            "reject_always",
        ];
        assert_eq!(ids(&session_only), expected);
        let none = Always {
            session: false,
            workspace: false,
        };
        assert_eq!(
            ids(&options(&request(false), none)),
            ["allow_once", "reject_once"]
        );
    }

    #[test]
    fn the_question_carries_the_command() {
        let asked = serde_json::to_value(question(&request(true))).unwrap();
        assert_eq!(asked["toolCallId"], "c1");
        assert_eq!(asked["kind"], "execute");
        assert_eq!(asked["status"], "pending");
        assert_eq!(asked["content"][0]["content"]["text"], "git status");
    }
}
