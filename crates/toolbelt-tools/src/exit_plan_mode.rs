//! `exit_plan_mode`: the model presents its plan and asks to leave plan mode.
//!
//! The question is the plan itself ([`ConfirmationDetails::Plan`]). What happens around
//! it is the scheduler's (`toolbelt_engine::scheduler`): in plan mode it asks the person;
//! approval runs this tool and returns the session to the mode it had before plan mode
//! (or auto-edit when the person picks "always"); a refusal tells the model to keep
//! planning; with nobody to ask (headless) the plan is the session's answer and the run
//! ends. Outside plan mode the call changes nothing.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, Display, ExecContext, Invocation, Kind, Tool, ToolEnvironment,
    ToolError, ToolResult,
};

/// The `exit_plan_mode` tool: presents a plan for approval and leaves plan mode.
pub struct ExitPlanMode {
    schema: Value,
}

impl ExitPlanMode {
    /// The tool over a session's environment.
    pub fn new(_env: Arc<ToolEnvironment>) -> Self {
        let schema = crate::params::schema_for::<Params>();
        ExitPlanMode { schema }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(
        description = "The plan to present for approval, in Markdown: the steps, the files each one changes, and how the result will be checked."
    )]
    plan: String,
}

/// The tool as a built-in (see [`crate::builtin`]): its rule words and how a session
/// makes it.
pub(crate) const BUILTIN: crate::builtin::Builtin = crate::builtin::Builtin {
    name: "exit_plan_mode",
    rule_aliases: &[],
    path_operation: None,
    make: crate::builtin::Make::Env(|env| {
        Some(std::sync::Arc::new(ExitPlanMode::new(env.clone())))
    }),
};

impl Tool for ExitPlanMode {
    fn name(&self) -> &str {
        "exit_plan_mode"
    }
    fn display_name(&self) -> &str {
        "ExitPlanMode"
    }
    fn description(&self) -> &str {
        "Presents your plan to the user and asks to leave plan mode. Use it in plan mode once you have researched \
         enough to know what to change: the plan should be concise and name the files and steps. \
         Only after the user approves may you edit files or run commands. Do not use it for research-only tasks."
    }
    fn kind(&self) -> Kind {
        Kind::Think
    }
    fn needs_confirmation(&self) -> bool {
        true
    }
    fn ends_plan_mode(&self) -> bool {
        true
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        if params.plan.trim().is_empty() {
            return Err(ToolError::invalid_params(
                "plan is empty: write the plan to present",
            ));
        }
        Ok(Box::new(PlanCall { plan: params.plan }))
    }
}

struct PlanCall {
    plan: String,
}

impl Invocation for PlanCall {
    fn describe(&self) -> String {
        let first = self
            .plan
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        let first: String = first.chars().take(80).collect();
        format!("Present the plan: {}", first.trim())
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async move {
            Some(ConfirmationDetails::Plan {
                title: "Ready to start? Approve the plan to leave plan mode".to_string(),
                plan: self.plan.clone(),
            })
        })
    }

    fn execute(self: Box<Self>, _ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            ToolResult::with_display(
                "The user approved the plan and plan mode is over: you may now edit files and run commands. \
                 Start with the first step (update the task list with todo_write if you keep one).",
                Display::Plan {
                    plan: self.plan,
                    approved: true,
                },
            )
        })
    }
}

#[cfg(test)]
mod tests;
