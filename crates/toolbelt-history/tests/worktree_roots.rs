#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A live session's checkpoints while it works in a git worktree it entered (issue 45):
//! they cover that worktree alone, and a restore made after it left (`/restore`) puts
//! the worktree's files back without writing to the checkout.

use std::path::PathBuf;
use std::sync::Arc;

use toolbelt_config::settings::Settings;
use toolbelt_core::{Kind, WorkDirSlot, WorkspaceRoots};
use toolbelt_engine::{checkpoint::CheckpointCall, checkpoint::Checkpoints};
use toolbelt_history::{History, HistoryConfig};

fn call(id: &str) -> CheckpointCall {
    CheckpointCall {
        call_id: id.into(),
        tool: "write_file".into(),
        kind: Kind::Edit,
        changes_files: true,
        paths: Vec::new(),
        only_paths: false,
    }
}

/// The checkpoint taken before `c`, after running `change` between before and after.
async fn around(
    h: &History,
    c: &CheckpointCall,
    change: impl FnOnce(),
) -> toolbelt_history::Record {
    h.before_call(c).await.unwrap();
    change();
    h.after_call(c).await;
    h.store()
        .checkpoints()
        .into_iter()
        .map(Result::unwrap)
        .find(|r| r.call_id == c.call_id)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_follow_the_session_into_its_worktree_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    let wt = root.join(".qwen/worktrees/feat");
    std::fs::create_dir_all(wt.join("src")).unwrap();
    let root = root.canonicalize().unwrap();
    let wt = wt.canonicalize().unwrap();
    std::fs::write(root.join("b.txt"), "checkout\n").unwrap();
    std::fs::write(wt.join("a.txt"), "worktree\n").unwrap();
    let slot = WorkDirSlot::default();
    let h = History::open(HistoryConfig {
        store_dir: dir.path().join("store"),
        roots: WorkspaceRoots::new([&root]).unwrap(),
        settings: Arc::new(Settings::default()),
        session: "s1".into(),
        size_cap: 1 << 20,
        max_files: 10_000,
        exclude: Vec::new(),
        watch: true,
        watch_min_files: 0,
        work_dir: slot.clone(),
    });

    let outside = around(&h, &call("c1"), || {
        std::fs::write(root.join("b.txt"), "agent\n").unwrap();
    })
    .await;
    let roots = |r: &toolbelt_history::Record| -> Vec<PathBuf> {
        r.roots.iter().map(|t| t.path.clone()).collect()
    };
    assert_eq!(roots(&outside), vec![root.clone()]);

    // enter_worktree: the shell's directory is a folder of the worktree.
    slot.set(Some(wt.join("src")));
    let inside = around(&h, &call("c2"), || {
        std::fs::write(wt.join("a.txt"), "changed\n").unwrap();
    })
    .await;
    assert_eq!(roots(&inside), vec![wt.clone()]);

    // exit_worktree keep; the person goes on in the checkout.
    slot.set(None);
    std::fs::write(root.join("b.txt"), "mine\n").unwrap();
    let plan = h.plan(&inside.id, &[]).unwrap();
    let changed: Vec<PathBuf> = plan.changes.iter().map(|c| c.path()).collect();
    assert_eq!(changed, [wt.join("a.txt")]);
    h.apply(&plan, true).unwrap();
    assert_eq!(
        std::fs::read_to_string(wt.join("a.txt")).unwrap(),
        "worktree\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("b.txt")).unwrap(),
        "mine\n"
    );

    // Back in the checkout's checkpoints, the person's change is outside toolbelt.
    let plan = h.plan(&outside.id, &[]).unwrap();
    let outside_names: Vec<String> = plan.outside().map(|c| c.shown()).collect();
    assert_eq!(outside_names, ["b.txt"]);
    // The checkout's checkpoints never hold the worktrees, ignore rules or not.
    std::fs::write(wt.join("a.txt"), "again\n").unwrap();
    let plan = h.plan(&outside.id, &[]).unwrap();
    assert!(plan.changes.iter().all(|c| !c.path().starts_with(&wt)));
}
