//! Claude Code's `dontAsk` permission mode: "don't prompt for permissions, deny if not
//! pre-approved". It is the default mode with nobody asked: what the rules, the flags
//! (`--allowed-tools`, Claude's `--allowedTools`) or the mode allow beforehand runs, and a
//! call that would ask is refused with why, whoever would have been asked (the terminal,
//! a stream-JSON client).
//!
//! It is a switch beside the approval mode, not a mode of the scheduler: the front end
//! that asks keeps its approver, wrapped in [`DontAsk::wrap`], and leaves `dontAsk` when
//! the person chooses another mode (the terminal's shift+tab, the SDK's
//! `set_permission_mode`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use toolbelt_core::BoxFuture;
use toolbelt_engine::{scheduler::Approval, scheduler::ApprovalRequest, scheduler::Approver};

/// What a call refused in `dontAsk` mode tells the model.
pub const DONT_ASK_REFUSAL: &str = "The session is in dontAsk mode: a call that is not allowed beforehand (rules, --allowed-tools) is refused without asking.";

/// Whether a session is in `dontAsk` mode; clones share the switch.
#[derive(Clone, Default)]
pub struct DontAsk(Arc<AtomicBool>);

impl DontAsk {
    /// A switch, on when `approval_mode` is `dontAsk` (the name of the flag or the SDK).
    pub fn new(approval_mode: Option<&str>) -> Self {
        DontAsk(Arc::new(AtomicBool::new(approval_mode == Some("dontAsk"))))
    }

    /// Whether calls that would ask are refused.
    pub fn is_on(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Turns `dontAsk` on or off (another mode was chosen: off).
    pub fn set(&self, on: bool) {
        self.0.store(on, Ordering::Relaxed);
    }

    /// `approver`, refusing without asking while the switch is on.
    pub fn wrap(&self, approver: Arc<dyn Approver>) -> Arc<dyn Approver> {
        Arc::new(Refusing {
            approver,
            dont_ask: self.clone(),
        })
    }
}

/// An approver that refuses while `dontAsk` is on and asks its own otherwise.
struct Refusing {
    approver: Arc<dyn Approver>,
    dont_ask: DontAsk,
}

impl Approver for Refusing {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        if self.dont_ask.is_on() {
            return Box::pin(async { Approval::deny(DONT_ASK_REFUSAL.to_string()) });
        }
        self.approver.approve(request)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use toolbelt_core::{ConfirmationDetails, ConfirmationOutcome, Kind};

    use super::*;

    /// Says yes, counting the questions.
    #[derive(Default)]
    struct Yes(AtomicUsize);

    impl Approver for Yes {
        fn approve<'a>(&'a self, _: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { ConfirmationOutcome::ProceedOnce.into() })
        }
    }

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            call_id: "c1".into(),
            tool: "write_file".into(),
            kind: Kind::Edit,
            description: "Write a.txt".into(),
            details: ConfirmationDetails::Info {
                title: "Write".into(),
                prompt: "a.txt".into(),
                urls: Vec::new(),
            },
            may_always_allow: true,
        }
    }

    #[tokio::test]
    async fn refuses_without_asking_until_another_mode_is_chosen() {
        let yes = Arc::new(Yes::default());
        let dont_ask = DontAsk::new(Some("dontAsk"));
        let approver = dont_ask.wrap(yes.clone());
        let refused = approver.approve(&request()).await;
        assert_eq!(refused.outcome, ConfirmationOutcome::Cancel);
        assert_eq!(refused.message.as_deref(), Some(DONT_ASK_REFUSAL));
        assert_eq!(yes.0.load(Ordering::SeqCst), 0, "asked in dontAsk mode");
        dont_ask.set(false);
        let asked = approver.approve(&request()).await;
        assert_eq!(asked.outcome, ConfirmationOutcome::ProceedOnce);
        assert_eq!(yes.0.load(Ordering::SeqCst), 1);
        assert!(!DontAsk::new(Some("default")).is_on());
        assert!(!DontAsk::new(None).is_on());
    }
}
