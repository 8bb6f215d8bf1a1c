//! The lines of issue 41, run through the scheduler with real processes: in yolo mode
//! with `rm` denied, and with only an allow rule for the outer program, none removes the
//! file; "always" for a git command does not cover git running code.

use serde_json::json;
use toolbelt_config::ApprovalMode;
use toolbelt_engine::rules::RuleList;
use toolbelt_engine::scheduler::CallRules;
use toolbelt_engine::{
    scheduler::Permissions, scheduler::Scheduler, scheduler::SchedulerConfig,
    scheduler::ToolCallRequest, scheduler::TurnInfo,
};

use super::parse;
use super::runner_tests::outer_rule;

/// The lines of the issue (each removed the file `v`) and variants, run for real below.
const ISSUE_LINES: &[&str] = &[
    "setpriv rm v",
    "prlimit rm v",
    "fakeroot rm v",
    "setarch x86_64 rm v",
    "linux64 rm v",
    "chrt -o 0 rm v",
    "ssh-agent rm v",
    "dbus-run-session -- rm v",
    "sg root -c 'rm v'",
    "trap 'rm v' EXIT",
    "hash -p /bin/rm del; del v",
    "coproc rm v",
    "shopt -s expand_aliases; alias d=rm; eval 'd v'",
    "awk 'BEGIN{system(\"rm v\")}'",
    "sed -n '1e rm v' f",
    "make -f /dev/stdin <<< 'x:; rm v'",
    "git -c alias.x='!rm v' x",
    "git -c core.fsmonitor='rm v' status",
    "git -c diff.external='rm v' diff",
    "git submodule foreach 'rm v'",
    // The same configuration given through the environment.
    "GIT_CONFIG_PARAMETERS=\"'alias.x=!rm v'\" git x",
    "env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!rm v' git x",
    "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='rm v'; git status",
];

/// Runs `line` in the workspace through the scheduler with `mode` and `rules`, with
/// nobody to ask.
async fn run_line(
    f: &crate::test_support::Fixture,
    mode: ApprovalMode,
    rules: &[(RuleList, &str)],
    line: &str,
) -> String {
    let mut permissions = Permissions::new(&crate::rule_vocabulary());
    for (list, rule) in rules {
        permissions.add(*list, rule);
    }
    let config = SchedulerConfig::new(CallRules::new(permissions, mode, None, None));
    let scheduler = Scheduler::new(f.env.clone(), config);
    let call = ToolCallRequest::new("1", "run_shell_command", &json!({ "command": line }));
    let done = scheduler
        .run(
            f.registry(),
            vec![call],
            TurnInfo::default(),
            &Default::default(),
        )
        .await;
    done[0].result.llm_text()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_issue_lines_remove_nothing_with_rm_denied_or_only_the_outer_program_allowed() {
    let f = crate::test_support::fixture();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(f.ws())
        .status();
    assert!(git.is_ok_and(|s| s.success()), "git init");
    let mut removed = Vec::new();
    for line in ISSUE_LINES {
        let outer = parse(line).commands[0].root().to_string();
        for (mode, rules) in [
            (ApprovalMode::Yolo, vec![(RuleList::Deny, "Bash(rm *)")]),
            (
                ApprovalMode::Default,
                vec![(RuleList::Allow, "Bash(shopt *)")],
            ),
        ] {
            let mut rules = rules.clone();
            let allow = outer_rule(&outer);
            if mode == ApprovalMode::Default {
                rules.push((RuleList::Allow, &allow));
            }
            f.write("v", "keep");
            f.write("f", "x\n");
            let text = run_line(&f, mode, &rules, line).await;
            if !f.ws().join("v").exists() {
                removed.push(format!("{mode}: `{line}` removed the file:\n{text}"));
            }
        }
    }
    assert!(removed.is_empty(), "\n{}", removed.join("\n"));
}

/// Answers "always" to the first question and refuses the rest; keeps what it was asked.
struct AlwaysThenRefuse {
    asked: std::sync::Mutex<Vec<String>>,
}

impl toolbelt_engine::scheduler::Approver for AlwaysThenRefuse {
    fn approve<'a>(
        &'a self,
        request: &'a toolbelt_engine::scheduler::ApprovalRequest,
    ) -> toolbelt_core::BoxFuture<'a, toolbelt_engine::scheduler::Approval> {
        let mut asked = self.asked.lock().unwrap();
        asked.push(request.description.clone());
        let outcome = if asked.len() == 1 {
            toolbelt_core::ConfirmationOutcome::ProceedAlwaysRootCommand
        } else {
            toolbelt_core::ConfirmationOutcome::Cancel
        };
        Box::pin(async move { outcome.into() })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn always_for_a_git_command_does_not_cover_git_running_code() {
    let f = crate::test_support::fixture();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(f.ws())
            .status()
            .is_ok_and(|s| s.success())
    };
    assert!(git(&["init", "-q"]));
    assert!(git(&["config", "user.email", "t@example.com"]) && git(&["config", "user.name", "t"]));
    let approver = std::sync::Arc::new(AlwaysThenRefuse {
        asked: std::sync::Mutex::new(Vec::new()),
    });
    let scheduler = Scheduler::new(
        f.env.clone(),
        SchedulerConfig::new(CallRules::new(
            Permissions::new(&toolbelt_engine::rules::RuleVocabulary::default()),
            ApprovalMode::Default,
            None,
            None,
        ))
        .approver(Some(approver.clone())),
    );
    let lines = [
        "git commit -q --allow-empty -m first",
        "git -c alias.x='!touch made-by-alias' x",
        "git -c core.fsmonitor='touch made-by-fsmonitor' status",
        "git submodule foreach 'touch made-by-foreach'",
    ];
    for (at, line) in lines.iter().enumerate() {
        let call = ToolCallRequest::new(
            at.to_string(),
            "run_shell_command",
            &json!({ "command": line }),
        );
        scheduler
            .run(
                f.registry(),
                vec![call],
                TurnInfo::default(),
                &Default::default(),
            )
            .await;
    }
    let asked = approver.asked.lock().unwrap().clone();
    assert_eq!(
        asked.len(),
        lines.len(),
        "each git form that runs code asks: {asked:?}"
    );
    for made in ["made-by-alias", "made-by-fsmonitor", "made-by-foreach"] {
        assert!(!f.ws().join(made).exists(), "{made} was created");
    }
}
