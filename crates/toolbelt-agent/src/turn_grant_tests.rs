//! A call's grant (a skill's `allowed-tools`) lasts for the run it was made in: the
//! agent ends the turn when the run ends, so the next prompt to the same agent asks
//! again.

use std::sync::Arc;
use toolbelt_config::ApprovalMode;
use toolbelt_engine::{scheduler::CallRules, scheduler::Permissions};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_config::settings::Settings;
use toolbelt_core::TurnGrant;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ExecContext, Invocation, Kind, Tool, ToolError, ToolResult,
    WorkspaceRoots,
};
use toolbelt_engine::registry::Origin;
use toolbelt_engine::scheduler::SchedulerConfig;
use toolbelt_model::{FinishReason, ModelTurn, ReplayModel, ScriptTurn, ToolCall, UserPart};

use crate::{Agent, ToolEnvironment, ToolRegistry};

/// `grant` grants `gated` for the rest of the turn; `gated` always asks.
struct TestTool(&'static str);

impl Tool for TestTool {
    fn name(&self) -> &str {
        self.0
    }
    fn display_name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "test"
    }
    fn kind(&self) -> Kind {
        if self.0 == "gated" {
            Kind::Execute
        } else {
            Kind::Read
        }
    }
    fn parameter_schema(&self) -> &Value {
        static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        SCHEMA.get_or_init(|| json!({"type": "object"}))
    }
    fn build(&self, _args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        Ok(Box::new(TestCall(self.0)))
    }
}

struct TestCall(&'static str);

impl Invocation for TestCall {
    fn describe(&self) -> String {
        self.0.to_string()
    }
    fn turn_grant(&self) -> Option<TurnGrant> {
        (self.0 == "grant").then(|| TurnGrant {
            source: "test".into(),
            rules: vec!["gated".into()],
        })
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        let gated = self.0 == "gated";
        Box::pin(async move { gated.then(|| ConfirmationDetails::generic("gated", "gated")) })
    }
    fn execute(self: Box<Self>, _ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move { ToolResult::text(format!("{} ran", self.0)) })
    }
}

fn call(id: &str, name: &str) -> ScriptTurn {
    ScriptTurn::from_model_turn(&ModelTurn {
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: "{}".into(),
        }],
        finish_reason: FinishReason::ToolCalls,
        ..Default::default()
    })
}

fn text(t: &str) -> ScriptTurn {
    ScriptTurn::from_model_turn(&ModelTurn {
        text: t.into(),
        finish_reason: FinishReason::Stop,
        ..Default::default()
    })
}

#[tokio::test]
async fn a_grant_ends_with_the_run_that_made_it() {
    let dir = tempfile::tempdir().unwrap();
    let env = Arc::new(ToolEnvironment::new(
        WorkspaceRoots::new([dir.path()]).unwrap(),
        Arc::new(Settings::default()),
        dir.path().join("s"),
    ));
    let mut registry = ToolRegistry::new();
    registry.register(Arc::new(TestTool("grant")), Origin::BuiltIn);
    registry.register(Arc::new(TestTool("gated")), Origin::BuiltIn);
    // A replay model: the two runs share the agent (and its scheduler) but not a
    // conversation, which the fake server would rightly flag.
    let script = [
        call("g1", "grant"),
        call("c1", "gated"),
        text("first done"),
        call("c2", "gated"),
        text("second done"),
    ];
    let model = Arc::new(ReplayModel::new(&script, "r"));
    let agent = Agent::new(
        model,
        Arc::new(registry),
        env,
        SchedulerConfig::new(CallRules::new(
            Permissions::new(&toolbelt_engine::rules::RuleVocabulary::default()),
            ApprovalMode::Default,
            None,
            None,
        )),
        "system".into(),
        10,
        None,
    );
    let prompt = |t: &str| vec![UserPart::Text(t.into())];
    let first = agent.run(prompt("one"), &CancellationToken::new()).await;
    assert_eq!(first.calls[1].result.llm_text(), "gated ran");
    assert!(
        agent.scheduler().turn_grant_sources().is_empty(),
        "ended with the run"
    );
    let second = agent.run(prompt("two"), &CancellationToken::new()).await;
    let refused = &second.calls[0].result;
    assert!(refused.is_error(), "{refused:?}");
    assert!(refused.llm_text().contains("needs the user's approval"));
}
