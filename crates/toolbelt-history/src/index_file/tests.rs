//! One-shot histories seeded from the project's index file: what changed since the
//! last checkpoint is found whatever the directories' times say, and an index file that
//! is damaged or names another checkpoint is not used. Each checkpoint is compared with
//! the one a history without any index takes of the same files (a whole walk into a
//! store of its own): the same tree hash means the same files, stats and contents.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use toolbelt_config::settings::Settings;
use toolbelt_core::WorkspaceRoots;

use super::*;
use crate::history::{History, HistoryConfig};
use crate::record::{self, Phase};

struct Ws {
    dir: tempfile::TempDir,
    root: PathBuf,
    store: PathBuf,
}

impl Ws {
    /// A workspace with a few files in folders, all dated an hour ago (so nothing in it
    /// is too recent for its stat to be trusted).
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws").canonicalize_or_create();
        let ws = Ws {
            store: dir.path().join("store"),
            dir,
            root,
        };
        ws.write("a/x.txt", "one\n");
        ws.write("a/y.txt", "why\n");
        ws.write("b/c/z.txt", "zed\n");
        ws.write("b/c/w.log", "log\n");
        ws.write(".gitignore", "target/\n");
        ws.age();
        ws
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn sh(&self, line: &str) {
        let ok = Command::new("sh")
            .arg("-c")
            .arg(line)
            .current_dir(&self.root)
            .status()
            .unwrap()
            .success();
        assert!(ok, "{line}");
    }

    /// Dates every file and folder (the root too) an hour ago, as `touch -d` does.
    fn age(&self) {
        self.sh("find . -exec touch -h -d \"@$(( $(date +%s) - 3600 ))\" {} +");
    }

    fn history_in(&self, store: &Path) -> History {
        self.history_watching(store, false)
    }

    fn history_watching(&self, store: &Path, watch: bool) -> History {
        History::open(HistoryConfig {
            store_dir: store.to_path_buf(),
            roots: WorkspaceRoots::new([&self.root]).unwrap(),
            settings: Arc::new(Settings::default()),
            session: "s".into(),
            size_cap: 1 << 20,
            max_files: 10_000,
            exclude: Vec::new(),
            watch,
            watch_min_files: 0,
            work_dir: Default::default(),
        })
    }

    /// A fresh process's history on the project's store, as `tools call` opens it.
    fn one_shot(&self) -> History {
        self.history_in(&self.store)
    }

    fn checkpoint(&self, h: &History) -> String {
        let r = h.checkpoint_now(Phase::Before, "t", "c", None).unwrap();
        r.roots[0].tree.clone()
    }

    /// The tree a history with no index at all records of the workspace now.
    fn truth(&self) -> String {
        let other = self
            .dir
            .path()
            .join(format!("truth-{}", uuid::Uuid::new_v4()));
        self.checkpoint(&self.history_in(&other))
    }

    fn index_path(&self) -> PathBuf {
        self.store.join(FILE_NAME)
    }
}

trait CanonicalizeOrCreate {
    fn canonicalize_or_create(self) -> PathBuf;
}

impl CanonicalizeOrCreate for PathBuf {
    fn canonicalize_or_create(self) -> PathBuf {
        std::fs::create_dir_all(&self).unwrap();
        self.canonicalize().unwrap()
    }
}

/// Whether a fresh history on `ws`'s store seeds its index from the index file.
fn seeds_from_index(ws: &Ws) -> bool {
    let h = ws.one_shot();
    let shared = &h.shared;
    let mut state = shared.state_mut();
    let wanted = shared.wanted_roots();
    shared.place_roots(&mut state, &wanted);
    let last = shared.store.record_files().into_iter().next().unwrap();
    let last = record::read(&last.path).unwrap();
    shared.seed_from_index(&mut state, &last)
}

#[test]
fn a_one_shot_history_from_the_index_finds_changes_whatever_the_folder_times_say() {
    let ws = Ws::new();
    ws.checkpoint(&ws.one_shot());
    assert!(ws.index_path().is_file(), "no index file in the store");
    assert!(seeds_from_index(&ws), "the index file was not used");
    // A new file, its folder's time put back: the folder's change time still differs.
    ws.write("a/new.txt", "new\n");
    ws.sh("touch -h -d \"@$(( $(date +%s) - 3600 ))\" a");
    // A file changed in place (its folder's times do not change), one deleted.
    ws.write("a/y.txt", "changed, longer\n");
    ws.sh("rm b/c/z.txt");
    let h = ws.one_shot();
    let first = ws.checkpoint(&h);
    assert_eq!(first, ws.truth(), "the one-shot checkpoint missed a change");
    // The same process again, after a shell command: a new folder with a file, a
    // deleted folder.
    ws.write("d/e/f.txt", "deep\n");
    ws.sh("rm -r b");
    assert_eq!(
        ws.checkpoint(&h),
        ws.truth(),
        "the second checkpoint missed a change"
    );
}

#[test]
fn a_file_changed_within_the_same_tick_as_its_read_is_read_again() {
    let ws = Ws::new();
    // Written now: too recent for its stat to be trusted by the next process.
    ws.write("a/x.txt", "two\n");
    let truth = ws.checkpoint(&ws.one_shot());
    // What the index would hold had the file changed again, to the same size, in the
    // clock tick it was read in: the stat it has now, the hash of other content.
    let mut file = read(&ws.store).unwrap();
    let root = &mut file.roots[0];
    let Some(Node::Leaf(leaf)) = root.tree.children.get_mut(&b"a"[..]).and_then(|a| match a {
        Node::Dir(d) => d.children.get_mut(&b"x.txt"[..]),
        Node::Leaf(_) => None,
    }) else {
        panic!("a/x.txt is not in the index");
    };
    leaf.hash = ContentHash::of(b"old\n");
    // Its folders' trees are encoded again, so a leaf kept as the index has it shows.
    root.tree.hash = None;
    if let Some(Node::Dir(a)) = root.tree.children.get_mut(&b"a"[..]) {
        a.hash = None;
    }
    let roots: Vec<_> = file
        .roots
        .iter()
        .map(|r| (r.path.as_path(), r.tree_hash, r.rules, r.since_ns, &r.tree))
        .collect();
    let bytes = encode(&roots, &HashSet::new(), 0, &[]);
    write(&ws.store, &bytes).unwrap();
    assert!(seeds_from_index(&ws));
    assert_eq!(
        ws.checkpoint(&ws.one_shot()),
        truth,
        "a racily clean file was trusted"
    );
}

#[test]
fn a_changed_ignore_rule_is_obeyed_by_a_one_shot_history() {
    let ws = Ws::new();
    ws.checkpoint(&ws.one_shot());
    // An ignore file edited in place, its time and its folder's put back.
    ws.write(".gitignore", "target/\n*.log\n");
    ws.age();
    let ignored = ws.checkpoint(&ws.one_shot());
    assert_eq!(ignored, ws.truth(), "the edited .gitignore was not obeyed");
    // A new ignore file in a folder below, its folder's time put back.
    ws.write("a/.qwenignore", "y.txt\n");
    ws.age();
    assert_eq!(
        ws.checkpoint(&ws.one_shot()),
        ws.truth(),
        "the new .qwenignore was not obeyed"
    );
}

#[test]
fn a_linked_worktrees_excludes_file_is_watched_too() {
    let ws = Ws::new();
    // The workspace is a linked worktree: its `.git` is a file naming the repository's.
    let main_git = ws.dir.path().join("main.git");
    let gitdir = main_git.join("worktrees").join("ws");
    std::fs::create_dir_all(&gitdir).unwrap();
    std::fs::create_dir_all(main_git.join("info")).unwrap();
    std::fs::write(gitdir.join("commondir"), "../..\n").unwrap();
    std::fs::write(
        ws.root.join(".git"),
        format!("gitdir: {}\n", gitdir.display()),
    )
    .unwrap();
    std::fs::write(main_git.join("info").join("exclude"), "# none\n").unwrap();
    ws.age();
    ws.sh(&format!(
        "touch -d \"@$(( $(date +%s) - 3600 ))\" {}",
        main_git.join("info/exclude").display()
    ));
    ws.checkpoint(&ws.one_shot());
    std::fs::write(main_git.join("info").join("exclude"), "*.txt\n").unwrap();
    ws.sh(&format!(
        "touch -d \"@$(( $(date +%s) - 3600 ))\" {}",
        main_git.join("info/exclude").display()
    ));
    assert_eq!(
        ws.checkpoint(&ws.one_shot()),
        ws.truth(),
        "the repository's excludes were not obeyed"
    );
}

/// The walks the next checkpoint of `h` makes, and its tree.
fn walks_of(ws: &Ws, h: &History) -> (usize, String) {
    crate::scan::WALKS.with(|w| w.set(0));
    let tree = ws.checkpoint(h);
    (crate::scan::WALKS.with(std::cell::Cell::get), tree)
}

#[test]
fn a_session_lists_again_the_folders_that_changed_or_walks_once_when_most_did() {
    let ws = Ws::new();
    let h = ws.history_in(&ws.store);
    ws.checkpoint(&h);
    // One folder of four changed: it alone is listed again (one walk of it).
    ws.write("a/new.txt", "new\n");
    let (walks, tree) = walks_of(&ws, &h);
    assert_eq!(tree, ws.truth(), "one folder changed: wrong checkpoint");
    assert_eq!(walks, 1, "one folder changed");
    // Three of four changed (`a` again, `b`, `b/c`): one walk of the root, not three.
    ws.write("a/newer.txt", "newer\n");
    ws.write("b/two.txt", "two\n");
    ws.sh("rm b/c/w.log");
    let (walks, tree) = walks_of(&ws, &h);
    assert_eq!(tree, ws.truth(), "most folders changed: wrong checkpoint");
    assert_eq!(walks, 1, "most folders changed");
    // Nothing changed since, every folder old enough again: no walk at all.
    ws.age();
    ws.checkpoint(&h);
    let (walks, tree) = walks_of(&ws, &h);
    assert_eq!(tree, ws.truth(), "nothing changed: wrong checkpoint");
    assert_eq!(walks, 0, "nothing changed");
}

#[test]
fn a_damaged_or_stale_index_file_is_not_used_and_the_checkpoint_is_still_right() {
    let ws = Ws::new();
    ws.checkpoint(&ws.one_shot());
    let good = std::fs::read(ws.index_path()).unwrap();
    ws.write("a/x.txt", "changed after the first index\n");
    ws.checkpoint(&ws.one_shot());
    let newer = std::fs::read(ws.index_path()).unwrap();
    assert_ne!(good, newer, "the index file was not written again");
    let mut flipped = newer.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x40;
    let cases: [(&str, Vec<u8>); 4] = [
        ("truncated", newer[..newer.len() / 2].to_vec()),
        ("a byte changed", flipped),
        ("not an index", b"toolbelt-index\n garbage".to_vec()),
        ("of an older checkpoint", good),
    ];
    for (what, bytes) in cases {
        std::fs::write(ws.index_path(), &bytes).unwrap();
        assert!(!seeds_from_index(&ws), "a {what} index file was used");
        ws.write("a/y.txt", &format!("{what}\n"));
        assert_eq!(
            ws.checkpoint(&ws.one_shot()),
            ws.truth(),
            "{what}: wrong checkpoint"
        );
    }
    std::fs::remove_file(ws.index_path()).unwrap();
    ws.write("a/y.txt", "no index\n");
    assert_eq!(
        ws.checkpoint(&ws.one_shot()),
        ws.truth(),
        "no index file: wrong checkpoint"
    );
    assert!(
        !ws.root.join(FILE_NAME).exists(),
        "the index belongs in the store, not the workspace"
    );
}

#[test]
fn a_session_with_a_watcher_writes_the_index_file_when_the_store_is_quiet() {
    let ws = Ws::new();
    let session = ws.history_watching(&ws.store, true);
    ws.checkpoint(&session);
    ws.write("a/x.txt", "changed in the session\n");
    ws.checkpoint(&session);
    session.flush();
    assert!(
        seeds_from_index(&ws),
        "the session's index file does not name its last checkpoint"
    );
    ws.write("a/y.txt", "changed after the session\n");
    assert_eq!(ws.checkpoint(&ws.one_shot()), ws.truth());
}

#[test]
fn index_files_round_trip_and_refuse_names_that_leave_their_folder() {
    let mut tree = DirNode::new(0o755);
    tree.stat = Some(DirStat {
        mtime_ns: 1,
        ctime_ns: 2,
        ino: 3,
        rules: [7; 16],
    });
    let leaf = Leaf {
        kind: EntryKind::File,
        mode: 0o644,
        size: 4,
        mtime_ns: 5,
        ctime_ns: 6,
        ino: 7,
        hash: ContentHash::of(b"x"),
    };
    tree.children.insert(b"f".to_vec(), Node::Leaf(leaf));
    tree.children
        .insert(b"sub".to_vec(), Node::Dir(DirNode::new(0o700)));
    let path = Path::new("/ws");
    let hash = ContentHash::of(b"tree");
    let recent: HashSet<(usize, Vec<u8>)> = [(0, b"f".to_vec())].into_iter().collect();
    let bytes = encode(
        &[(path, hash, Some([1; 16]), Some(9), &tree)],
        &recent,
        2,
        &["u".into()],
    );
    let back = decode(&bytes).unwrap();
    assert_eq!(back.roots[0].path, path);
    assert_eq!(back.roots[0].tree_hash, hash);
    assert_eq!(
        (back.roots[0].rules, back.roots[0].since_ns),
        (Some([1; 16]), Some(9))
    );
    assert_eq!(back.roots[0].tree.stat, tree.stat);
    assert!(matches!(back.roots[0].tree.get(b"f"), Some(Node::Leaf(l)) if *l == leaf));
    assert!(matches!(back.roots[0].tree.get(b"sub"), Some(Node::Dir(d)) if d.mode == 0o700));
    assert_eq!(
        (back.recent, back.withheld, back.unreadable),
        (vec![(0, b"f".to_vec())], 2, vec!["u".to_string()])
    );
    // A name with a slash, rewritten with a valid checksum: refused all the same.
    let mut bad = bytes[..bytes.len() - 32].to_vec();
    let at = bad.windows(3).position(|w| w == b"sub").unwrap();
    bad[at + 1] = b'/';
    let sum = *blake3::hash(&bad).as_bytes();
    bad.extend_from_slice(&sum);
    assert!(decode(&bad).is_none(), "a name with a slash was read");
    for cut in [0, 10, bytes.len() - 1] {
        assert!(
            decode(&bytes[..cut]).is_none(),
            "a file cut at {cut} was read"
        );
    }
}
