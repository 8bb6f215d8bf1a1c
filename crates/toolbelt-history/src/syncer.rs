//! Making the store durable off the call path.
//!
//! Every file of the store is written to a temporary name and renamed into place, so a
//! process killed at any moment (kill -9 included) leaves each file absent or whole:
//! the kernel keeps what was written. Surviving a power cut also needs `fsync`, which
//! costs about 3 ms per file on this project's machines, and more: each one commits the
//! file system's journal, so a sync running beside a call makes that call's own writes
//! (`write_file`'s `fsync`, a new file's `open`) wait for the commit. A short session's
//! checkpoints synced as they came took about 100 ms of disk time beside its calls
//! (issue 49). So the files go to this thread, which holds them until the store has been
//! quiet for [`QUIET`] (no checkpoint written), then syncs them in the order they were
//! written (objects before the record that names them), then their directories, all in
//! one go. [`Syncer::flush`] syncs what is held at once and waits for it (a restore).
//!
//! What a power cut in the second or so before the sync can do: lose the last
//! checkpoints' records, or leave one naming an object whose bytes did not reach the
//! disk. Reading checks every object against its name, so that checkpoint is reported
//! damaged; it is never restored wrong. A process that exits before the quiet period
//! ends leaves its last files to the kernel's own write-back, as a kill does.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long no checkpoint must be written before the held files are synced: longer than
/// the pause between the calls of a busy turn, short against the file system's own
/// journal interval (5 s on ext4).
const QUIET: Duration = Duration::from_millis(1000);
/// The longest a file is held while checkpoints keep coming.
const MOST: Duration = Duration::from_secs(5);

enum Job {
    Files(Vec<PathBuf>),
    Flush(mpsc::Sender<()>),
}

/// The background syncer of one store; its thread starts with the first files (a
/// session that changes nothing has none).
pub(crate) struct Syncer {
    tx: OnceLock<Option<mpsc::Sender<Job>>>,
    /// Sync passes its thread ran (for the tests).
    passes: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    quiet_hook: QuietHook,
}

type QuietHook = std::sync::Arc<OnceLock<Box<dyn Fn() + Send + Sync>>>;

impl Syncer {
    pub(crate) fn start() -> Self {
        Syncer {
            tx: OnceLock::new(),
            passes: Default::default(),
            quiet_hook: Default::default(),
        }
    }

    /// The thread's channel, starting it; `None` where no thread could be started.
    fn thread(&self) -> Option<&mpsc::Sender<Job>> {
        self.tx
            .get_or_init(|| {
                let (tx, rx) = mpsc::channel::<Job>();
                let spawned = std::thread::Builder::new()
                    .name("toolbelt-history-sync".into())
                    .spawn({
                        let (passes, hook) = (self.passes.clone(), self.quiet_hook.clone());
                        move || run(&rx, &passes, &hook)
                    });
                spawned.ok().map(|_| tx)
            })
            .as_ref()
    }

    /// Syncs `files` (then their directories) in the background, in this order, once
    /// the store is quiet; where no thread could be started, now.
    pub(crate) fn submit(&self, files: Vec<PathBuf>) {
        if files.is_empty() {
            return;
        }
        match self.thread() {
            Some(tx) => {
                if let Err(mpsc::SendError(Job::Files(files))) = tx.send(Job::Files(files)) {
                    sync_files(&files);
                }
            }
            None => sync_files(&files),
        }
    }

    /// Runs `hook` on the thread after each sync pass (the store is quiet then): a
    /// session with a watcher writes its index file there, off the call path.
    pub(crate) fn at_quiet(&self, hook: Box<dyn Fn() + Send + Sync>) {
        let _ = self.quiet_hook.set(hook);
    }

    /// Syncs everything submitted so far now, and waits for it.
    pub(crate) fn flush(&self) {
        if let Some(Some(tx)) = self.tx.get() {
            let (done_tx, done_rx) = mpsc::channel();
            if tx.send(Job::Flush(done_tx)).is_ok() {
                let _ = done_rx.recv();
            }
        }
    }
}

/// The thread: collects files until [`QUIET`] passes without a new one ([`MOST`] after
/// the first, or a flush), then syncs them all. At the store's end it leaves what it
/// holds to the kernel.
fn run(rx: &mpsc::Receiver<Job>, passes: &std::sync::atomic::AtomicUsize, hook: &QuietHook) {
    let sync_files = |files: &[PathBuf]| {
        if !files.is_empty() {
            passes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        sync_files(files);
        if let Some(hook) = hook.get() {
            hook();
        }
    };
    let mut held: Vec<PathBuf> = Vec::new();
    let mut since = Instant::now();
    loop {
        let job = if held.is_empty() {
            rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
        } else {
            rx.recv_timeout(QUIET.min(MOST.saturating_sub(since.elapsed())))
        };
        match job {
            Ok(Job::Files(files)) => {
                if held.is_empty() {
                    since = Instant::now();
                }
                held.extend(files);
            }
            Ok(Job::Flush(done)) => {
                sync_files(&std::mem::take(&mut held));
                let _ = done.send(());
            }
            Err(RecvTimeoutError::Timeout) => sync_files(&std::mem::take(&mut held)),
            // The store's end: usually the process's. What is held is left to the kernel's
            // own write-back, as a process ending before the quiet period leaves it (see
            // the module documentation): syncing here only raced the process's exit,
            // which then waited for the `fsync` under way (issue 49).
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Syncs each file's data once, then each directory once, in the order the files came:
/// the objects' pack and folders before the folder of the record that names them.
pub(crate) fn sync_files(files: &[PathBuf]) {
    if files.is_empty() {
        return;
    }
    let mut seen = HashSet::new();
    let mut synced = HashSet::new();
    let mut dirs = Vec::new();
    for path in files {
        // A pack is named once per object appended to it.
        if !synced.insert(path) {
            continue;
        }
        if let Ok(f) = std::fs::File::open(path) {
            let _ = f.sync_data();
        }
        if let Some(dir) = path.parent()
            && seen.insert(dir.to_path_buf())
        {
            dirs.push(dir.to_path_buf());
        }
    }
    for dir in dirs {
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn the_store_ending_before_it_is_quiet_syncs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("object");
        std::fs::write(&path, b"x").unwrap();
        let (tx, rx) = mpsc::channel::<Job>();
        let passes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let thread = std::thread::spawn({
            let passes = passes.clone();
            move || run(&rx, &passes, &QuietHook::default())
        });
        tx.send(Job::Files(vec![path])).unwrap();
        drop(tx);
        thread.join().unwrap();
        assert_eq!(
            passes.load(Ordering::SeqCst),
            0,
            "the end of the store (the process's, usually) waited for a sync"
        );
    }

    #[test]
    fn checkpoints_in_quick_succession_are_synced_in_one_pass_at_flush() {
        let dir = tempfile::tempdir().unwrap();
        let syncer = Syncer::start();
        syncer.flush(); // nothing submitted: no thread, nothing synced
        assert!(
            syncer.tx.get().is_none(),
            "a syncer with no files started its thread"
        );
        let mut all = Vec::new();
        for i in 0..3 {
            let path = dir.path().join(format!("object-{i}"));
            std::fs::write(&path, b"x").unwrap();
            all.push(path.clone());
            syncer.submit(vec![path]);
        }
        assert_eq!(
            syncer.passes.load(Ordering::SeqCst),
            0,
            "synced before the store was quiet"
        );
        syncer.flush();
        assert_eq!(
            syncer.passes.load(Ordering::SeqCst),
            1,
            "three checkpoints, one sync pass"
        );
        syncer.flush();
        assert_eq!(
            syncer.passes.load(Ordering::SeqCst),
            1,
            "a flush with nothing held syncs nothing"
        );
    }
}
