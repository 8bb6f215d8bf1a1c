#![allow(clippy::unwrap_used, clippy::expect_used, clippy::too_many_lines)]
//! Checkpoints and restores on real files in a temp workspace, changed by real
//! processes (`sed -i`, `rm`), with inotify and without it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use toolbelt_config::settings::Settings;
use toolbelt_core::{Kind, WorkspaceRoots};
use toolbelt_engine::{checkpoint::CheckpointCall, checkpoint::Checkpoints, checkpoint::TurnStart};
use toolbelt_history::{History, HistoryConfig, Phase, Store, render};

struct Ws {
    _dir: tempfile::TempDir,
    root: PathBuf,
    store: PathBuf,
}

impl Ws {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        let root = root.canonicalize().unwrap();
        let store = dir.path().join("store");
        Ws {
            _dir: dir,
            root,
            store,
        }
    }

    fn history(&self, watch: bool, cap: u64) -> History {
        self.history_watching_from(watch, cap, 0)
    }

    /// With `watch`, a workspace of fewer than `min_files` entries is walked instead.
    fn history_watching_from(&self, watch: bool, cap: u64, min_files: usize) -> History {
        History::open(HistoryConfig {
            store_dir: self.store.clone(),
            roots: WorkspaceRoots::new([&self.root]).unwrap(),
            settings: Arc::new(Settings::default()),
            session: "s1".into(),
            size_cap: cap,
            max_files: 10_000,
            exclude: Vec::new(),
            watch,
            watch_min_files: min_files,
            work_dir: Default::default(),
        })
    }

    fn write(&self, rel: &str, bytes: &[u8], mode: u32) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn read(&self, rel: &str) -> Option<(Vec<u8>, u32)> {
        let p = self.root.join(rel);
        let bytes = std::fs::read(&p).ok()?;
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777;
        Some((bytes, mode))
    }

    fn sh(&self, line: &str) {
        let status = Command::new("sh")
            .arg("-c")
            .arg(line)
            .current_dir(&self.root)
            .status()
            .unwrap();
        assert!(status.success(), "{line}");
    }
}

fn call(id: &str, tool: &str, kind: Kind) -> CheckpointCall {
    CheckpointCall {
        call_id: id.into(),
        tool: tool.into(),
        kind,
        // What the scheduler says: a kind that changes files, or a tool whose facts say
        // it writes (`save_memory`'s `ToolFacts::writes_files`).
        changes_files: !kind.is_read_only() || tool == "save_memory",
        paths: Vec::new(),
        only_paths: false,
    }
}

/// A call of an edit tool, which changes only the files it names (`only_paths`).
fn named_edit(id: &str, paths: &[PathBuf]) -> CheckpointCall {
    CheckpointCall {
        paths: paths.to_vec(),
        only_paths: true,
        ..call(id, "write_file", Kind::Edit)
    }
}

/// One call through the Checkpoints contract, as the scheduler makes it: before,
/// the change, after. Returns the checkpoint's ID.
async fn around(h: &History, c: &CheckpointCall, change: impl FnOnce()) -> String {
    h.before_call(c).await.unwrap();
    change();
    h.after_call(c).await;
    h.store()
        .checkpoints()
        .into_iter()
        .map(Result::unwrap)
        .find(|r| r.call_id == c.call_id)
        .unwrap()
        .id
}

/// `min_files`: with `watch`, fewer entries than this and the workspace is walked.
async fn restored_exactly(watch: bool, min_files: usize) {
    let ws = Ws::new();
    ws.write("src/a.txt", b"alpha\nbeta\n", 0o644);
    ws.write("src/run.sh", b"#!/bin/sh\necho hi\n", 0o755);
    ws.write("keep/gone.txt", b"to be removed\n", 0o600);
    let h = ws.history_watching_from(watch, 1 << 20, min_files);
    h.begin_turn(TurnStart {
        history_len: 0,
        prompt: "change things".into(),
    });
    assert!(!h.watching(), "no picture yet, no watcher");
    // An edit (the tool's own write), a new file, `sed -i` and `rm` through a shell.
    let edit = around(&h, &call("c1", "edit", Kind::Edit), || {
        ws.write("src/a.txt", b"alpha\nBETA\n", 0o644)
    })
    .await;
    // Five entries (two folders, three files).
    assert_eq!(h.watching(), watch && min_files <= 5);
    let write = around(&h, &call("c2", "write_file", Kind::Edit), || {
        ws.write("src/new.txt", b"created\n", 0o640)
    })
    .await;
    let sed = around(&h, &call("c3", "run_shell_command", Kind::Execute), || {
        ws.sh("sed -i 's/echo hi/echo bye/' src/run.sh && chmod 700 src/run.sh")
    })
    .await;
    let rm = around(&h, &call("c4", "run_shell_command", Kind::Execute), || {
        ws.sh("rm -r keep")
    })
    .await;
    assert_eq!(ws.read("src/run.sh").unwrap().1, 0o700);

    // Back to before the rm: the directory and its file, bytes and mode.
    let plan = h.plan(&rm, &[]).unwrap();
    assert!(
        plan.outside().next().is_none(),
        "{}",
        render::plan_text(&h, &plan)
    );
    h.apply(&plan, false).unwrap();
    assert_eq!(
        ws.read("keep/gone.txt").unwrap(),
        (b"to be removed\n".to_vec(), 0o600)
    );
    // Before the sed: its content and mode.
    let plan = h.plan(&sed, &[]).unwrap();
    let text = render::plan_text(&h, &plan);
    assert!(
        text.contains("-echo bye") && text.contains("+echo hi"),
        "{text}"
    );
    h.apply(&plan, false).unwrap();
    assert_eq!(
        ws.read("src/run.sh").unwrap(),
        (b"#!/bin/sh\necho hi\n".to_vec(), 0o755)
    );
    // Before the write: the new file is removed.
    h.apply(&h.plan(&write, &[]).unwrap(), false).unwrap();
    assert_eq!(ws.read("src/new.txt"), None);
    // Before the edit.
    h.apply(&h.plan(&edit, &[]).unwrap(), false).unwrap();
    assert_eq!(
        ws.read("src/a.txt").unwrap(),
        (b"alpha\nbeta\n".to_vec(), 0o644)
    );
    assert!(h.plan(&edit, &[]).unwrap().is_empty());
}

#[tokio::test]
async fn edit_write_sed_and_rm_are_restored_exactly_with_the_watcher() {
    restored_exactly(true, 0).await;
    restored_exactly(true, 5).await;
}

#[tokio::test]
async fn edit_write_sed_and_rm_are_restored_exactly_by_walking() {
    restored_exactly(false, 0).await;
}

/// A workspace smaller than `watch_min_files` is never watched (closing a watcher can
/// wait for the kernel) and is walked at each checkpoint: the shell's `sed -i`, `chmod`
/// and `rm` are still each in their call's checkpoint. One of exactly that many entries
/// is watched (`restored_exactly(true, 5)`).
#[tokio::test]
async fn a_small_workspace_is_walked_and_every_change_still_recorded() {
    restored_exactly(true, 6).await;
    restored_exactly(true, 2_000).await;
}

/// Without a watcher, an edit tool's "after" looks only at the files it names: a file
/// something else changed meanwhile is not taken into the call's checkpoint (so it
/// reads as changed outside toolbelt), and a new file in new folders is taken whole.
#[tokio::test]
async fn an_edit_tools_after_looks_only_at_its_named_files_without_a_watcher() {
    let ws = Ws::new();
    ws.write("a.txt", b"one\n", 0o644);
    ws.write("b.txt", b"bee\n", 0o644);
    let h = ws.history(false, 1 << 20);
    let id = around(&h, &named_edit("c1", &[ws.root.join("a.txt")]), || {
        ws.write("a.txt", b"two\n", 0o644);
        ws.write("b.txt", b"bee meanwhile\n", 0o644);
    })
    .await;
    let plan = h.plan(&id, &[]).unwrap();
    let outside: Vec<String> = plan.outside().map(|c| c.shown()).collect();
    assert_eq!(outside, ["b.txt"], "{}", render::plan_text(&h, &plan));
    // A file written into folders that did not exist.
    let new = ws.root.join("deep/er/new.txt");
    let id = around(&h, &named_edit("c2", std::slice::from_ref(&new)), || {
        ws.write("deep/er/new.txt", b"created\n", 0o640)
    })
    .await;
    let plan = h.plan(&id, &[]).unwrap();
    assert!(
        plan.outside().next().is_none(),
        "{}",
        render::plan_text(&h, &plan)
    );
    h.apply(&plan, false).unwrap();
    assert_eq!(ws.read("deep/er/new.txt"), None);
}

#[tokio::test]
async fn a_file_changed_outside_toolbelt_is_named_and_kept_unless_forced() {
    let ws = Ws::new();
    ws.write("a.txt", b"one\n", 0o644);
    ws.write("b.txt", b"bee\n", 0o644);
    let h = ws.history(true, 1 << 20);
    let id = around(&h, &call("c1", "edit", Kind::Edit), || {
        ws.write("a.txt", b"two\n", 0o644);
        ws.write("b.txt", b"bee by the call\n", 0o644);
    })
    .await;
    // The person edits b.txt after the call.
    ws.write("b.txt", b"the person's own\n", 0o644);
    let plan = h.plan(&id, &[]).unwrap();
    let outside: Vec<String> = plan.outside().map(|c| c.shown()).collect();
    assert_eq!(outside, ["b.txt"]);
    assert!(render::plan_text(&h, &plan).contains("changed outside toolbelt"));
    let applied = h.apply(&plan, false).unwrap();
    assert_eq!(applied.kept, ["b.txt"]);
    assert_eq!(ws.read("a.txt").unwrap().0, b"one\n");
    assert_eq!(ws.read("b.txt").unwrap().0, b"the person's own\n");
    // Forced, it is restored too (and the restore can be undone).
    let plan = h.plan(&id, &[]).unwrap();
    let applied = h.apply(&plan, true).unwrap();
    assert_eq!(ws.read("b.txt").unwrap().0, b"bee\n");
    let undo = applied.undo.unwrap();
    h.apply(&h.plan(&undo, &[]).unwrap(), false).unwrap();
    assert_eq!(ws.read("b.txt").unwrap().0, b"the person's own\n");
}

#[tokio::test]
async fn a_restore_is_undone_by_restoring_the_checkpoint_it_took() {
    let ws = Ws::new();
    ws.write("f.txt", b"v1\n", 0o644);
    let h = ws.history(true, 1 << 20);
    let first = around(&h, &call("c1", "edit", Kind::Edit), || {
        ws.write("f.txt", b"v2\n", 0o644)
    })
    .await;
    around(&h, &call("c2", "edit", Kind::Edit), || {
        ws.write("f.txt", b"v3\n", 0o644)
    })
    .await;
    let plan = h.plan(&first, &[]).unwrap();
    let text = render::plan_text(&h, &plan);
    // The sides named for a past change, without a tab; no note about ignored files
    // where no ignore file is.
    assert!(
        text.contains("--- f.txt (now)\n+++ f.txt (checkpoint)\n"),
        "{text}"
    );
    assert!(!text.contains("Proposed") && !text.contains('\t'), "{text}");
    assert!(!text.contains("ignore rules"), "{text}");
    let applied = h.apply(&plan, false).unwrap();
    assert_eq!(ws.read("f.txt").unwrap().0, b"v1\n");
    // The undo line is a command one can type.
    let done = render::applied_text(&applied, "/restore");
    let undo = applied.undo.as_deref().unwrap();
    assert!(
        done.contains(&format!("To undo this restore: /restore {undo}\n")),
        "{done}"
    );
    let listed = render::list_text(&h.list().unwrap().0, &[]);
    assert!(listed.contains("before restore (restore "), "{listed}");
    h.apply(
        &h.plan(applied.undo.as_deref().unwrap(), &[]).unwrap(),
        false,
    )
    .unwrap();
    assert_eq!(ws.read("f.txt").unwrap().0, b"v3\n");
}

#[tokio::test]
async fn ignored_and_oversized_files_are_left_out_and_said() {
    let ws = Ws::new();
    ws.write(".gitignore", b"build/\n*.log\n", 0o644);
    ws.write("build/out.bin", b"artifact", 0o644);
    ws.write("debug.log", b"log v1", 0o644);
    ws.write("big.dat", &vec![7u8; 4096], 0o644);
    ws.write("small.txt", b"small", 0o644);
    let h = ws.history(true, 1024);
    let id = around(&h, &call("c1", "run_shell_command", Kind::Execute), || {
        ws.sh("echo changed > build/out.bin; echo v2 > debug.log; echo x >> big.dat; echo s2 > small.txt")
    })
    .await;
    let plan = h.plan(&id, &[]).unwrap();
    let text = render::plan_text(&h, &plan);
    assert!(
        text.contains("over the size cap of 1024 bytes") && text.contains("big.dat"),
        "{text}"
    );
    assert!(text.contains("ignore rules"), "{text}");
    let shown: Vec<String> = plan.changes.iter().map(|c| c.shown()).collect();
    assert!(
        !shown
            .iter()
            .any(|s| s.contains("build") || s.contains(".log")),
        "{shown:?}"
    );
    let applied = h.apply(&plan, false).unwrap();
    assert_eq!(ws.read("small.txt").unwrap().0, b"small");
    assert!(
        applied.failed.iter().any(|f| f.starts_with("big.dat")),
        "{applied:?}"
    );
    // Ignored files stay as the command left them.
    assert_eq!(ws.read("debug.log").unwrap().0, b"v2\n");
    assert_eq!(ws.read("build/out.bin").unwrap().0, b"changed\n");
}

#[tokio::test]
async fn only_the_paths_asked_for_are_restored() {
    let ws = Ws::new();
    ws.write("a/x.txt", b"x1", 0o644);
    ws.write("b.txt", b"b1", 0o644);
    let h = ws.history(false, 1 << 20);
    let id = around(&h, &call("c1", "run_shell_command", Kind::Execute), || {
        ws.sh("rm -r a && echo b2 > b.txt")
    })
    .await;
    let plan = h.plan(&id, &[ws.root.join("a/x.txt")]).unwrap();
    h.apply(&plan, false).unwrap();
    assert_eq!(ws.read("a/x.txt").unwrap().0, b"x1");
    assert_eq!(ws.read("b.txt").unwrap().0, b"b2\n");
}

#[tokio::test]
async fn read_only_calls_take_no_checkpoint_and_save_memory_does() {
    let ws = Ws::new();
    ws.write("a.txt", b"a", 0o644);
    let h = ws.history(true, 1 << 20);
    h.before_call(&call("r1", "read_file", Kind::Read))
        .await
        .unwrap();
    assert!(h.store().checkpoints().is_empty());
    h.before_call(&call("m1", "save_memory", Kind::Think))
        .await
        .unwrap();
    assert_eq!(h.store().checkpoints().len(), 1);
}

#[tokio::test]
async fn retention_removes_old_checkpoints_and_what_only_they_held() {
    let ws = Ws::new();
    ws.write("a.txt", b"first content", 0o644);
    let h = ws.history(true, 1 << 20);
    around(&h, &call("c1", "edit", Kind::Edit), || {
        ws.write("a.txt", b"second content", 0o644)
    })
    .await;
    h.flush();
    // The session has ended (a pack still written to is never swept).
    drop(h);
    let store = Store::open(ws.store.clone());
    let records = store.checkpoints().len();
    assert_eq!(records, 1);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    // A session starts a thread for the sweep only where there may be work: records,
    // and no sweep today.
    assert!(
        !Store::open(ws.store.join("none")).may_sweep(now),
        "a fresh store"
    );
    assert!(store.may_sweep(now));
    // A store where nothing has expired: the daily sweep writes nothing, not even its
    // lock and stamp (a fresh store's session pays nothing for it).
    assert!(!store.sweep(30, now, false).unwrap().ran);
    assert!(!ws.store.join("lock").exists() && !ws.store.join("swept").exists());
    // Within the period nothing goes.
    let kept = store.sweep(30, now, true).unwrap();
    assert!(kept.ran);
    assert_eq!((kept.records, kept.objects), (0, 0));
    // Thirty-one days later the records and every object go (none is named any more).
    let later = now + 31 * 24 * 3600 * 1000;
    let swept = store.sweep(30, later, true).unwrap();
    assert_eq!(swept.records, 2, "the before and after records");
    assert!(swept.objects >= 3, "{swept:?}");
    assert!(store.checkpoints().is_empty());
    // Without force, not again the same day.
    assert!(!store.may_sweep(later));
    assert!(!store.sweep(30, later, false).unwrap().ran);
}

/// The store's object files, and the folders among its entries.
fn object_entries(store: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut files, mut folders) = (Vec::new(), Vec::new());
    for entry in std::fs::read_dir(store.join("objects")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            folders.push(path);
        } else {
            files.push(path);
        }
    }
    (files, folders)
}

/// Each object of a pack file (`pack.rs`: `TBP1`, then hash, type byte, u32 length,
/// payload): (hash in hex, type byte, payload).
fn pack_entries(pack: &Path) -> Vec<(String, u8, Vec<u8>)> {
    let bytes = std::fs::read(pack).unwrap();
    let mut rest = bytes.strip_prefix(b"TBP1".as_slice()).unwrap();
    let mut out = Vec::new();
    while !rest.is_empty() {
        let hex: String = rest[..32].iter().map(|b| format!("{b:02x}")).collect();
        let kind = rest[32];
        let len = u32::from_le_bytes(rest[33..37].try_into().unwrap()) as usize;
        out.push((hex, kind, rest[37..37 + len].to_vec()));
        rest = &rest[37 + len..];
    }
    out
}

fn later_ms(days: u64) -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        + days * 24 * 3600 * 1000
}

#[tokio::test]
async fn objects_go_to_one_pack_per_session_and_loose_objects_of_older_stores_still_restore_and_sweep()
 {
    let ws = Ws::new();
    ws.write("a.txt", b"first content", 0o644);
    let h = ws.history(false, 1 << 20);
    let id = around(&h, &call("c1", "edit", Kind::Edit), || {
        ws.write("a.txt", b"second content", 0o644)
    })
    .await;
    h.flush();
    drop(h);
    // One file for the session's objects, not one per object.
    let (files, folders) = object_entries(&ws.store);
    assert!(folders.is_empty(), "{folders:?}");
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        name.starts_with("pack-") && name.ends_with(".tbp"),
        "{name}"
    );
    let entries = pack_entries(&files[0]);
    assert!(entries.len() >= 3, "two contents and a tree: {entries:?}");
    // A store made before stop 58 kept each object in a two-character folder, one made
    // before packs in a file of its own: half of each.
    for (i, (hex, kind, payload)) in entries.iter().enumerate() {
        let mut object = b"TB1".to_vec();
        object.push(*kind);
        object.extend_from_slice(payload);
        let path = if i % 2 == 0 {
            let folder = ws.store.join("objects").join(&hex[..2]);
            std::fs::create_dir_all(&folder).unwrap();
            folder.join(&hex[2..])
        } else {
            ws.store.join("objects").join(hex)
        };
        std::fs::write(path, object).unwrap();
    }
    std::fs::remove_file(&files[0]).unwrap();
    // A new session reads them: the checkpoint restores the first content...
    let old = ws.history(false, 1 << 20);
    old.apply(&old.plan(&id, &[]).unwrap(), true).unwrap();
    assert_eq!(ws.read("a.txt").unwrap().0, b"first content");
    drop(old);
    // ...and a sweep long after removes them, from their folders too.
    let store = Store::open(ws.store.clone());
    let swept = store.sweep(30, later_ms(31), true).unwrap();
    assert!(swept.objects >= entries.len(), "{swept:?}");
    let (files, folders) = object_entries(&ws.store);
    assert!(files.is_empty(), "{files:?}");
    for folder in folders {
        let left: Vec<_> = std::fs::read_dir(&folder).unwrap().collect();
        assert!(left.is_empty(), "{folder:?}: {left:?}");
    }
}

/// A pack whose session's records are past the period but whose objects a later record
/// still names: the sweep writes those out as loose files, then removes the pack, and
/// the later checkpoint still restores. A pack a live session writes to is left alone.
#[tokio::test]
async fn the_sweep_keeps_what_later_records_name_of_a_removed_pack_and_spares_a_pack_in_use() {
    let ws = Ws::new();
    ws.write("a.txt", b"first content", 0o644);
    let first = ws.history(false, 1 << 20);
    around(&first, &call("c1", "edit", Kind::Edit), || {
        ws.write("a.txt", b"second content", 0o644)
    })
    .await;
    first.flush();
    drop(first);
    let (packs, _) = object_entries(&ws.store);
    assert_eq!(packs.len(), 1);
    // A later session names the second content and the tree, both in that pack.
    let second = ws.history(false, 1 << 20);
    let kept = second
        .checkpoint_now(Phase::Before, "edit", "c2", None)
        .unwrap();
    // Its records are dated 31 days on, so a sweep then keeps them and not the first's.
    let records = ws.store.join("checkpoints");
    for entry in std::fs::read_dir(&records).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name.contains(&kept.id[..10]) {
            let (time, rest) = name.split_once('-').unwrap();
            let moved: u64 = time.parse::<u64>().unwrap() + 31 * 24 * 3600 * 1000;
            std::fs::rename(&path, records.join(format!("{moved:013}-{rest}"))).unwrap();
        }
    }
    // The second session still runs: had it written objects, its pack would be spared.
    let swept = Store::open(ws.store.clone())
        .sweep(30, later_ms(31), true)
        .unwrap();
    assert_eq!(swept.records, 2, "the first session's before and after");
    assert_eq!(
        swept.objects, 2,
        "the first content and the tree that held it: {swept:?}"
    );
    assert!(!packs[0].exists(), "the old pack is removed");
    let (files, _) = object_entries(&ws.store);
    let loose: Vec<_> = files
        .iter()
        .filter(|f| f.file_name().unwrap().len() == 64)
        .collect();
    assert!(
        loose.len() >= 2,
        "the second content and the tree: {files:?}"
    );
    // A write to a pack of a live session: the sweep leaves that pack alone.
    ws.write("a.txt", b"third content", 0o644);
    second
        .checkpoint_now(Phase::After, "edit", "c2", None)
        .unwrap();
    second.flush();
    let live = second.store().dir().join("objects");
    let live_packs: Vec<_> = std::fs::read_dir(&live)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tbp"))
        .collect();
    assert_eq!(
        live_packs.len(),
        1,
        "the live session's pack, spared by the first sweep too"
    );
    Store::open(ws.store.clone())
        .sweep(400, later_ms(400), true)
        .unwrap();
    assert!(live_packs[0].exists(), "a pack in use is never swept");
    // The kept checkpoint restores from the loose objects the sweep wrote.
    drop(second);
    let third = ws.history(false, 1 << 20);
    third
        .apply(&third.plan(&kept.id, &[]).unwrap(), true)
        .unwrap();
    assert_eq!(ws.read("a.txt").unwrap().0, b"second content");
}

#[test]
fn a_damaged_record_is_listed_as_damaged_and_the_rest_still_works() {
    let ws = Ws::new();
    ws.write("a.txt", b"a", 0o644);
    let h = ws.history(false, 1 << 20);
    let r = h.checkpoint_now(Phase::Before, "edit", "c1", None).unwrap();
    let bad = ws
        .store
        .join("checkpoints")
        .join(format!("{:013}-abcdef0123-b.json", r.time_ms + 1));
    std::fs::write(&bad, b"{\"version\": 1, \"id\": ").unwrap();
    let (listed, damaged) = h.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(damaged.len(), 1, "{damaged:?}");
    assert!(h.plan("abcdef", &[]).is_err());
    assert!(h.plan(&r.id, &[]).unwrap().is_empty());
}

#[tokio::test]
async fn links_out_of_the_workspace_are_never_written_through() {
    let ws = Ws::new();
    let outside = tempfile::tempdir().unwrap();
    ws.write("d/f.txt", b"inside", 0o644);
    let h = ws.history(true, 1 << 20);
    let id = around(&h, &call("c1", "run_shell_command", Kind::Execute), || {
        std::fs::remove_dir_all(ws.root.join("d")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.root.join("d")).unwrap();
    })
    .await;
    let plan = h.plan(&id, &[]).unwrap();
    let applied = h.apply(&plan, false).unwrap();
    assert!(!outside.path().join("f.txt").exists(), "{applied:?}");
    assert!(
        ws.root.join("d").is_dir() || !applied.failed.is_empty(),
        "{applied:?}"
    );
    let _ = Path::new("unused");
}

/// Issue 40: a restore never makes a set-uid (set-gid, sticky) file, and the file it
/// writes is owned by whoever restores, never by the owner it had. As root the file is
/// first given to another user, as a command of someone else's could leave it.
#[tokio::test]
async fn a_restore_strips_set_id_bits_and_gives_the_file_to_the_runner() {
    use std::os::unix::fs::MetadataExt;
    let ws = Ws::new();
    ws.write("bin/tool", b"#!/bin/sh\necho hi\n", 0o4755);
    ws.write("bin/group", b"g\n", 0o2750);
    let me = rustix::process::geteuid().as_raw();
    let as_root = me == 0;
    if as_root {
        std::os::unix::fs::chown(ws.root.join("bin/tool"), Some(4321), Some(4321)).unwrap();
        // chown clears the set-uid bit: set it again, as the other user's command would.
        std::fs::set_permissions(
            ws.root.join("bin/tool"),
            std::fs::Permissions::from_mode(0o4755),
        )
        .unwrap();
    }
    let h = ws.history(false, 1 << 20);
    let id = around(&h, &call("c1", "run_shell_command", Kind::Execute), || {
        ws.sh("rm bin/tool && echo changed > bin/group && chmod 640 bin/group")
    })
    .await;
    let plan = h.plan(&id, &[]).unwrap();
    let text = render::plan_text(&h, &plan);
    assert!(
        text.contains("without their set-user-ID, set-group-ID and sticky bits"),
        "{text}"
    );
    let applied = h.apply(&plan, false).unwrap();
    assert!(applied.failed.is_empty(), "{applied:?}");
    assert_eq!(
        ws.read("bin/tool").unwrap(),
        (b"#!/bin/sh\necho hi\n".to_vec(), 0o755)
    );
    assert_eq!(ws.read("bin/group").unwrap(), (b"g\n".to_vec(), 0o750));
    let owner = std::fs::metadata(ws.root.join("bin/tool")).unwrap().uid();
    assert_eq!(owner, me, "owned by the user who restored");
    if as_root {
        assert_ne!(owner, 4321);
    }
}

/// Issue 40: `restore ID -- ../outside/a.txt` names a path no restore may write: it is
/// refused, not answered with "nothing to restore"; `.` and `..` inside still select.
#[tokio::test]
async fn a_path_outside_the_workspace_is_refused_and_dots_inside_still_select() {
    let ws = Ws::new();
    ws.write("src/a.txt", b"one", 0o644);
    let h = ws.history(false, 1 << 20);
    let id = around(&h, &call("c1", "edit", Kind::Edit), || {
        ws.write("src/a.txt", b"two", 0o644)
    })
    .await;
    let outside = ws.root.join("../outside/a.txt");
    let err = h.plan(&id, &[outside]).unwrap_err();
    assert!(err.to_string().contains("outside the workspace"), "{err}");
    assert!(
        matches!(
            &err,
            toolbelt_history::HistoryError::OutsideWorkspace { .. }
        ),
        "{err:?}"
    );
    let sibling = ws.root.join("src/../../ws-other/a.txt");
    assert!(h.plan(&id, &[sibling]).is_err());
    let dotted = ws.root.join("src/./../src/a.txt");
    let plan = h.plan(&id, &[dotted]).unwrap();
    assert_eq!(plan.changes.len(), 1, "{}", render::plan_text(&h, &plan));
}

#[tokio::test]
async fn what_a_turn_changed_names_its_sides_before_and_after() {
    let ws = Ws::new();
    ws.write("hello.py", b"print('hi')\n", 0o644);
    let h = ws.history(true, 1 << 20);
    h.begin_turn(TurnStart {
        history_len: 0,
        prompt: "greet louder".into(),
    });
    around(&h, &call("c1", "edit", Kind::Edit), || {
        ws.write("hello.py", b"print('HI')\n", 0o644)
    })
    .await;
    let text = h.turns_text();
    assert!(
        text.contains("--- hello.py (before)\n+++ hello.py (after)\n"),
        "{text}"
    );
    assert!(!text.contains("Proposed") && !text.contains('\t'), "{text}");
}

/// A workspace at least `watch_min_files` large is watched: found so by counting its
/// entries (a project seen for the first time) or from the project's last picture (the
/// next session); each still records a change made by another process.
#[tokio::test]
async fn a_large_workspace_is_watched_from_its_first_walk_or_its_last_picture() {
    let ws = Ws::new();
    for name in ["a.txt", "b.txt", "src/c.txt", "src/d.txt"] {
        ws.write(name, b"one\n", 0o644);
    }
    for session in 0..2 {
        let h = ws.history_watching_from(true, 1 << 20, 5);
        h.start();
        let c = call(&format!("c{session}"), "run_shell_command", Kind::Execute);
        let id = around(&h, &c, || ws.sh("echo two > src/c.txt")).await;
        assert!(h.watching(), "session {session}: five entries, not watched");
        let plan = h.plan(&id, &[]).unwrap();
        let text = render::plan_text(&h, &plan);
        assert!(text.contains("src/c.txt"), "session {session}: {text}");
        h.apply(&plan, false).unwrap();
        assert_eq!(ws.read("src/c.txt").unwrap().0, b"one\n");
        h.flush();
    }
}

/// The agent's runtime has a worker per core, where a checkpoint runs in place on the
/// calling worker instead of on the blocking pool: the records are the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_on_a_multi_thread_runtime_restore_as_on_the_blocking_pool() {
    let ws = Ws::new();
    ws.write("a.txt", b"before", 0o644);
    let h = ws.history(false, 1 << 20);
    let id = around(&h, &call("c1", "run_shell_command", Kind::Execute), || {
        ws.write("a.txt", b"after", 0o644);
        ws.write("b.txt", b"new", 0o644);
    })
    .await;
    assert_eq!(h.store().checkpoints().len(), 1);
    h.apply(&h.plan(&id, &[]).unwrap(), false).unwrap();
    assert_eq!(ws.read("a.txt").unwrap().0, b"before");
    assert!(ws.read("b.txt").is_none());
}

/// The store's folders are made once per process; one removed by hand since (the
/// records', the objects') is made again at the next checkpoint.
#[test]
fn a_store_folder_removed_by_hand_is_made_again() {
    let ws = Ws::new();
    ws.write("a.txt", b"one", 0o644);
    let h = ws.history(false, 1 << 20);
    h.checkpoint_now(Phase::Before, "edit", "c1", None).unwrap();
    std::fs::remove_dir_all(ws.store.join("checkpoints")).unwrap();
    std::fs::remove_dir_all(ws.store.join("objects")).unwrap();
    ws.write("a.txt", b"two", 0o644);
    let r = h.checkpoint_now(Phase::Before, "edit", "c2", None).unwrap();
    assert_eq!(h.store().checkpoints().len(), 1);
    ws.write("a.txt", b"three", 0o644);
    h.apply(&h.plan(&r.id, &[]).unwrap(), true).unwrap();
    assert_eq!(ws.read("a.txt").unwrap().0, b"two");
}
