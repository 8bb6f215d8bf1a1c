use serde_json::json;
use toolbelt_core::{ConfirmationDetails, Display, ErrorKind};

use crate::test_support::{err_kind, fixture};

#[tokio::test]
async fn the_question_is_the_plan_and_approval_says_so() {
    let fx = fixture();
    let (result, details) = fx
        .call_confirmed(
            "exit_plan_mode",
            json!({"plan": "1. Edit src/a.rs\n2. Test"}),
        )
        .await;
    match details {
        Some(ConfirmationDetails::Plan { plan, .. }) => assert!(plan.contains("Edit src/a.rs")),
        other => panic!("expected the plan as the question, got {other:?}"),
    }
    assert!(result.llm_text().contains("approved the plan"));
    assert_eq!(
        result.return_display,
        Display::Plan {
            plan: "1. Edit src/a.rs\n2. Test".into(),
            approved: true
        }
    );
}

#[tokio::test]
async fn an_empty_plan_is_refused() {
    let fx = fixture();
    assert_eq!(
        err_kind(&fx.call("exit_plan_mode", json!({"plan": " \n"})).await),
        Some(ErrorKind::InvalidToolParams)
    );
}
