//! A session's checkpoints: the [`Checkpoints`] the scheduler calls before and after
//! every call that may change files, on a [`Store`].
//!
//! The first checkpoint needs the whole workspace: [`History::start`] takes it in the
//! background when the session opens, from the last checkpoint of the project when
//! there is one (a file whose stat has not changed is not read again), so it is usually
//! done before the model's first call. After it the watcher (`watch.rs`) says what
//! changed, and a checkpoint reads only that; without inotify, or after an overflow,
//! the workspace is walked (stat only, for what has not changed).
//!
//! Calls that cover nothing are let through at once: read-only kinds (`read`,
//! `search`, `fetch`, `think`), except `save_memory`, which writes a file although it
//! is `think`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use toolbelt_config::settings::Settings;
use toolbelt_core::{BoxFuture, WorkspaceRoots};
use toolbelt_engine::{
    checkpoint::CheckpointCall, checkpoint::CheckpointError, checkpoint::Checkpoints,
    checkpoint::TurnStart,
};

use crate::error::HistoryError;
use crate::hash::ContentHash;
use crate::index::{DirNode, Node, join};
use crate::record::{self, LeftOut, Phase, Record, RootTree};
use crate::scan::{Scan, ScanError};
use crate::store::Store;
use crate::syncer::Syncer;
use crate::tree::EntryKind;
use crate::watch::Watcher;

/// How many left-out files a record names.
const NAMED: usize = 50;
/// Without a watcher, a tree of fewer entries than this is walked on one thread:
/// starting the parallel walk's threads costs more than such a walk (about a
/// millisecond for a five-file workspace, against 0.3 ms on one thread).
const PARALLEL_FROM: usize = 1_000;

/// How a session's checkpoints are set up.
#[derive(Debug, Clone)]
pub struct HistoryConfig {
    /// The project's store (`<toolbelt home>/history/<project>`).
    pub store_dir: PathBuf,
    /// The workspace roots (their path rules apply to the walk).
    pub roots: WorkspaceRoots,
    /// The session's settings (the ignore rules of `context.fileFiltering`).
    pub settings: Arc<Settings>,
    /// The session's ID, recorded in each checkpoint.
    pub session: String,
    /// Files larger than this are left out (`general.checkpointing.maxFileSize`).
    pub size_cap: u64,
    /// More files than this and checkpoints stop (`general.checkpointing.maxFiles`).
    pub max_files: usize,
    /// Directories never walked (the toolbelt home, when it lies in the workspace).
    pub exclude: Vec<PathBuf>,
    /// Use inotify (off: walk at every checkpoint).
    pub watch: bool,
    /// With `watch`, a workspace of fewer entries than this is walked at each checkpoint
    /// instead of watched: its walk costs well under a millisecond, while closing an
    /// inotify instance that held watches waits for a kernel grace period (fsnotify's
    /// SRCU, up to about 20 ms), and the process's exit waits for that close. Whether
    /// the workspace is that small is known from the project's last picture, else by
    /// counting its first entries (see `seed_and_watch`).
    pub watch_min_files: usize,
    /// Where the session works when it entered a git worktree: checkpoints then cover
    /// that worktree instead of the workspace roots (`roots.rs`).
    pub work_dir: toolbelt_core::WorkDirSlot,
}

/// One user turn of the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnMark {
    /// From 1.
    pub number: u32,
    /// Its ID: a stream-JSON client's message `uuid`, else a fresh one.
    pub id: String,
    /// Messages in the conversation before its prompt.
    pub history_len: usize,
    /// What the person wrote.
    pub prompt: String,
    /// When it started, in milliseconds since the epoch.
    pub started_ms: u64,
}

pub(crate) struct RootIndex {
    pub(crate) path: PathBuf,
    pub(crate) tree: DirNode,
    /// The stamp of the rules outside the tree at its last whole walk (`revisit.rs`).
    pub(crate) rules: Option<[u8; 16]>,
    /// The start of the last sync that saw every directory: since when the
    /// directories' stats hold (`revisit.rs`).
    pub(crate) since_ns: Option<i64>,
}

pub(crate) struct State {
    pub(crate) roots: Vec<RootIndex>,
    /// Indexes of roots set aside (the checkout while the session is in a worktree).
    pub(crate) parked: Vec<RootIndex>,
    /// `recent` entries of the parked roots.
    pub(crate) parked_recent: Vec<(PathBuf, Vec<u8>)>,
    watcher: Option<Watcher>,
    ready: bool,
    /// Why checkpoints stopped for this session.
    disabled: Option<String>,
    pub(crate) recent: HashSet<(usize, Vec<u8>)>,
    pub(crate) left_out: LeftOut,
    left_out_of: Vec<ContentHash>,
    /// Each running call's checkpoint ID.
    calls: HashMap<String, String>,
    /// The tree hashes the project's index file names, as far as this session knows
    /// (it is written again only when they change).
    pub(crate) index_of: Vec<ContentHash>,
    /// The trees of the last record a session with a watcher wrote, for its index file.
    pub(crate) index_due: Option<Vec<ContentHash>>,
}

#[derive(Default)]
struct Turns {
    /// Turns started so far (numbers are never given twice, also after a rewind).
    count: u32,
    marks: Vec<TurnMark>,
    next_id: Option<String>,
}

pub(crate) struct Shared {
    pub(crate) store: Store,
    pub(crate) config: HistoryConfig,
    state: Mutex<State>,
    turns: Mutex<Turns>,
    pub(crate) syncer: Syncer,
}

/// A session's checkpoints (see the module documentation). Cheap to clone.
#[derive(Clone)]
pub struct History {
    pub(crate) shared: Arc<Shared>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl History {
    /// Checkpoints on the store at `config.store_dir`; nothing is read until the first
    /// checkpoint or [`History::start`].
    pub fn open(config: HistoryConfig) -> Self {
        // The roots are placed at the first checkpoint (`roots.rs`).
        let shared = Arc::new(Shared {
            store: Store::open(config.store_dir.clone()),
            config,
            state: Mutex::new(State {
                roots: Vec::new(),
                parked: Vec::new(),
                parked_recent: Vec::new(),
                watcher: None,
                ready: false,
                disabled: None,
                recent: HashSet::new(),
                left_out: LeftOut::default(),
                left_out_of: Vec::new(),
                calls: HashMap::new(),
                index_of: Vec::new(),
                index_due: None,
            }),
            turns: Mutex::new(Turns::default()),
            syncer: Syncer::start(),
        });
        // At quiet times a session with a watcher writes its index file (`index_file.rs`).
        let weak = Arc::downgrade(&shared);
        shared.syncer.at_quiet(Box::new(move || {
            if let Some(shared) = weak.upgrade() {
                shared.write_due_index();
            }
        }));
        History { shared }
    }

    /// Takes the first picture of the workspace in the background, so the first call
    /// does not wait for it (it waits only if it comes before the picture is done).
    pub fn start(&self) {
        let shared = self.shared.clone();
        let _ = std::thread::Builder::new()
            .name("toolbelt-history-start".into())
            .spawn(move || {
                let mut state = lock(&shared.state);
                if let Err(e) = shared.sync(&mut state, None, &[]) {
                    state.disabled = Some(e.to_string());
                }
            });
    }

    /// The project's store.
    pub fn store(&self) -> &Store {
        &self.shared.store
    }

    /// The session's ID.
    pub fn session(&self) -> &str {
        &self.shared.config.session
    }

    /// Whether an inotify watcher says what changed (else each checkpoint walks, by
    /// folder stats): off before the first picture, without inotify, and for a
    /// workspace smaller than [`HistoryConfig::watch_min_files`].
    pub fn watching(&self) -> bool {
        lock(&self.shared.state).watcher.is_some()
    }

    /// Why checkpoints stopped for this session, if they did.
    pub fn disabled(&self) -> Option<String> {
        lock(&self.shared.state).disabled.clone()
    }

    /// The next turn gets this ID (a stream-JSON client's message `uuid`).
    pub fn set_next_turn_id(&self, id: String) {
        lock(&self.shared.turns).next_id = Some(id);
    }

    /// The turns of this session so far, oldest first.
    pub fn turns(&self) -> Vec<TurnMark> {
        lock(&self.shared.turns).marks.clone()
    }

    /// Forgets the turns from `number` on (the conversation was rewound to before it).
    pub fn forget_turns_from(&self, number: u32) {
        lock(&self.shared.turns).marks.retain(|m| m.number < number);
    }

    /// Waits until every checkpoint taken so far is on disk (see `syncer.rs`).
    pub fn flush(&self) {
        self.shared.syncer.flush();
    }

    /// Takes a checkpoint now (outside any call): `tool` and `call_id` say what for.
    pub fn checkpoint_now(
        &self,
        phase: Phase,
        tool: &str,
        call_id: &str,
        id: Option<String>,
    ) -> Result<Record, HistoryError> {
        self.shared.checkpoint(phase, tool, call_id, id, None, &[])
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.shared.state)
    }

    /// Brings the index up to date and returns each root's tree; of the roots `pin`
    /// names when it is given (a restore's, `roots.rs`), else of the session's.
    pub(crate) fn sync_locked(
        &self,
        state: &mut State,
        pin: Option<&[PathBuf]>,
    ) -> Result<Vec<(PathBuf, ContentHash)>, HistoryError> {
        if let Some(why) = &state.disabled {
            return Err(HistoryError::Disabled(why.clone()));
        }
        let hashes = self.shared.sync(state, pin, &[]).map_err(|e| {
            if matches!(e, ScanError::TooMany(_)) {
                state.disabled = Some(e.to_string());
            }
            HistoryError::from(e)
        })?;
        Ok(state
            .roots
            .iter()
            .map(|r| r.path.clone())
            .zip(hashes)
            .collect())
    }

    /// Whether a checkpoint is taken before `call`: every call that may change files
    /// (a kind that is not read-only, or a tool that says it writes, as `save_memory`).
    pub fn covers(call: &CheckpointCall) -> bool {
        call.changes_files
    }
}

impl Shared {
    pub(crate) fn state_mut(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Brings every root's index up to date (the roots `pin` names, else those the
    /// session covers now); returns their trees' hashes. `named`, when not empty, are
    /// the only paths that changed since the last sync (a call of an edit tool): without
    /// a watcher they alone are looked at instead of a walk.
    fn sync(
        &self,
        state: &mut State,
        pin: Option<&[PathBuf]>,
        named: &[PathBuf],
    ) -> Result<Vec<ContentHash>, ScanError> {
        let cfg = &self.config;
        let wanted = pin.map_or_else(|| self.wanted_roots(), <[PathBuf]>::to_vec);
        let moved = self.place_roots(state, &wanted);
        let now_ns = i64::try_from(now_ms())
            .unwrap_or(i64::MAX)
            .saturating_mul(1_000_000);
        // A first walk is parallel unless the tree is known to be small (a walker's
        // threads cost more than a small tree's whole walk).
        let first_parallel = !state.ready && !self.seed_and_watch(state);
        let changes = match (&mut state.watcher, state.ready) {
            (Some(w), true) => Some(w.drain()),
            (None, true) if !moved && !named.is_empty() => named_changes(&state.roots, named),
            _ => None,
        };
        let whole = moved
            || match &changes {
                None => true,
                Some(c) => c.rescan,
            };
        if whole && let Some(w) = &mut state.watcher {
            w.forget_all();
        }
        let State {
            roots,
            watcher,
            recent,
            ready,
            ..
        } = state;
        let watching = watcher.is_some();
        let exclude = self.excluded(roots);
        let mut scan = Scan {
            objects: &self.store.objects,
            roots: &cfg.roots,
            settings: &cfg.settings,
            exclude: &exclude,
            size_cap: cfg.size_cap,
            max_files: cfg.max_files,
            now_ns,
            recent,
            written: Vec::new(),
            unreadable: Vec::new(),
            withheld: 0,
            watcher: watcher.as_mut(),
            parallel: first_parallel || (*ready && holds_at_least(roots, PARALLEL_FROM)),
        };
        let mut hashes = Vec::with_capacity(roots.len());
        let mut revisited = 0;
        for (i, root) in roots.iter_mut().enumerate() {
            if whole {
                revisited += usize::from(scan.whole_root(i, root)?);
            } else if let Some(c) = &changes {
                let of_root = |set: &std::collections::BTreeSet<(usize, Vec<u8>)>| {
                    set.iter()
                        .filter(|(r, _)| *r == i)
                        .map(|(_, p)| p.clone())
                        .collect()
                };
                let (dirs, files) = (of_root(&c.dirs), of_root(&c.files));
                scan.changes(i, &root.path.clone(), &mut root.tree, dirs, files)?;
                // The watcher said everything that changed; an edit tool's paths are not
                // everything that may have.
                if watching {
                    root.since_ns = Some(now_ns);
                }
            }
            hashes.push(root.tree.write(scan.objects, &mut scan.written)?);
        }
        let (written, unreadable, withheld) = (scan.written, scan.unreadable, scan.withheld);
        unwatch_small(state, cfg.watch_min_files);
        state.ready = true;
        // A revisit lists only what changed: the withheld count of the last walk stays.
        let walked = whole && revisited < state.roots.len();
        if walked || !unreadable.is_empty() {
            state.left_out.unreadable = unreadable.into_iter().take(NAMED).collect();
            if walked {
                state.left_out.withheld = withheld;
            }
        }
        self.syncer.submit(written);
        Ok(hashes)
    }

    /// Before the first picture: the project's last one (`index_file.rs`), and a watcher
    /// only for a workspace of at least `HistoryConfig::watch_min_files` entries, as that
    /// picture says, or where there is none a count of the roots' first entries
    /// (`roots_hold_at_least`: it stops at the threshold, so a large tree costs a few
    /// directory reads). Returns whether the tree is known to hold fewer than
    /// [`PARALLEL_FROM`] entries, so the first walk can be sequential.
    fn seed_and_watch(&self, state: &mut State) -> bool {
        self.seed(state);
        let cfg = &self.config;
        let min = cfg.watch_min_files;
        let seeded = state.roots.iter().any(|r| !r.tree.children.is_empty());
        let (large, small) = if seeded {
            let large = holds_at_least(&state.roots, min);
            (large, !holds_at_least(&state.roots, PARALLEL_FROM))
        } else {
            let large = roots_hold_at_least(state.roots.iter().map(|r| r.path.as_path()), min);
            (large, !large && min <= PARALLEL_FROM)
        };
        state.watcher = if cfg.watch && large {
            Watcher::new()
        } else {
            None
        };
        small
    }

    /// What the trees leave out, recounted when they changed.
    fn left_out(&self, state: &mut State, trees: &[ContentHash]) -> LeftOut {
        if state.left_out_of != trees {
            let mut names = Vec::new();
            let mut count = 0;
            for root in &state.roots {
                count_omitted(&root.tree, b"", &mut names, &mut count);
            }
            state.left_out.oversized = names;
            state.left_out.oversized_count = count;
            state.left_out.size_cap = self.config.size_cap;
            state.left_out_of = trees.to_vec();
        }
        state.left_out.clone()
    }

    /// Syncs and writes a record.
    pub(crate) fn checkpoint(
        &self,
        phase: Phase,
        tool: &str,
        call_id: &str,
        id: Option<String>,
        pin: Option<&[PathBuf]>,
        named: &[PathBuf],
    ) -> Result<Record, HistoryError> {
        let mut state = lock(&self.state);
        if let Some(why) = &state.disabled {
            return Err(HistoryError::Disabled(why.clone()));
        }
        let hashes = match self.sync(&mut state, pin, named) {
            Ok(h) => h,
            Err(e) => {
                if matches!(e, ScanError::TooMany(_)) {
                    state.disabled = Some(e.to_string());
                }
                return Err(e.into());
            }
        };
        let left_out = self.left_out(&mut state, &hashes);
        // A session (one that asked for a watcher, whether or not it kept one) writes its
        // index file at quiet times; a process without one may end right after this
        // call (a one-shot `tools call`).
        let watching = self.config.watch;
        let index = if watching {
            None
        } else {
            self.index_bytes(&state, &hashes)
        };
        let roots = state
            .roots
            .iter()
            .zip(&hashes)
            .map(|(r, h)| RootTree {
                path: r.path.clone(),
                tree: h.to_hex(),
            })
            .collect();
        drop(state);
        let turn = lock(&self.turns).marks.last().cloned();
        let record = Record {
            version: 1,
            id: id.unwrap_or_else(record::new_id),
            phase,
            time_ms: self.store.record_time(now_ms()),
            session: self.config.session.clone(),
            call_id: call_id.to_string(),
            tool: tool.to_string(),
            turn: turn.as_ref().map_or(0, |t| t.number),
            turn_id: turn.as_ref().map(|t| t.id.clone()),
            prompt: turn.map(|t| first_line(&t.prompt)).unwrap_or_default(),
            roots,
            left_out,
        };
        let path = self.store.write_record(&record)?;
        self.syncer.submit(vec![path]);
        if let Some(bytes) = index {
            self.save_index(&bytes, &hashes);
        } else if watching {
            lock(&self.state).index_due = Some(hashes.clone());
        }
        Ok(record)
    }
}

/// The index entries to look at again for `named` paths: a file the index has, else
/// the nearest directory it has on the way (listed again, and what is new beneath it
/// walked). `None` (walk everything) when a path lies in no root or names a root.
fn named_changes(roots: &[RootIndex], named: &[PathBuf]) -> Option<crate::watch::Changes> {
    use std::os::unix::ffi::OsStrExt;
    let mut changes = crate::watch::Changes::default();
    for path in named {
        let (i, root) = roots
            .iter()
            .enumerate()
            .find(|(_, r)| path.starts_with(&r.path))?;
        let rel = path.strip_prefix(&root.path).ok()?.as_os_str().as_bytes();
        if rel.is_empty() {
            return None;
        }
        if matches!(root.tree.get(rel), Some(crate::index::Node::Leaf(_))) {
            changes.files.insert((i, rel.to_vec()));
            continue;
        }
        let mut dir = crate::index::split_last(rel).0;
        while !dir.is_empty() && root.tree.dir(dir).is_none() {
            dir = crate::index::split_last(dir).0;
        }
        changes.dirs.insert((i, dir.to_vec()));
    }
    Some(changes)
}

/// The first line of a prompt, at most 100 characters.
fn first_line(prompt: &str) -> String {
    let line = prompt.trim().lines().next().unwrap_or("");
    let mut out: String = line.chars().take(100).collect();
    if line.chars().count() > 100 {
        out.push('…');
    }
    out
}

/// Counts the left-out files below `dir`, naming the first [`NAMED`].
/// At the first picture (the state not ready yet): a tree smaller than `min_files`
/// gives its watcher up (see [`HistoryConfig::watch_min_files`]), closed off the call
/// path, since the close may wait for the kernel's grace period.
fn unwatch_small(state: &mut State, min_files: usize) {
    if !state.ready
        && state.watcher.is_some()
        && !holds_at_least(&state.roots, min_files)
        && let Some(w) = state.watcher.take()
    {
        let _ = std::thread::Builder::new()
            .name("toolbelt-history-unwatch".into())
            .spawn(move || drop(w));
    }
}

/// Whether the folders `roots` hold at least `n` entries below them, counted by reading
/// folders breadth first (no rule applied, no link followed: ignored folders count,
/// which errs toward watching) and stopping at `n`.
fn roots_hold_at_least<'a>(roots: impl Iterator<Item = &'a std::path::Path>, n: usize) -> bool {
    let mut left = n;
    let mut queue: std::collections::VecDeque<PathBuf> = roots.map(PathBuf::from).collect();
    while let Some(dir) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if left == 0 {
                return true;
            }
            left -= 1;
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                queue.push_back(entry.path());
            }
        }
    }
    left == 0
}

/// Whether the roots' trees hold at least `n` entries (files and directories).
fn holds_at_least(roots: &[RootIndex], n: usize) -> bool {
    fn count(dir: &DirNode, left: &mut usize) -> bool {
        for node in dir.children.values() {
            if *left == 0 {
                return true;
            }
            *left -= 1;
            if let Node::Dir(d) = node
                && count(d, left)
            {
                return true;
            }
        }
        *left == 0
    }
    let mut left = n;
    n == 0 || roots.iter().any(|r| count(&r.tree, &mut left))
}

fn count_omitted(dir: &DirNode, prefix: &[u8], names: &mut Vec<String>, count: &mut usize) {
    for (name, node) in &dir.children {
        match node {
            Node::Leaf(leaf) if leaf.kind == EntryKind::Omitted => {
                *count += 1;
                if names.len() < NAMED {
                    let path = join(prefix, name);
                    names.push(crate::scan::rel_path(&path).display().to_string());
                }
            }
            Node::Leaf(_) => {}
            Node::Dir(d) => count_omitted(d, &join(prefix, name), names, count),
        }
    }
}

/// Runs a checkpoint's file-system work. On a multi-thread runtime it runs in place
/// (`block_in_place`: the runtime gives this worker's other tasks to another thread), so
/// the call does not wait for a blocking-pool thread to wake, which on the project's
/// machine takes 50-150 µs, twice for every call a checkpoint covers (issue 49);
/// elsewhere (a current-thread runtime, where that would panic) on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let multi = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi {
        Ok(tokio::task::block_in_place(work))
    } else {
        tokio::task::spawn_blocking(work)
            .await
            .map_err(|e| e.to_string())
    }
}

impl Checkpoints for History {
    fn before_call<'a>(
        &'a self,
        call: &'a CheckpointCall,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(async move {
            if !History::covers(call) {
                return Ok(());
            }
            let shared = self.shared.clone();
            let (tool, call_id) = (call.tool.clone(), call.call_id.clone());
            let taken = blocking(move || {
                let record = shared.checkpoint(Phase::Before, &tool, &call_id, None, None, &[])?;
                lock(&shared.state).calls.insert(call_id, record.id.clone());
                Ok::<_, HistoryError>(())
            })
            .await;
            match taken {
                Ok(result) => result.map_err(|e| CheckpointError::Recorder(Box::new(e))),
                Err(e) => Err(CheckpointError::Interrupted(e)),
            }
        })
    }

    fn after_call<'a>(&'a self, call: &'a CheckpointCall) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if !History::covers(call) {
                return;
            }
            let shared = self.shared.clone();
            let (tool, call_id) = (call.tool.clone(), call.call_id.clone());
            // An edit tool changed only the files it names: without a watcher those are
            // looked at again, not the whole workspace.
            let named = if call.only_paths {
                call.paths.clone()
            } else {
                Vec::new()
            };
            let _ = blocking(move || {
                let id = lock(&shared.state).calls.remove(&call_id);
                // Without its "before", the call's result is still what toolbelt saw.
                if let Err(e) = shared.checkpoint(Phase::After, &tool, &call_id, id, None, &named) {
                    tracing::debug!("checkpoint after {call_id}: {e}");
                }
            })
            .await;
        })
    }

    fn begin_turn(&self, turn: TurnStart) {
        let mut turns = lock(&self.shared.turns);
        turns.count += 1;
        let number = turns.count;
        let id = turns
            .next_id
            .take()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        turns.marks.push(TurnMark {
            number,
            id,
            history_len: turn.history_len,
            prompt: turn.prompt,
            started_ms: now_ms(),
        });
    }
}
