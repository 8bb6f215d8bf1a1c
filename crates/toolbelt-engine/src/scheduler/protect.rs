//! Protected configuration in the approval decision (which paths, and why: see
//! [`toolbelt_core::ProtectedPaths`]).
//!
//! A change to a protected path (an edit confirmation whose file is one) is asked of the
//! person. What still approves it without a question:
//! - yolo mode: the person accepted every call, and the shell, which yolo approves, can
//!   write the same files anyway;
//! - an allow rule of the session with a path specifier that matches the file *and*
//!   spells out its protected name (`Edit(.qwen/settings.json)`, `Edit(/.git/hooks/*)`):
//!   the person named it. `Edit(**)` matches but names nothing, so it does not count.
//!
//! What no longer approves it: auto-edit mode, an "always allow" answer of the session, a
//! bare allow rule (`--allowed-tools edit`, `permissions.allow: ["Edit"]`) and a turn's
//! grants (a skill's `allowed-tools`: the skill's author, not the person, wrote them).
//! The question offers no "always" answer, and one given anyway counts once. Headless,
//! the refusal names the file, says why it is protected and how to allow it.

use super::approval::Permissions;
use crate::rules::RuleVocabulary;
use toolbelt_core::ConfirmationDetails;
use toolbelt_core::PathOperation;
use toolbelt_core::PermissionSubject;
use toolbelt_core::Protection;
use toolbelt_core::WorkspaceRoots;
use toolbelt_core::{ErrorKind, ToolError};

/// A call that changes a protected file.
pub(super) struct ProtectedChange {
    /// The file as a rule names it: relative to the primary root (`.qwen/settings.json`),
    /// or `//abs/path` outside it.
    rule_path: String,
    /// The file as a person reads it.
    shown: String,
    protection: Protection,
}

impl ProtectedChange {
    /// The protected file `details` would change, if any.
    pub(super) fn of(roots: &WorkspaceRoots, details: &ConfirmationDetails) -> Option<Self> {
        let path = details.changed_path()?;
        let protection = roots.protection(path)?;
        let real = toolbelt_core::resolve_best_effort(path);
        let rule_path = match roots.primary().and_then(|p| real.strip_prefix(p).ok()) {
            Some(rel) => globset::escape(&rel.to_string_lossy()),
            None => format!("/{}", globset::escape(&real.to_string_lossy())),
        };
        Some(ProtectedChange {
            rule_path,
            shown: roots.display_relative(&real),
            protection,
        })
    }

    /// Whether an allow rule of `permissions` (the session's, without the turn's grants)
    /// names this file for one of `names` (the tool and the tool it runs).
    pub(super) fn named_by_rule(
        &self,
        permissions: &Permissions,
        names: &[&str],
        subject: &PermissionSubject,
    ) -> bool {
        let marker = self.protection.marker.to_ascii_lowercase();
        names.iter().any(|name| {
            permissions
                .rules()
                .specific_allow_rules(name, subject)
                .iter()
                .any(|rule| {
                    rule.specifier
                        .as_deref()
                        .is_some_and(|s| s.to_ascii_lowercase().contains(&marker))
                })
        })
    }

    /// The question with the reason in its title and in the description, so a person
    /// who approves edits in general sees why this one is asked.
    pub(super) fn mark(
        &self,
        mut details: ConfirmationDetails,
        description: &str,
    ) -> (ConfirmationDetails, String) {
        let note = format!("(protected: {})", self.protection.label);
        if let ConfirmationDetails::Edit { title, .. } = &mut details {
            *title = format!("{title} {note}");
        }
        (details, format!("{description} {note}"))
    }

    /// The refusal when nobody can be asked; `why` says why nobody can be.
    pub(super) fn refusal(
        &self,
        tool: &str,
        names: &[&str],
        vocabulary: &RuleVocabulary,
        why: &str,
    ) -> ToolError {
        let Protection {
            label, why: what, ..
        } = &self.protection;
        // `Edit(...)` covers every file-editing tool; another tool is named itself.
        let rule_tool = if names
            .iter()
            .any(|n| vocabulary.operation(n) == Some(PathOperation::Edit))
        {
            "Edit"
        } else {
            tool
        };
        ToolError::new(
            ErrorKind::ExecutionDenied,
            format!(
                "Tool \"{tool}\" would change {}, which is protected configuration ({label}: {what}). A change to it needs the user's approval even in auto-edit mode or when edits are otherwise allowed, and {why}, so it was not run. Do not retry it or reach the file another way; tell the user what you want to change there and why. The user can allow it with an allow rule that names the path, such as --allowed-tools '{rule_tool}({})', or with --approval-mode yolo.",
                self.shown, self.rule_path
            ),
        )
    }
}
