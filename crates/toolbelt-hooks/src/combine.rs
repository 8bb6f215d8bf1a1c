//! The hooks of one event, combined into one [`HookOutcome`], deterministically: in
//! configuration order (project, user, system, Claude Code's files, then SDK
//! callbacks), whatever order they finished in.
//!
//! - The decision is the strictest: deny, then ask, then allow. The reasons given with
//!   it are joined, one per line, in order.
//! - Context, messages for the person and failures are kept, in order.
//! - `continue: false` from any hook stops the agent (the first reason is given).
//! - A rewritten input (`updatedInput`) is taken only when every hook that rewrote
//!   gave the same one. Two different rewrites are a refusal that names both hooks:
//!   which one should win depends on which finished last, and a call must not depend on
//!   that. In a sequential group each hook sees the previous one's rewrite, so the
//!   group's rewrite is its last one.

use serde_json::Value;
use toolbelt_engine::{hooks::HookDecision, hooks::HookFailure, hooks::HookOutcome};

use crate::output::Reply;

/// What one hook gave, with its label.
pub(crate) struct Ran {
    pub label: String,
    pub reply: Reply,
}

/// One unit of the event: a single hook, or a sequential group's hooks in order.
pub(crate) type Unit = Vec<Ran>;

/// Combines the units, in configuration order.
pub(crate) fn combine(units: Vec<Unit>) -> HookOutcome {
    let mut outcome = HookOutcome::default();
    let mut rewrites: Vec<(String, Value)> = Vec::new();
    for unit in &units {
        let rewrite = unit.iter().rev().find_map(|ran| {
            ran.reply
                .updated_input
                .clone()
                .map(|v| (ran.label.clone(), v))
        });
        if let Some(rewrite) = rewrite {
            rewrites.push(rewrite);
        }
    }
    let hooks: Vec<&Ran> = units.iter().flatten().collect();
    outcome.decision = hooks.iter().filter_map(|ran| ran.reply.decision).max();
    let reasons: Vec<&str> = hooks
        .iter()
        .filter(|ran| ran.reply.decision.is_some() && ran.reply.decision == outcome.decision)
        .filter_map(|ran| ran.reply.reason.as_deref())
        .collect();
    if !reasons.is_empty() {
        outcome.reason = Some(reasons.join("\n"));
    } else if outcome.decision == Some(HookDecision::Deny) {
        let by: Vec<&str> = hooks
            .iter()
            .filter(|ran| ran.reply.decision == Some(HookDecision::Deny))
            .map(|ran| ran.label.as_str())
            .collect();
        outcome.reason = Some(format!("refused by hook {}", by.join(", ")));
    }
    for ran in &hooks {
        let reply = &ran.reply;
        outcome.additional_context.extend(reply.context.clone());
        outcome.system_messages.extend(reply.system_message.clone());
        if outcome.stop.is_none() {
            outcome.stop = reply.stop.clone();
        }
        outcome.suppress_output |= reply.suppress_output;
        if let Some(message) = &reply.failure {
            outcome.failures.push(HookFailure {
                hook: ran.label.clone(),
                message: message.clone(),
            });
        }
    }
    take_rewrite(&mut outcome, rewrites);
    outcome
}

/// The one rewrite, or a refusal naming two hooks that disagree.
fn take_rewrite(outcome: &mut HookOutcome, rewrites: Vec<(String, Value)>) {
    let Some((first_label, first)) = rewrites.first() else {
        return;
    };
    if let Some((other_label, _)) = rewrites.iter().find(|(_, v)| v != first) {
        let conflict = format!(
            "hooks {first_label} and {other_label} rewrote the call's input differently (updatedInput); the call was refused rather than run with either"
        );
        // A deny's own reasons stay beside the conflict; an allow's or ask's no longer apply.
        outcome.reason = match (outcome.denied(), outcome.reason.take()) {
            (true, Some(reason)) => Some(format!("{reason}\n{conflict}")),
            _ => Some(conflict),
        };
        outcome.decision = Some(HookDecision::Deny);
        return;
    }
    outcome.updated_input = Some(first.clone());
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ran(label: &str, decision: Option<HookDecision>, reason: Option<&str>) -> Ran {
        Ran {
            label: label.into(),
            reply: Reply {
                decision,
                reason: reason.map(str::to_string),
                ..Reply::default()
            },
        }
    }

    fn rewrite(label: &str, input: Value) -> Ran {
        Ran {
            label: label.into(),
            reply: Reply {
                updated_input: Some(input),
                ..Reply::default()
            },
        }
    }

    #[test]
    fn the_strictest_decision_wins_with_its_reasons_in_order() {
        use HookDecision::*;
        let outcome = combine(vec![
            vec![ran("a", Some(Allow), Some("fine"))],
            vec![ran("b", Some(Deny), Some("no rm"))],
            vec![ran("c", Some(Ask), Some("check"))],
            vec![ran("d", Some(Deny), Some("no sudo"))],
        ]);
        assert_eq!(outcome.decision, Some(Deny));
        assert_eq!(outcome.reason.as_deref(), Some("no rm\nno sudo"));
        let outcome = combine(vec![
            vec![ran("a", Some(Allow), None)],
            vec![ran("c", Some(Ask), Some("check"))],
        ]);
        assert_eq!(outcome.decision, Some(Ask));
        assert_eq!(outcome.reason.as_deref(), Some("check"));
        let outcome = combine(vec![vec![ran("x", Some(Deny), None)]]);
        assert_eq!(outcome.reason.as_deref(), Some("refused by hook x"));
    }

    #[test]
    fn different_rewrites_are_a_refusal_naming_both_hooks() {
        let outcome = combine(vec![
            vec![rewrite("one", json!({"command": "ls"}))],
            vec![rewrite("two", json!({"command": "ls"}))],
        ]);
        assert_eq!(outcome.updated_input, Some(json!({"command": "ls"})));
        assert_eq!(outcome.decision, None);
        let outcome = combine(vec![
            vec![rewrite("one", json!({"command": "ls"}))],
            vec![ran("ok", Some(HookDecision::Allow), None)],
            vec![rewrite("two", json!({"command": "rm -rf /"}))],
        ]);
        assert_eq!(outcome.decision, Some(HookDecision::Deny));
        assert_eq!(outcome.updated_input, None);
        let reason = outcome.reason.unwrap();
        assert!(reason.contains("one") && reason.contains("two"), "{reason}");
    }

    #[test]
    fn a_sequential_groups_last_rewrite_is_its_rewrite() {
        let outcome = combine(vec![vec![
            rewrite("first", json!({"command": "a"})),
            rewrite("second", json!({"command": "b"})),
        ]]);
        assert_eq!(outcome.updated_input, Some(json!({"command": "b"})));
        assert_eq!(outcome.decision, None);
    }
}
