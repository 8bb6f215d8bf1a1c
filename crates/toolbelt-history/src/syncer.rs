//! Making the store durable off the call path.
//!
//! Every file of the store is written to a temporary name and renamed into place, so a
//! process killed at any moment (kill -9 included) leaves each file absent or whole:
//! the kernel keeps what was written. Surviving a power cut also needs `fsync`, which
//! costs about 3 ms per file on this project's machines: a checkpoint writes a few
//! files, and syncing them on the call path would take the time a checkpoint is
//! allowed. So the files of each checkpoint go to this thread, which syncs them in the
//! order they were written (objects before the record that names them), then their
//! directories. [`Syncer::flush`] waits for it (the end of a session, a restore).
//!
//! What a power cut in the few milliseconds before the sync can do: lose the last
//! checkpoint's record, or leave it naming an object whose bytes did not reach the
//! disk. Reading checks every object against its name, so that checkpoint is reported
//! damaged; it is never restored wrong.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::mpsc;

enum Job {
    Files(Vec<PathBuf>),
    Flush(mpsc::Sender<()>),
}

/// The background syncer of one store.
pub(crate) struct Syncer {
    tx: Option<mpsc::Sender<Job>>,
}

impl Syncer {
    pub(crate) fn start() -> Self {
        let (tx, rx) = mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("toolbelt-history-sync".into())
            .spawn(move || {
                for job in rx {
                    match job {
                        Job::Files(files) => sync_files(&files),
                        Job::Flush(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            });
        Syncer {
            tx: spawned.ok().map(|_| tx),
        }
    }

    /// Syncs `files` (then their directories) in the background, in this order; where
    /// no thread could be started, now.
    pub(crate) fn submit(&self, files: Vec<PathBuf>) {
        if files.is_empty() {
            return;
        }
        match &self.tx {
            Some(tx) => {
                if let Err(mpsc::SendError(Job::Files(files))) = tx.send(Job::Files(files)) {
                    sync_files(&files);
                }
            }
            None => sync_files(&files),
        }
    }

    /// Waits until everything submitted so far is synced.
    pub(crate) fn flush(&self) {
        if let Some(tx) = &self.tx {
            let (done_tx, done_rx) = mpsc::channel();
            if tx.send(Job::Flush(done_tx)).is_ok() {
                let _ = done_rx.recv();
            }
        }
    }
}

/// Syncs each file's data, then each directory once, in the order the files came: the
/// objects' folders before the folder of the record that names them.
fn sync_files(files: &[PathBuf]) {
    let mut seen = HashSet::new();
    let mut dirs = Vec::new();
    for path in files {
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
