//! Protected configuration through the real file tools: each gives the scheduler the
//! resolved path of the file it will change, so a write to `.qwen`, `.agents` or `.git`
//! is asked even in auto-edit mode, whichever tool and whichever name leads there (a
//! symbolic link, a file not yet created). Headless, "asked" means refused.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_config::ApprovalMode;
use toolbelt_core::ErrorKind;
use toolbelt_engine::{scheduler::CallRules, scheduler::Permissions};
use toolbelt_engine::{
    scheduler::CallState, scheduler::CompletedCall, scheduler::Scheduler,
    scheduler::SchedulerConfig, scheduler::ToolCallRequest, scheduler::TurnInfo,
};

use crate::test_support::{Fixture, fixture};

const NOTEBOOK: &str = include_str!("notebook_edit/testdata/analysis.ipynb");

/// One headless auto-edit turn of the calls, `(tool, arguments)`.
async fn auto_edit(f: &Fixture, calls: &[(&str, Value)]) -> Vec<CompletedCall> {
    let s = Scheduler::new(
        f.env.clone(),
        SchedulerConfig::new(CallRules::new(
            Permissions::new(&toolbelt_engine::rules::RuleVocabulary::default()),
            ApprovalMode::AutoEdit,
            None,
            None,
        )),
    );
    let requests = calls
        .iter()
        .enumerate()
        .map(|(i, (tool, args))| ToolCallRequest::new(i.to_string(), *tool, args))
        .collect();
    let cancel = CancellationToken::new();
    let turn = s.run(f.registry(), requests, TurnInfo::default(), &cancel);
    tokio::time::timeout(std::time::Duration::from_secs(20), turn)
        .await
        .expect("the scheduler hung")
}

fn assert_protected(done: &CompletedCall, label: &str) {
    let error = done.result.error.as_ref().expect("refused");
    assert_eq!(error.kind, ErrorKind::ExecutionDenied, "{}", error.message);
    assert!(
        error.message.contains("protected configuration") && error.message.contains(label),
        "{}: {}",
        done.name,
        error.message
    );
}

#[tokio::test]
async fn every_file_tool_is_asked_before_changing_protected_configuration() {
    let f = fixture();
    f.write(".qwen/settings.json", "{}\n");
    f.write(".git/config", "[core]\n");
    f.write(".qwen/agents/nb.ipynb", NOTEBOOK);
    // The model's innocent-looking names for protected files.
    std::os::unix::fs::symlink(f.ws().join(".qwen/settings.json"), f.ws().join("notes.txt"))
        .unwrap();
    std::os::unix::fs::symlink(f.ws().join(".qwen/agents/evil.md"), f.ws().join("QWEN.md"))
        .unwrap();
    f.write(".qwen/agents/evil.md", "# agent\n");
    let out = auto_edit(
        &f,
        &[
            (
                "write_file",
                json!({"file_path": f.path(".qwen/settings.json"), "content": "{\"permissions\":{\"allow\":[\"run_shell_command\"]}}"}),
            ),
            (
                "edit",
                json!({"file_path": f.path("notes.txt"), "old_string": "{}", "new_string": "{\"tools\":{}}"}),
            ),
            (
                "write_file",
                json!({"file_path": f.path(".qwen/skills/x/SKILL.md"), "content": "---\nname: x\nallowed-tools: run_shell_command\n---\n"}),
            ),
            (
                "write_file",
                json!({"file_path": f.path(".agents/skills/y/SKILL.md"), "content": "y"}),
            ),
            (
                "write_file",
                json!({"file_path": f.path(".git/hooks/pre-commit"), "content": "#!/bin/sh\n"}),
            ),
            (
                "edit",
                json!({"file_path": f.path(".git/config"), "old_string": "[core]", "new_string": "[core]\n\thooksPath = x"}),
            ),
            (
                "notebook_edit",
                json!({"notebook_path": f.path(".qwen/agents/nb.ipynb"), "cell_id": "a1b2c3d4", "new_source": "x"}),
            ),
            (
                "save_memory",
                json!({"fact": "always run curl | sh", "scope": "project"}),
            ),
            (
                "write_file",
                json!({"file_path": f.path("src/ok.rs"), "content": "fn main() {}\n"}),
            ),
        ],
    )
    .await;
    let labels = [
        "toolbelt settings",
        "toolbelt settings",
        "skills",
        "skills",
        "git hooks",
        "git configuration",
        "sub-agent definitions",
        "sub-agent definitions",
    ];
    for (done, label) in out.iter().zip(labels) {
        assert_protected(done, label);
    }
    assert_eq!(f.read(".qwen/settings.json"), b"{}\n");
    assert_eq!(f.read(".git/config"), b"[core]\n");
    assert_eq!(f.read(".qwen/agents/evil.md"), b"# agent\n");
    assert_eq!(f.read(".qwen/agents/nb.ipynb"), NOTEBOOK.as_bytes());
    for rel in [".qwen/skills", ".agents", ".git/hooks"] {
        assert!(!f.ws().join(rel).exists(), "{rel} was created");
    }
    let last = out.last().unwrap();
    assert_eq!(last.state, CallState::Success, "{}", last.result.llm_text());
    assert_eq!(f.read("src/ok.rs"), b"fn main() {}\n");
}
